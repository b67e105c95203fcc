// core/fileio: the one atomic write and the one whole-file read every layer without Qt uses.
// What a user would notice: a save either happened whole or not at all, leaves no litter, and a
// failure says which file and why.

#include "core/error.h"
#include "core/fileio.h"

#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <thread>

using namespace edgetrain::core;
namespace fs = std::filesystem;

namespace {

/** The names in a folder, sorted. */
QStringList namesIn(const fs::path &dir)
{
    QStringList names;
    for (const auto &entry : fs::directory_iterator(dir))
        names << QString::fromStdString(entry.path().filename().string());
    names.sort();
    return names;
}

/** Runs fn, expects an IoError (a core::Error) whose message contains every fragment. */
template <typename Fn> void expectIoError(Fn fn, std::initializer_list<std::string> fragments)
{
    try {
        fn();
    } catch (const IoError &e) {
        const Error &asError = e; // the project's error type: one catch at every boundary
        for (const std::string &f : fragments)
            QVERIFY2(std::string(asError.what()).find(f) != std::string::npos,
                     qPrintable(QStringLiteral("'%1' lacks '%2'")
                                    .arg(QString::fromUtf8(e.what()), QString::fromStdString(f))));
        return;
    } catch (const std::exception &e) {
        QFAIL(qPrintable(QStringLiteral("not an IoError: %1").arg(QString::fromUtf8(e.what()))));
    }
    QFAIL("no exception");
}

} // namespace

class TestFileIo : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundTrip_data();
    void roundTrip();
    void piecesAreConcatenated();
    void replacesAnExistingFile();
    void missingFolderNamesThePath();
    void failedReplaceLeavesNoTemporaryFile();
    void concurrentSavesOfOnePathStayWhole();
    void readMissingFile();
    void readFolderFails();
};

void TestFileIo::roundTrip_data()
{
    QTest::addColumn<QByteArray>("bytes");
    QTest::newRow("empty") << QByteArray();
    QTest::newRow("text") << QByteArray("{\"format\": \"edgetrain-truth-1\"}\n");
    QTest::newRow("binary with NULs") << QByteArray("\0\x01\xff\0tail", 8);
    // Larger than readFile's buffer, so the read loop runs more than once.
    QByteArray large(300 * 1024 + 7, '\0');
    for (int i = 0; i < large.size(); ++i)
        large[i] = char((i * 131) % 251);
    QTest::newRow("300 KiB") << large;
}

void TestFileIo::roundTrip()
{
    QFETCH(QByteArray, bytes);
    QTemporaryDir dir;
    const fs::path path = fs::path(dir.path().toStdString()) / "file.bin";
    writeFileAtomically(path, std::string_view(bytes.constData(), std::size_t(bytes.size())));
    const std::string back = readFile(path);
    QCOMPARE(QByteArray(back.data(), qsizetype(back.size())), bytes);
    QCOMPARE(namesIn(path.parent_path()), QStringList{QStringLiteral("file.bin")});
}

void TestFileIo::piecesAreConcatenated()
{
    QTemporaryDir dir;
    const fs::path path = fs::path(dir.path().toStdString()) / "weights.safetensors";
    const std::string_view pieces[] = {"header", "", "-data-", "tail"};
    writeFileAtomically(path, pieces);
    QCOMPARE(readFile(path), std::string("header-data-tail"));
}

void TestFileIo::replacesAnExistingFile()
{
    QTemporaryDir dir;
    const fs::path path = fs::path(dir.path().toStdString()) / "labels.json";
    writeFileAtomically(path, "a much longer first version of the file");
    writeFileAtomically(path, "second");
    QCOMPARE(readFile(path), std::string("second"));
    QCOMPARE(namesIn(path.parent_path()), QStringList{QStringLiteral("labels.json")});
}

void TestFileIo::missingFolderNamesThePath()
{
    QTemporaryDir dir;
    const fs::path path = fs::path(dir.path().toStdString()) / "no-such-folder" / "truth.json";
    expectIoError([&] { writeFileAtomically(path, "x"); },
                  {"cannot write", path.string(), "No such file or directory"});
    QVERIFY(namesIn(dir.path().toStdString()).isEmpty());
}

void TestFileIo::failedReplaceLeavesNoTemporaryFile()
{
    // A folder (with a file in it) where the file should go: the temporary file is written,
    // the rename over the folder fails, and the temporary file must not stay behind.
    QTemporaryDir dir;
    const fs::path root = dir.path().toStdString();
    fs::create_directory(root / "report.json");
    writeFileAtomically(root / "report.json" / "inside", "keep");
    expectIoError([&] { writeFileAtomically(root / "report.json", "new"); },
                  {"cannot replace", (root / "report.json").string()});
    QCOMPARE(namesIn(root), QStringList{QStringLiteral("report.json")});
    QCOMPARE(readFile(root / "report.json" / "inside"), std::string("keep"));
}

void TestFileIo::concurrentSavesOfOnePathStayWhole()
{
    // The labeller's checkpoints and the window's saves of an edit may write one file at once;
    // with a shared temporary name one save would rename the other's half-written file.
    QTemporaryDir dir;
    const fs::path path = fs::path(dir.path().toStdString()) / "labels.json";
    const std::string a(64 * 1024, 'a'), b(32 * 1024, 'b');
    auto save = [&](const std::string &text) {
        for (int i = 0; i < 40; ++i)
            writeFileAtomically(path, text);
    };
    std::thread first(save, a), second(save, b);
    first.join();
    second.join();
    const std::string back = readFile(path);
    QVERIFY(back == a || back == b);
    QCOMPARE(namesIn(path.parent_path()), QStringList{QStringLiteral("labels.json")});
}

void TestFileIo::readMissingFile()
{
    QTemporaryDir dir;
    const fs::path path = fs::path(dir.path().toStdString()) / "missing.json";
    expectIoError([&] { readFile(path); },
                  {"cannot read", path.string(), "No such file or directory"});
    std::error_code error;
    QCOMPARE(readFile(path, error), std::string());
    QVERIFY(error == std::errc::no_such_file_or_directory);
}

void TestFileIo::readFolderFails()
{
    QTemporaryDir dir;
    expectIoError([&] { readFile(dir.path().toStdString()); },
                  {"cannot read", dir.path().toStdString(), "Is a directory"});
}

QTEST_APPLESS_MAIN(TestFileIo)
#include "tst_fileio.moc"

// The demo's material (resources/demo.json): the shipped file gives the demo it always had, and a
// broken one is refused with the file and the field named.

#include "app/gui/demomaterial.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>

using namespace edgetrain;

namespace {

const QString kShipped = QStringLiteral(EDGETRAIN_SOURCE_DIR "/resources/demo.json");

QByteArray shippedText()
{
    QFile f(kShipped);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TstDemoMaterial : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void shippedFileIsTheDemo();
    void brokenFile_data();
    void brokenFile();
    void missingFile();
};

void TstDemoMaterial::shippedFileIsTheDemo()
{
    QString error;
    const auto m = gui::DemoMaterial::read(kShipped, QStringLiteral(EDGETRAIN_SOURCE_DIR), &error);
    QVERIFY2(m, qPrintable(error));
    // The values the demo was written with (and its README and evidence describe).
    QCOMPARE(m->video, QStringLiteral("/usr/share/doc/opencv-doc/examples/data/vtest.avi"));
    QCOMPARE(m->videoPackage, QStringLiteral("opencv-doc"));
    QCOMPARE(m->teacher, QStringLiteral("hog+motion"));
    QCOMPARE(m->tracker, QStringLiteral("kcf"));
    QCOMPARE(m->every, 2);
    QCOMPARE(m->labelledFrames, 480);
    QCOMPARE(m->datasetKind, QStringLiteral("frames"));
    QCOMPARE(m->frameWidth, 256);
    QCOMPARE(m->frameEvery, 2);
    QCOMPARE(m->model, QStringLiteral("detector"));
    QCOMPARE(m->epochs, 40);
    QCOMPARE(m->batch, 12);
    QCOMPARE(m->lr, 0.02);
    QCOMPARE(m->truthFile, QStringLiteral(EDGETRAIN_SOURCE_DIR "/tests/data/vtest/gt.txt"));
    QVERIFY(QFileInfo::exists(m->truthFile));
    QVERIFY(
        QFileInfo::exists(QFileInfo(m->truthFile).dir().filePath(QStringLiteral("frames.txt"))));
}

void TstDemoMaterial::brokenFile_data()
{
    // Each row edits the shipped file: the text to replace, its replacement, the message.
    QTest::addColumn<QByteArray>("before");
    QTest::addColumn<QByteArray>("after");
    QTest::addColumn<QString>("message");
    QTest::newRow("not JSON") << QByteArray("\"kcf\",") << QByteArray("\"kcf\",,")
                              << "not a JSON object";
    QTest::newRow("missing teacher") << QByteArray("\"teacher\": \"hog+motion\",") << QByteArray()
                                     << "missing field \"capture.teacher\"";
    QTest::newRow("epochs as text")
        << QByteArray("\"epochs\": 40") << QByteArray("\"epochs\": \"40\"")
        << "field \"plan.epochs\" must be an integer";
    QTest::newRow("every not whole") << QByteArray("\"every\": 2") << QByteArray("\"every\": 2.5")
                                     << "field \"capture.every\" must be an integer";
    QTest::newRow("misspelt field") << QByteArray("\"tracker\": \"kcf\",")
                                    << QByteArray("\"tracker\": \"kcf\", \"trackr\": \"csrt\",")
                                    << "unknown field \"capture.trackr\"";
    QTest::newRow("plan not an object")
        << QByteArray("\"plan\": {") << QByteArray("\"plan\": 3, \"x\": {")
        << "field \"plan\" must be an object";
}

void TstDemoMaterial::brokenFile()
{
    QFETCH(QByteArray, before);
    QFETCH(QByteArray, after);
    QFETCH(QString, message);
    QByteArray text = shippedText();
    QVERIFY(text.contains(before));
    text.replace(before, after);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("demo.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly) && f.write(text) == text.size());
    f.close();
    QString error;
    QVERIFY(!gui::DemoMaterial::read(path, dir.path(), &error));
    QVERIFY2(error.startsWith(path + QStringLiteral(": ")), qPrintable(error));
    QVERIFY2(error.contains(message), qPrintable(error));
}

void TstDemoMaterial::missingFile()
{
    QString error;
    QVERIFY(!gui::DemoMaterial::read(QStringLiteral("/nonexistent/demo.json"), QStringLiteral("/"),
                                     &error));
    QVERIFY2(error.contains(QLatin1String("'/nonexistent/demo.json'")), qPrintable(error));
}

QTEST_GUILESS_MAIN(TstDemoMaterial)
#include "tst_demomaterial.moc"

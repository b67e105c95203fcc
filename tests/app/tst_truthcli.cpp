// `edgetrain-cli truth import|export` as a user runs it on a tiny session: a video the test
// writes, a labels.json written by hand, annotations in and out, bad files refused with the
// file, line and field, and truth.json untouched by a refused import.

#include "../support/clirun.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/videoio.hpp>

namespace {

using Run = edgetrain::tests::CliRun;

Run cli(const QStringList &args)
{
    return edgetrain::tests::runCli(args, 60000);
}

void writeFile(const QString &path, const QByteArray &content)
{
    QFile f(path);
    QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
    f.write(content);
}

QByteArray readFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestTruthCli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_video = m_dir.filePath("tiny.avi");
        cv::VideoWriter writer(m_video.toStdString(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'),
                               25.0, cv::Size(160, 120));
        QVERIFY(writer.isOpened());
        for (int f = 0; f < 10; ++f)
            writer.write(cv::Mat(120, 160, CV_8UC3, cv::Scalar(20 * f, 100, 50)));
        writer.release();
        m_session = m_dir.filePath("session");
        QDir().mkpath(m_session);
        writeFile(m_session + "/labels.json",
                  R"({"format": "edgetrain-labels-1", "source": ")" + m_video.toUtf8() +
                      R"(", "teacher": "hog", "tracker": "kcf", "every": 10,
 "frame_width": 160, "frame_height": 120, "fps": 25, "frames": 10, "seconds": 1,
 "cancelled": false, "cuts": [],
 "tracks": [{"id": 3, "state": "accepted", "boxes": [[2, 10, 20, 30, 60, "teacher", 0.9],
                                                     [3, 12, 20, 30, 60, "tracker", 0.5]]},
            {"id": 4, "state": "rejected", "boxes": [[2, 90, 20, 30, 60, "teacher", 0.4]]}]}
)");
        // frames 3 and 6 (1-based), one ignore box (conf 0)
        writeFile(m_dir.filePath("gt.txt"), "3,1,11,21,30.5,60,1,1,1\n"
                                            "3,2,101,11,20,40,0,1,1\n"
                                            "6,5,51,41,25,50,1,1,0.8\n");
    }

    void importThenExportThenImportAgain()
    {
        const Run in = cli({"truth", "import", "--session", m_session, "--format", "mot", "--file",
                            m_dir.filePath("gt.txt"), "--json"});
        QVERIFY2(in.status == 0, qPrintable(in.err));
        QCOMPARE(in.json.value("frames").toInt(), 2);
        QCOMPARE(in.json.value("boxes").toInt(), 3);
        QCOMPARE(in.json.value("ignore_boxes").toInt(), 1);
        QCOMPARE(in.json.value("done_frames").toInt(), 2);
        QVERIFY(in.err.contains("imported 2 frames, 3 boxes (1 ignore)"));
        const QJsonObject truth =
            QJsonDocument::fromJson(readFile(m_session + "/truth.json")).object();
        QCOMPARE(truth.value("frame_width").toInt(), 160);
        QCOMPARE(truth.value("frames").toArray().size(), 2);
        QCOMPARE(truth.value("frames").toArray()[0].toObject().value("index").toInt(), 2);

        for (const QString format : {"coco", "cvat", "mot"}) {
            const QString out = m_dir.filePath("export." + format);
            const Run ex = cli({"truth", "export", "--session", m_session, "--format", format,
                                "--out", out, "--json"});
            QVERIFY2(ex.status == 0, qPrintable(ex.err));
            QCOMPARE(ex.json.value("boxes").toInt(), 3);
            // into a second session, against the same video: the same frames come back
            const QString other = m_dir.filePath("again-" + format);
            const Run back = cli({"truth", "import", "--session", other, "--format", format,
                                  "--file", out, "--source", m_video});
            QVERIFY2(back.status == 0, qPrintable(back.err));
            const QJsonObject again =
                QJsonDocument::fromJson(readFile(other + "/truth.json")).object();
            QCOMPARE(again.value("frames"), truth.value("frames"));
        }

        // YOLO cannot say "ignore": the export says what it left out.
        const Run yolo = cli({"truth", "export", "--session", m_session, "--format", "yolo",
                              "--out", m_dir.filePath("yolo-truth")});
        QCOMPARE(yolo.status, 0);
        QVERIFY2(yolo.err.contains("YOLO has no ignore boxes: 1 left out"), qPrintable(yolo.err));
    }

    void exportLabels()
    {
        const QString out = m_dir.filePath("yolo-labels");
        const Run r = cli({"truth", "export", "--session", m_session, "--format", "yolo", "--out",
                           out, "--what", "labels", "--json"});
        QVERIFY2(r.status == 0, qPrintable(r.err));
        QCOMPARE(r.json.value("frames").toInt(), 10);
        QCOMPARE(r.json.value("boxes").toInt(), 2);            // the rejected track is not exported
        QCOMPARE(QDir(out).entryList(QDir::Files).size(), 11); // + classes.txt
        QCOMPARE(readFile(out + "/classes.txt"), QByteArray("person\n"));
        // track 3 at frame 2: (10, 20, 30, 60) in a 160x120 frame
        QCOMPARE(readFile(out + "/frame_000002.txt"),
                 QByteArray("0 0.15625 0.416667 0.1875 0.5\n"));
        QVERIFY(readFile(out + "/frame_000000.txt").isEmpty());
    }

    void badFileLeavesTruthAlone()
    {
        const QByteArray before = readFile(m_session + "/truth.json");
        QVERIFY(!before.isEmpty());
        writeFile(m_dir.filePath("bad.txt"), "4,1,11,21,30,60,1,1,1\n4,2,x,11,20,40,1,1,1\n");
        const Run r = cli({"truth", "import", "--session", m_session, "--format", "mot", "--file",
                           m_dir.filePath("bad.txt")});
        QCOMPARE(r.status, 1);
        QVERIFY2(r.err.contains("bad.txt:2: column 3 (bb_left): 'x' is not a number"),
                 qPrintable(r.err));
        QCOMPARE(readFile(m_session + "/truth.json"), before);

        writeFile(m_dir.filePath("late.txt"), "11,1,11,21,30,60,1,1,1\n");
        const Run late = cli({"truth", "import", "--session", m_session, "--format", "mot",
                              "--file", m_dir.filePath("late.txt")});
        QCOMPARE(late.status, 1);
        QVERIFY2(late.err.contains("frame 11 is not in the video (1..10)"), qPrintable(late.err));
        QCOMPARE(readFile(m_session + "/truth.json"), before);
    }

    void usageErrors_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("message");
        QTest::newRow("no action") << QStringList{"truth"} << "expected import or export";
        QTest::newRow("unknown action")
            << QStringList{"truth", "merge"} << "unknown action 'merge'";
        QTest::newRow("unknown format")
            << QStringList{"truth", "import", "--session", "s", "--format", "voc", "--file", "f"}
            << "mot, coco, cvat, yolo";
        QTest::newRow("no file") << QStringList{"truth", "import",   "--session",
                                                "s",     "--format", "mot"}
                                 << "--file is required";
        QTest::newRow("no out") << QStringList{"truth", "export",   "--session",
                                               "s",     "--format", "mot"}
                                << "--out is required";
    }

    void usageErrors()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, message);
        const Run r = cli(args);
        QCOMPARE(r.status, 2);
        QVERIFY2(r.err.contains(message), qPrintable(r.err));
    }

private:
    QTemporaryDir m_dir;
    QString m_video;
    QString m_session;
};

QTEST_GUILESS_MAIN(TestTruthCli)
#include "tst_truthcli.moc"

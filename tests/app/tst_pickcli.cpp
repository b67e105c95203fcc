// `edgetrain-cli pick` as a user runs it on a small session: a video the test writes (a block
// crossing a still background), a labels.json written by hand, one verified frame, and an
// untrained student (what runs per frame is the same work as a trained one's). Both picks keep
// the verified frame and --write adds the new ones to truth.json, named by the pick.

#include "../support/clirun.h"
#include "core/model.h"
#include "vision/framestudent.h"
#include "vision/framestudenttrainer.h"
#include "vision/groundtruth.h"
#include "vision/studentteacher.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

namespace {

using Run = edgetrain::tests::CliRun;
constexpr int kFrames = 40;

Run cli(const QStringList &args)
{
    return edgetrain::tests::runCli(args, 120000);
}

void writeFile(const QString &path, const QByteArray &content)
{
    QFile f(path);
    QVERIFY2(f.open(QIODevice::WriteOnly), qPrintable(path));
    f.write(content);
}

} // namespace

class TestPickCli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_video = m_dir.filePath("walk.avi");
        cv::VideoWriter writer(m_video.toStdString(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'),
                               10.0, cv::Size(320, 240));
        QVERIFY(writer.isOpened());
        for (int f = 0; f < kFrames; ++f) {
            cv::Mat image(240, 320, CV_8UC3, cv::Scalar(90, 110, 100));
            cv::rectangle(image, cv::Rect(10 + 6 * f, 60, 30, 90), cv::Scalar(30, 40, 200),
                          cv::FILLED);
            writer.write(image);
        }
        writer.release();
        m_session = m_dir.filePath("session");
        QDir().mkpath(m_session);
        writeFile(m_session + "/labels.json",
                  R"({"format": "edgetrain-labels-1", "source": ")" + m_video.toUtf8() +
                      R"(", "teacher": "hog", "tracker": "kcf", "every": 10,
 "frame_width": 320, "frame_height": 240, "fps": 10, "frames": 30, "seconds": 1,
 "cancelled": false, "cuts": [],
 "tracks": [{"id": 3, "state": "accepted", "boxes": [[20, 130, 60, 30, 90, "teacher", 0.9],
                                                     [21, 136, 60, 30, 90, "tracker", 0.5]]}]}
)");
        edgetrain::core::Model model(
            edgetrain::vision::FrameStudentTrainer::spec(cv::Size(256, 192)), 3);
        edgetrain::vision::FrameStudent::saveModel(
            model, edgetrain::vision::StudentTeacher::weightsPath(m_session.toStdString()), 0.5f);
    }

    void init()
    {
        edgetrain::vision::GroundTruth truth;
        truth.source = m_video.toStdString();
        truth.frame_size = {320, 240};
        truth.ensureFrame(10).done = true;
        truth.save(m_session.toStdString());
    }

    void picks_data()
    {
        QTest::addColumn<QString>("by");
        QTest::newRow("spread") << "spread";
        QTest::newRow("disagreement") << "disagreement";
    }

    void picks()
    {
        QFETCH(QString, by);
        const Run r =
            cli({"pick", "--session", m_session, "--by", by, "--count", "5", "--write", "--json"});
        QVERIFY2(r.status == 0, qPrintable(r.err));
        QCOMPARE(r.json.value("by").toString(), by);
        const QJsonArray frames = r.json.value("frames").toArray();
        QCOMPARE(frames.size(), 5);
        QCOMPARE(r.json.value("written").toInt(), 4);
        int kept = 0;
        for (const auto &v : frames) {
            const QJsonObject f = v.toObject();
            kept += f.value("kept").toBool();
            if (f.value("frame").toInt() == 10)
                QVERIFY(f.value("kept").toBool());
            // Every candidate was scored: teacher, motion, student, and the tracker before 30.
            if (by == QLatin1String("disagreement"))
                QCOMPARE(f.value("sources").toInt(), f.value("frame").toInt() < 30 ? 4 : 3);
        }
        QCOMPARE(kept, 1);
        if (by == QLatin1String("disagreement"))
            QCOMPARE(r.json.value("candidates").toInt(), kFrames);

        const auto truth = edgetrain::vision::GroundTruth::load(m_session.toStdString());
        QCOMPARE(int(truth.frames.size()), 5);
        QCOMPARE(truth.doneFrames(), 1);
        for (const auto &f : truth.frames)
            QCOMPARE(QString::fromStdString(f.pick), f.index == 10 ? QString() : by);
    }

    void refusals()
    {
        const Run bad = cli({"pick", "--session", m_session, "--by", "random"});
        QCOMPARE(bad.status, 2);
        QVERIFY2(bad.err.contains("spread or disagreement"), qPrintable(bad.err));
        // Without a student there is nothing to disagree with the teacher.
        const QString bare = m_dir.filePath("bare");
        QDir().mkpath(bare);
        QFile::copy(m_session + "/labels.json", bare + "/labels.json");
        const Run none = cli({"pick", "--session", bare, "--by", "disagreement"});
        QCOMPARE(none.status, 1);
        QVERIFY2(none.err.contains("detector.safetensors"), qPrintable(none.err));
        QVERIFY(!QFile::exists(bare + "/truth.json"));
    }

private:
    QTemporaryDir m_dir;
    QString m_video, m_session;
};

QTEST_GUILESS_MAIN(TestPickCli)
#include "tst_pickcli.moc"

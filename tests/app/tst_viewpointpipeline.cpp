// One viewpoint pipeline behind both front ends: `edgetrain-cli viewpoint` and the window's
// workflow (the headless demo's path: label, dataset, train on the nodes, evaluate) give the same
// verified figures for the same settings and seed, and `viewpoint --discover` trains the detector
// on local edgetrain-node processes and reports it.

#include "../net/nodeprocess.h"
#include "../support/clirun.h"
#include "app/session/verifiedframes.h"
#include "app/session/workflow.h"
#include "vision/framesource.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

using namespace edgetrain;

namespace {

const QString kVideo = QStringLiteral("/usr/share/doc/opencv-doc/examples/data/vtest.avi");
const QString kTruth = QStringLiteral(EDGETRAIN_SOURCE_DIR "/tests/data/vtest/gt.txt");
const QString kFrames = QStringLiteral(EDGETRAIN_SOURCE_DIR "/tests/data/vtest/frames.txt");

// Small settings: the labels cover frames 0-159; 20 of the 24 verified frames lie after them.
constexpr int kEvery = 5, kMaxFrames = 160, kWidth = 128, kSampleEvery = 4, kAugment = 1;
constexpr int kEpochs = 6, kBatch = 12, kSeed = 3;

/** The CLI's flags for those settings. */
QStringList viewpointArgs(const QString &out)
{
    return {"viewpoint",
            "--source",
            kVideo,
            "--teacher",
            "hog+motion",
            "--tracker",
            "kcf",
            "--every",
            QString::number(kEvery),
            "--max-frames",
            QString::number(kMaxFrames),
            "--width",
            QString::number(kWidth),
            "--sample-every",
            QString::number(kSampleEvery),
            "--augment",
            QString::number(kAugment),
            "--epochs",
            QString::number(kEpochs),
            "--batch",
            QString::number(kBatch),
            "--lr",
            "0.02",
            "--seed",
            QString::number(kSeed),
            "--truth",
            kTruth,
            "--truth-frames",
            kFrames,
            "--out",
            out,
            "--threads",
            "2",
            "--json"};
}

bool near(double a, double b)
{
    return std::abs(a - b) <= 1e-6;
}

} // namespace

class TstViewpointPipeline : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cliMatchesWindow();
    void trainsOnDiscoveredNodes();

private:
    /** Runs one workflow step and waits for its end; false with the reason otherwise. */
    bool step(app::Workflow &w, app::Task task, const std::function<void()> &start,
              QString *message, int timeout_ms = 300000);

    QTemporaryDir m_dir;
    QString m_key;
    std::vector<std::unique_ptr<NodeProcess>> m_nodes;
};

void TstViewpointPipeline::initTestCase()
{
    if (!QFile::exists(kVideo))
        QFAIL("opencv-doc is missing: scripts/install-deps.sh installs it");
    QVERIFY(m_dir.isValid());
    m_key = m_dir.filePath(QStringLiteral("cluster.key"));
    QFile key(m_key);
    QVERIFY(key.open(QIODevice::WriteOnly));
    key.write("viewpoint pipeline test key 0123456789\n");
    key.close();
    QVERIFY(key.setPermissions(QFile::ReadOwner | QFile::WriteOwner));
    for (int i = 1; i <= 3; ++i) {
        m_nodes.push_back(std::make_unique<NodeProcess>(QStringLiteral("vp-node-%1").arg(i), m_key,
                                                        QStringList{"--threads", "1"}));
        QVERIFY2(m_nodes.back()->waitReady(), qPrintable(m_nodes.back()->log()));
    }
}

bool TstViewpointPipeline::step(app::Workflow &w, app::Task task,
                                const std::function<void()> &start, QString *message,
                                int timeout_ms)
{
    QSignalSpy finished(&w, &app::Workflow::taskFinished);
    start();
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < timeout_ms) {
        for (const QList<QVariant> &args : std::as_const(finished))
            if (args.at(0).value<app::Task>() == task) {
                *message = args.at(2).toString();
                return args.at(1).toBool();
            }
        finished.wait(200);
    }
    *message = QStringLiteral("%1 did not end in time").arg(app::taskName(task));
    return false;
}

void TstViewpointPipeline::cliMatchesWindow()
{
    // One node: with several, the coordinator rebalances the batch by the nodes' measured speeds,
    // so two runs on the same nodes need not train on the same shares.
    const NodeProcess &node = *m_nodes.front();
    const QString address = QStringLiteral("127.0.0.1:%1").arg(node.port);

    const QString cliSession = m_dir.filePath(QStringLiteral("cli"));
    const auto cli = tests::runCli(viewpointArgs(cliSession) +
                                   QStringList{"--nodes", address, "--key-file", m_key});
    QVERIFY2(cli.status == 0, qPrintable(cli.err));

    // The window's path, as the headless demo drives it: a session with the same settings and
    // the same verified frames in truth.json, the node paired, then label, dataset, train (the
    // workflow evaluates a finished run by itself).
    app::Workflow w;
    QString error;
    const QString dir = m_dir.filePath(QStringLiteral("window"));
    QVERIFY2(w.newSession(dir, &error), qPrintable(error));
    app::CaptureSettings capture;
    capture.source = kVideo;
    capture.teacher = QStringLiteral("hog+motion");
    capture.tracker = QStringLiteral("kcf");
    capture.every = kEvery;
    capture.maxFrames = kMaxFrames;
    QVERIFY2(w.setCapture(capture, &error), qPrintable(error));
    app::DatasetSettings dataset = w.session().dataset;
    dataset.kind = QStringLiteral("frames");
    dataset.frameWidth = kWidth;
    dataset.frameEvery = kSampleEvery;
    dataset.frameAugment = kAugment;
    dataset.seed = kSeed;
    QVERIFY2(w.setDatasetSettings(dataset, &error), qPrintable(error));
    app::PlanSettings plan = w.session().plan;
    plan.model = QStringLiteral("detector");
    plan.epochs = kEpochs;
    plan.batch = kBatch;
    plan.lr = 0.02;
    plan.mode = QStringLiteral("sync");
    QVERIFY2(w.setPlanSettings(plan, &error), qPrintable(error));
    {
        auto source = vision::FrameSource::open(kVideo.toStdString());
        vision::GroundTruth truth =
            app::readVerifiedTruth(kTruth.toStdString(), kFrames.toStdString(), *source);
        truth.source = kVideo.toStdString();
        truth.save(dir.toStdString());
    }
    QVERIFY2(w.verification()->open(dir, &error), qPrintable(error));
    QVERIFY2(w.nodes().setKeyFile(m_key, &error), qPrintable(error));
    QVERIFY2(w.nodes().addNode(address, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            w.nodes().pairAll();
            return w.nodes().pairedNodes().size() == 1;
        }(),
        20000);

    QString message;
    QVERIFY2(step(
                 w, app::Task::Labelling, [&] { w.startLabelling(); }, &message),
             qPrintable(message));
    QVERIFY2(step(
                 w, app::Task::Dataset, [&] { w.startDataset(); }, &message),
             qPrintable(message));
    QSignalSpy evaluated(&w, &app::Workflow::evaluationChanged);
    QVERIFY2(step(
                 w, app::Task::Training, [&] { w.startTraining(); }, &message),
             qPrintable(message));
    QVERIFY2(step(
                 w, app::Task::Evaluation, [] {}, &message),
             qPrintable(message));

    // The same labels, the same operating point, the same figures on the verified frames the
    // student never saw.
    QCOMPARE(w.labels()->stats.tracks, cli.json.value(QLatin1String("tracks")).toInt(-1));
    QCOMPARE(w.labels()->stats.teacher_boxes,
             cli.json.value(QLatin1String("teacher_boxes")).toInt(-1));
    const app::EvaluationRecord &e = w.session().evaluation;
    QVERIFY(e.operatingPoint);
    QVERIFY2(near(e.operatingPoint->threshold,
                  cli.json.value(QLatin1String("student_threshold")).toDouble(-1)),
             qPrintable(QStringLiteral("window %1, CLI %2")
                            .arg(e.operatingPoint->threshold)
                            .arg(cli.json.value(QLatin1String("student_threshold")).toDouble())));
    QVERIFY(!e.verified.empty());
    const app::VerifiedRound &v = e.verified.back();
    QCOMPARE(v.first_frame, kMaxFrames);
    const QJsonObject heldOut = cli.json.value(QLatin1String("verified")).toObject();
    QCOMPARE(v.frames, heldOut.value(QLatin1String("frames")).toInt(-1));
    QCOMPARE(int(v.scores.size()), 3);
    for (const vision::DetectorScore &s : v.scores) {
        const QJsonObject c = heldOut.value(QString::fromStdString(s.name)).toObject();
        QVERIFY2(!c.isEmpty(), s.name.c_str());
        const QString says =
            QStringLiteral("%1: window recall %2 precision %3 AP50 %4; CLI %5")
                .arg(QString::fromStdString(s.name))
                .arg(s.recall)
                .arg(s.precision)
                .arg(s.ap50)
                .arg(QString::fromUtf8(QJsonDocument(c).toJson(QJsonDocument::Compact)));
        QCOMPARE(s.truths, c.value(QLatin1String("truths")).toInt(-1));
        QVERIFY2(s.detections == c.value(QLatin1String("detections")).toInt(-1), qPrintable(says));
        QVERIFY2(near(s.recall, c.value(QLatin1String("recall")).toDouble(-1)), qPrintable(says));
        QVERIFY2(near(s.precision, c.value(QLatin1String("precision")).toDouble(-1)),
                 qPrintable(says));
        QVERIFY2(near(s.ap50, c.value(QLatin1String("ap50")).toDouble(-1)), qPrintable(says));
        QVERIFY2(near(s.threshold, c.value(QLatin1String("threshold")).toDouble(-1)),
                 qPrintable(says));
        qInfo("%s", qPrintable(says));
    }
    // Not two empty answers: the student trained finds people on the frames it never saw.
    QVERIFY2(v.scores.back().true_positives > 0, "the student found nobody");
}

void TstViewpointPipeline::trainsOnDiscoveredNodes()
{
    QStringList probes;
    for (const auto &n : m_nodes)
        probes << QStringLiteral("127.0.0.1:%1").arg(n->discoveryPort);
    const QString session = m_dir.filePath(QStringLiteral("discovered"));
    QStringList args = viewpointArgs(session);
    args[args.indexOf(QStringLiteral("--epochs")) + 1] = QStringLiteral("3");
    const auto r = tests::runCli(
        args + QStringList{"--discover", "3", "--probe", probes.join(u','), "--key-file", m_key});
    QVERIFY2(r.status == 0, qPrintable(r.err));
    QVERIFY2(r.err.contains(QLatin1String("training the detector on 3 node(s), mode sync")),
             qPrintable(r.err));
    const QJsonArray rounds = r.json.value(QLatin1String("rounds")).toArray();
    QCOMPARE(rounds.size(), 1);
    const QJsonObject round = rounds[0].toObject();
    QCOMPARE(round.value(QLatin1String("nodes")).toInt(), 3);
    QCOMPARE(round.value(QLatin1String("mode")).toString(), QStringLiteral("sync"));
    QCOMPARE(round.value(QLatin1String("epochs_trained")).toInt(), 3);
    QVERIFY(round.value(QLatin1String("train_loss")).toDouble() > 0);
    // The nodes' weights came back, were calibrated and scored like a local run's.
    QVERIFY(QFile::exists(session + QStringLiteral("/detector-round1.safetensors")));
    QVERIFY(QFile::exists(r.json.value(QLatin1String("student_weights")).toString()));
    QVERIFY(r.json.value(QLatin1String("operating_point")).isObject());
    const QJsonObject student = r.json.value(QLatin1String("verified"))
                                    .toObject()
                                    .value(QLatin1String("student"))
                                    .toObject();
    QVERIFY(student.value(QLatin1String("truths")).toInt() > 0);
    QVERIFY(student.contains(QLatin1String("recall")));
    QFile report(session + QStringLiteral("/report.json"));
    QVERIFY(report.open(QIODevice::ReadOnly));
    QCOMPARE(QJsonDocument::fromJson(report.readAll()).object().value(QLatin1String("rounds")),
             r.json.value(QLatin1String("rounds")));
}

QTEST_GUILESS_MAIN(TstViewpointPipeline)
#include "tst_viewpointpipeline.moc"

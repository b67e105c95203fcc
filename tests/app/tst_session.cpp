// The session folder: what is saved comes back; a damaged manifest is refused with a message that
// says where, and never half-read; a dataset build or a self-training pass killed part way
// reopens as one state of the folder.
#include "app/session/labeltask.h"
#include "app/session/session.h"
#include "app/session/workflow.h"
#include "vision/framedataset.h"
#include "vision/framesource.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <map>
#include <tuple>

using namespace edgetrain;

namespace {

/** An empty session in root/session holding `labels`, opened in `workflow`; the folder, or ""
 *  with `error` set. */
QString openWithLabels(const QTemporaryDir &root, vision::LabelResult labels,
                       app::Workflow &workflow, QString *error)
{
    const QString dir = root.filePath(QStringLiteral("session"));
    app::Session s;
    s.dir = dir;
    if (!s.save(error))
        return {};
    labels.frame_size = cv::Size(320, 240);
    labels.updateStats();
    labels.save(dir.toStdString());
    return workflow.openSession(dir, error) ? dir : QString();
}

} // namespace

class TstSession : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundTrip();
    void runningBecomesStopped();
    void cutShortSaveReadsAsOneSave();
    void olderSessionReadsWithDefaults();
    void damagedManifest_data();
    void damagedManifest();
    void failedLabelSaveIsSaid();
    void stoppedLabellingKeepsItsLabels();
    void trimToNothingIsRefused();
    void killedDatasetOrSelfTrainingReopensAsOneState_data();
    void killedDatasetOrSelfTrainingReopensAsOneState();
};

void TstSession::roundTrip()
{
    QTemporaryDir dir;
    app::Session s;
    s.dir = dir.path();
    s.title = QStringLiteral("Loading bay, camera 2");
    s.keyFile = QStringLiteral("/etc/edgetrain/cluster.key");
    s.probes = {QStringLiteral("192.0.2.7:45454")};
    s.nodes.push_back({QStringLiteral("pi-1"), QStringLiteral("192.0.2.7"), 47700, true,
                       QStringLiteral("aarch64"), QStringLiteral("Cortex-A72"), 4, 4LL << 30});
    s.capture.source = QStringLiteral("/data/bay.mp4");
    s.capture.teacher =
        QStringLiteral("cascade:/usr/share/opencv4/haarcascades/haarcascade_fullbody.xml");
    s.capture.every = 5;
    s.dataset.width = 32;
    s.dataset.height = 64;
    s.datasetStats = vision::CropStats{{10, 2, 3}, {20, 4, 6}, {5, 1, 1}, {}};
    s.plan.mode = QStringLiteral("local-sgd");
    s.plan.localSteps = 12;
    s.plan.budgetAllBytes = 300LL << 20;
    s.plan.deviceBudgetBytes[QStringLiteral("pi-1")] = 200LL << 20;
    s.plan.nodes = {QStringLiteral("pi-1")};
    s.plan.clusterObjective = QStringLiteral("energy");
    s.training.state = app::TrainingRecord::State::Finished;
    app::ClusterPlanRecord plan;
    plan.objective = QStringLiteral("energy");
    plan.profilingSeconds = 3.5;
    plan.candidates.push_back({{QStringLiteral("pi-1")},
                               QStringLiteral("sync"),
                               12.5,
                               3.25,
                               40.625,
                               507.8125,
                               QString()});
    plan.candidates.push_back({{QStringLiteral("pi-1"), QStringLiteral("pi-2")},
                               QStringLiteral("sync"),
                               8.0,
                               6.5,
                               52.0,
                               416.0,
                               QStringLiteral("pi-2 cannot hold one sample"),
                               false});
    plan.chosen = 0;
    plan.measuredSeconds = 13.25;
    plan.measuredJoules = 43.0;
    s.training.plan = plan;
    net::ClusterEpoch e;
    e.epoch = 1;
    e.train_loss = 0.25;
    e.test_accuracy = 0.9;
    e.shares = {1.0};
    s.training.epochs.push_back(e);
    s.training.events.push_back(
        {2.5, net::NodeId{QStringLiteral("pi-1"), QStringLiteral("192.0.2.7"), 47700},
         net::ClusterEventKind::Lost, QStringLiteral("stopped answering")});
    s.training.events.push_back(
        {3.0, net::NodeId{QStringLiteral("pi-2"), QStringLiteral("fe80::1"), 47701},
         net::ClusterEventKind::CollectiveFailed, QStringLiteral("timed out")});
    s.training.events.push_back(
        {4.0, net::NodeId(), net::ClusterEventKind::Regrouped, QStringLiteral("group 1")});
    app::MetricRow m;
    m.seconds = 1.5;
    m.node = QStringLiteral("pi-1");
    m.cpuPercent = 97;
    m.phase = QStringLiteral("training");
    m.epoch = 1;
    m.loss = 0.5;
    s.training.metrics.push_back(m);
    // A name CSV must quote: a comma, a quote and a line break.
    m.node = QStringLiteral("lab, \"bench\"\nPi 4");
    m.cpuPercent = 12.5;
    m.powerWatts = 3.25; // estimated from its profile
    m.energyJoules = 41.5;
    s.training.metrics.push_back(m);
    s.training.progress.push_back({0.75, QStringLiteral("pi-1"), 1, 17, 0.625, 0.5, 88.5});
    s.training.progress.push_back(
        {1.25, QStringLiteral("lab, \"bench\"\nPi 4"), 2, 34, 0.25, 0.75, 90.0});
    s.training.weights = QStringLiteral("student.safetensors");
    s.training.keptEpoch = 7;
    s.training.averageDecay = 0.99;
    s.evaluation.done = true;
    s.evaluation.frames = 12;
    s.evaluation.result.tracker_only_boxes = 9;
    s.evaluation.result.student_recall_tracker_only = 0.5;
    s.evaluation.result.gains.push_back({42, cv::Rect2d(1, 2, 30, 60), cv::Rect2d(2, 3, 29, 58)});
    s.dataset.frameWidth = 320;
    vision::FrameDatasetStats fs;
    fs.input = cv::Size(320, 240);
    fs.every = 4;
    fs.frames[0] = 100;
    fs.frames[1] = 20;
    fs.samples[0] = 306;
    fs.objects[0] = 812;
    fs.ignores[1] = 3;
    fs.backgrounds = 6;
    fs.seconds = 12.25;
    fs.round = 2;
    s.frameStats = fs;
    s.round = 2;
    for (int round = 1; round <= 2; ++round) {
        app::VerifiedRound v;
        v.round = round;
        v.frames = 13;
        v.first_frame = 480;
        for (const char *name : {"teacher", "motion", "student"}) {
            vision::DetectorScore sc;
            sc.name = name;
            sc.frames = 13;
            sc.truths = 82;
            sc.detections = 70 + round;
            sc.true_positives = 61;
            sc.false_positives = 9 + round;
            sc.recall = 61.0 / 82.0;
            sc.precision = 61.0 / (70.0 + round);
            sc.f1 = 0.1 * round;
            sc.ap50 = 0.7123456789;
            sc.ap50_95 = 0.31;
            sc.threshold = 0.3f;
            sc.curve = {{0.0121951, 1.0, 0.97f}, {0.5, 0.875, 0.41f}, {61.0 / 82.0, 0.8, 0.05f}};
            v.scores.push_back(sc);
        }
        s.evaluation.verified.push_back(v);
    }
    s.evaluation.student_fps = 61.5;
    s.evaluation.teacher_fps = 4.25;
    s.evaluation.motion_fps = 140.0;
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));

    const auto back = app::Session::open(dir.path(), &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(back->toJson(), s.toJson());
    QCOMPARE(back->nodes[0].ramBytes, 4LL << 30);
    QCOMPARE(back->training.keptEpoch, 7);
    QCOMPARE(back->training.averageDecay, 0.99);
    QCOMPARE(back->plan.budgetBytesFor(QStringLiteral("pi-1")), 200LL << 20);
    QCOMPARE(back->plan.budgetBytesFor(QStringLiteral("pi-2")), 300LL << 20);
    QCOMPARE(int(back->training.events.size()), 3);
    QCOMPARE(back->training.events[0].kind, net::ClusterEventKind::Lost);
    QCOMPARE(back->training.events[1].kind, net::ClusterEventKind::CollectiveFailed);
    QCOMPARE(back->training.events[2].kind, net::ClusterEventKind::Regrouped);
    QCOMPARE(back->training.events[0].node,
             (net::NodeId{QStringLiteral("pi-1"), QStringLiteral("192.0.2.7"), 47700}));
    QCOMPARE(back->training.events[1].node.address(), QStringLiteral("[fe80::1]:47701"));
    QVERIFY(back->training.events[2].node.isNone());
    QCOMPARE(int(back->training.metrics.size()), 2);
    QCOMPARE(back->training.metrics[0].cpuPercent, 97.0);
    QCOMPARE(back->training.metrics[1].node, QStringLiteral("lab, \"bench\"\nPi 4"));
    QCOMPARE(back->training.metrics[1].cpuPercent, 12.5);
    QCOMPARE(back->training.metrics[1].phase, QStringLiteral("training"));
    QCOMPARE(back->plan.clusterObjective, QStringLiteral("energy"));
    QVERIFY(back->training.plan.has_value());
    const app::ClusterPlanRecord &p = *back->training.plan;
    QCOMPARE(p.objective, QStringLiteral("energy"));
    QCOMPARE(p.profilingSeconds, 3.5);
    QCOMPARE(int(p.candidates.size()), 2);
    QCOMPARE(p.candidates[1].nodes, (QStringList{QStringLiteral("pi-1"), QStringLiteral("pi-2")}));
    QCOMPARE(p.candidates[0].joules, 40.625);
    QCOMPARE(p.candidates[0].edp, 507.8125);
    QCOMPARE(p.candidates[1].whyNot, QStringLiteral("pi-2 cannot hold one sample"));
    QVERIFY(p.candidates[0].powerKnown);
    QVERIFY(!p.candidates[1].powerKnown);
    QCOMPARE(p.chosen, 0);
    QCOMPARE(p.measuredSeconds, 13.25);
    QCOMPARE(p.measuredJoules, 43.0);
    QCOMPARE(back->training.metrics[0].powerWatts, -1.0); // reported none
    QCOMPARE(back->training.metrics[1].powerWatts, 3.25);
    QVERIFY(!back->training.metrics[1].powerMeasured);
    QCOMPARE(back->training.metrics[1].energyJoules, 41.5);
    QCOMPARE(int(back->training.progress.size()), 2);
    QCOMPARE(back->training.progress[0].step, std::int64_t(17));
    QCOMPARE(back->training.progress[0].loss, 0.625);
    QCOMPARE(back->training.progress[1].node, QStringLiteral("lab, \"bench\"\nPi 4"));
    QCOMPARE(back->training.progress[1].epoch, 2);
    QCOMPARE(back->training.progress[1].accuracy, 0.75);
    QCOMPARE(back->training.progress[1].imagesPerSecond, 90.0);
    QCOMPARE(back->evaluation.result.gains[0].frame, 42);
    QCOMPARE(back->evaluation.frames, 12);
    // The verified figures, curves and all, come back exactly (Qt's JSON is locale-free).
    QCOMPARE(back->dataset.kind, QStringLiteral("frames"));
    QCOMPARE(back->dataset.frameWidth, 320);
    QCOMPARE(back->plan.model, QStringLiteral("detector"));
    QVERIFY(back->frameStats);
    QCOMPARE(back->frameStats->input, cv::Size(320, 240));
    QCOMPARE(back->frameStats->objects[0], 812);
    QCOMPARE(back->round, 2);
    QCOMPARE(int(back->evaluation.verified.size()), 2);
    const app::VerifiedRound &v = back->evaluation.verified.back();
    QCOMPARE(v.round, 2);
    QCOMPARE(v.first_frame, 480);
    QCOMPARE(int(v.scores.size()), 3);
    QCOMPARE(v.scores[2].name, std::string("student"));
    QCOMPARE(v.score("motion")->false_positives, 11);
    QCOMPARE(v.scores[0].precision, 61.0 / 72.0);
    QCOMPARE(v.scores[1].ap50, 0.7123456789);
    QCOMPARE(v.scores[2].threshold, 0.3f);
    QCOMPARE(int(v.scores[2].curve.size()), 3);
    QCOMPARE(v.scores[2].curve[2].recall, 61.0 / 82.0);
    QCOMPARE(v.scores[2].curve[1].threshold, 0.41f);
    QCOMPARE(back->evaluation.teacher_fps, 4.25);
}

void TstSession::olderSessionReadsWithDefaults()
{
    // A session written before the full-frame student: crops, the crop student, no verified
    // figures, round 1.
    QTemporaryDir dir;
    QFile f(dir.filePath(QStringLiteral("session.json")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("{\"format\": \"edgetrain-session\", \"version\": 1, \"dataset\": {\"width\": 24, "
            "\"height\": 48, \"built\": {\"positives\": [1, 2, 3]}}, "
            "\"plan\": {\"budget_all\": 1048576, \"budgets\": {\"pi-1\": 2097152}}}");
    f.close();
    QString error;
    const auto s = app::Session::open(dir.path(), &error);
    QVERIFY2(s, qPrintable(error));
    QCOMPARE(s->dataset.kind, QStringLiteral("crops"));
    QCOMPARE(s->plan.model, QStringLiteral("student"));
    QVERIFY(s->hasDataset());
    QVERIFY(!s->frameStats);
    QVERIFY(s->evaluation.verified.empty());
    QCOMPARE(s->round, 1);
    // Budgets from before sizes said their unit in the field name.
    QCOMPARE(s->plan.budgetAllBytes, std::int64_t(1) << 20);
    QCOMPARE(s->plan.budgetBytesFor(QStringLiteral("pi-1")), std::int64_t(2) << 20);
    QCOMPARE(s->plan.budgetBytesFor(QStringLiteral("pi-2")), std::int64_t(1) << 20);
    // A new session builds frames for the detector.
    const app::Session fresh;
    QCOMPARE(fresh.dataset.kind, QStringLiteral("frames"));
    QCOMPARE(fresh.plan.model, QStringLiteral("detector"));
    QVERIFY(!fresh.hasDataset());
}

void TstSession::runningBecomesStopped()
{
    // A session saved while a run was going (then the app died) says the run was cut short.
    QTemporaryDir dir;
    app::Session s;
    s.dir = dir.path();
    s.training.state = app::TrainingRecord::State::Running;
    QString error;
    QVERIFY(s.save(&error));
    const auto back = app::Session::open(dir.path(), &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(back->training.state, app::TrainingRecord::State::Stopped);
}

// A save cut short between its files (the app killed): session.json decides which rows of the
// CSVs are its own, so the folder reads as one save. tst_crashsave kills a real process while it
// saves; this leaves the files as such a kill does, one case each.
void TstSession::cutShortSaveReadsAsOneSave()
{
    QTemporaryDir dir;
    app::Session s;
    s.dir = dir.path();
    s.training.state = app::TrainingRecord::State::Running;
    app::MetricRow m;
    m.node = QStringLiteral("pi-1");
    m.phase = QStringLiteral("training");
    s.training.metrics = {m, m};
    s.training.progress.push_back({0.5, QStringLiteral("pi-1"), 1, 10, 0.5, 0.25, 80.0});
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));
    const QJsonObject saved = app::Session::open(dir.path(), &error)->toJson();
    auto write = [&](const QString &file, const QByteArray &bytes) {
        return app::writeFileAtomically(s.path(file), bytes, &error);
    };

    // The next epoch's save wrote its CSVs, not session.json: the rows it added are left out.
    app::Session next = s;
    next.training.metrics.push_back(m);
    next.training.progress.push_back({1.0, QStringLiteral("pi-1"), 2, 20, 0.25, 0.5, 80.0});
    QVERIFY(write(QStringLiteral("metrics.csv"), next.metricsCsv()));
    QVERIFY(write(QStringLiteral("progress.csv"), next.progressCsv()));
    auto back = app::Session::open(dir.path(), &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(int(back->training.metrics.size()), 2);
    QCOMPARE(int(back->training.progress.size()), 1);
    QCOMPARE(back->toJson(), saved);

    // A session written before session.json counted the rows reads them all.
    QJsonObject older = saved;
    QJsonObject training = older.value(QStringLiteral("training")).toObject();
    training.remove(QStringLiteral("metrics_rows"));
    training.remove(QStringLiteral("progress_rows"));
    older.insert(QStringLiteral("training"), training);
    QVERIFY(write(QStringLiteral("session.json"), QJsonDocument(older).toJson()));
    back = app::Session::open(dir.path(), &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(int(back->training.metrics.size()), 3);
    QCOMPARE(int(back->training.progress.size()), 2);

    // A new run's first save wrote session.json, not its empty CSVs: the old run's rows are not
    // the new run's.
    app::Session fresh = s;
    fresh.training = app::TrainingRecord();
    fresh.training.state = app::TrainingRecord::State::Running;
    QVERIFY(write(QStringLiteral("session.json"), QJsonDocument(fresh.toJson()).toJson()));
    back = app::Session::open(dir.path(), &error);
    QVERIFY2(back, qPrintable(error));
    QVERIFY(back->training.metrics.empty());
    QVERIFY(back->training.progress.empty());
}

void TstSession::damagedManifest_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("expected");
    QTest::newRow("truncated") << QByteArray("{\"format\": \"edgetrain-session\", \"vers")
                               << QStringLiteral("at byte");
    QTest::newRow("not a session") << QByteArray("{\"format\": \"something-else\"}")
                                   << QStringLiteral("not an EdgeTrain session");
    QTest::newRow("future format")
        << QByteArray("{\"format\": \"edgetrain-session\", \"version\": 99}")
        << QStringLiteral("session format 99");
    QTest::newRow("bad mode") << QByteArray("{\"format\": \"edgetrain-session\", \"version\": 1, "
                                            "\"plan\": {\"mode\": \"turbo\"}}")
                              << QStringLiteral("field \"plan.mode\"");
    QTest::newRow("absurd batch")
        << QByteArray(
               "{\"format\": \"edgetrain-session\", \"version\": 1, \"plan\": {\"batch\": -3}}")
        << QStringLiteral("field \"plan.batch\" must be an integer from 1 to 1048576, got -3");
    QTest::newRow("wrong type") << QByteArray("{\"format\": \"edgetrain-session\", \"version\": 1, "
                                              "\"capture\": {\"every\": \"often\"}}")
                                << QStringLiteral("field \"capture.every\"");
    QTest::newRow("bad device budget")
        << QByteArray("{\"format\": \"edgetrain-session\", \"version\": 1, \"plan\": "
                      "{\"device_budget_bytes\": {\"pi-1\": \"lots\"}}}")
        << QStringLiteral("field \"plan.device_budget_bytes.pi-1\"");
    QTest::newRow("bad dataset kind")
        << QByteArray("{\"format\": \"edgetrain-session\", \"version\": 1, \"dataset\": {\"kind\": "
                      "\"tiles\"}}")
        << QStringLiteral("field \"dataset.kind\"");
    QTest::newRow("bad verified score")
        << QByteArray(
               "{\"format\": \"edgetrain-session\", \"version\": 1, \"verified_evaluation\": "
               "{\"rounds\": [{\"scores\": [{\"recall\": 2}]}]}}")
        << QStringLiteral("field \"verified_evaluation.rounds.scores.recall\"");
    QTest::newRow("bad cluster objective")
        << QByteArray("{\"format\": \"edgetrain-session\", \"version\": 1, \"plan\": "
                      "{\"cluster_objective\": \"speed\"}}")
        << QStringLiteral("field \"plan.cluster_objective\"");
    QTest::newRow("unknown state") << QByteArray("{\"format\": \"edgetrain-session\", \"version\": "
                                                 "1, \"training\": {\"state\": \"dancing\"}}")
                                   << QStringLiteral("field \"training.state\"");
    QTest::newRow("negative row count")
        << QByteArray("{\"format\": \"edgetrain-session\", \"version\": 1, \"training\": "
                      "{\"metrics_rows\": -2}}")
        << QStringLiteral("field \"training.metrics_rows\"");
}

void TstSession::damagedManifest()
{
    QFETCH(QByteArray, content);
    QFETCH(QString, expected);
    QTemporaryDir dir;
    QFile f(dir.path() + QStringLiteral("/session.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(content);
    f.close();
    QString error;
    QVERIFY(!app::Session::open(dir.path(), &error));
    QVERIFY2(error.contains(expected), qPrintable(error));
    QVERIFY2(error.contains(QLatin1String("session.json")), qPrintable(error)); // says which file
}

// A review edit is written to labels.json in the background; when that write fails, the user is
// told (through message(), the status bar) instead of finding the edit gone on reopening.
void TstSession::failedLabelSaveIsSaid()
{
    QTemporaryDir root;
    vision::LabelResult labels;
    labels.source = "walkers.avi";
    for (int id : {1, 2}) {
        vision::Track t;
        t.id = id;
        t.boxes.push_back(
            {10, cv::Rect2d(20.0 * id, 30, 24, 48), vision::BoxSource::Teacher, 0.9f});
        labels.tracks.push_back(t);
    }
    app::Workflow workflow;
    QString error;
    const QString dir = openWithLabels(root, labels, workflow, &error);
    QVERIFY2(!dir.isEmpty(), qPrintable(error));
    QVERIFY(workflow.labels());
    QSignalSpy messages(&workflow, &app::Workflow::message);

    // The edit reaches the disk, and nothing is said.
    workflow.setTrackAccepted(1, false);
    QTRY_COMPARE_WITH_TIMEOUT(vision::LabelResult::load(dir.toStdString()).tracks[0].state,
                              vision::Track::State::Rejected, 5000);
    QCOMPARE(messages.count(), 0);

    // The folder goes (a file takes its name): the next edit cannot be written, and says so.
    QVERIFY(QDir().rename(dir, dir + QStringLiteral(".moved")));
    QFile blocker(dir);
    QVERIFY(blocker.open(QIODevice::WriteOnly));
    blocker.close();
    workflow.setTrackAccepted(2, false);
    QTRY_COMPARE_WITH_TIMEOUT(messages.count(), 1, 5000);
    const QString text = messages.at(0).at(0).toString();
    QVERIFY2(text.contains(QLatin1String("could not be saved")) && text.contains(dir),
             qPrintable(text));
}

void TstSession::killedDatasetOrSelfTrainingReopensAsOneState_data()
{
    // Round 1 of a session: labels L1 (one track), frame dataset A built from them, session.json
    // S1 (round 1, A's figures). A self-training pass writes dataset B from labels L2 (L1 and a
    // student's track, round 2), moving A aside (DatasetFolder), then labels.json, then the
    // workflow saves S2 (round 2, B's figures). A plain rebuild from L1 writes dataset A2 in the
    // same way; the first build of a session (S0: no dataset yet) writes A. Each row is what a
    // kill at one of these steps leaves, and what must reopen.
    QTest::addColumn<QString>("manifest"); // S0, S1, S2
    QTest::addColumn<QString>("labels");   // L1, L2
    QTest::addColumn<QString>("frames");   // the folders frames, frames.old, frames.tmp
    QTest::addColumn<QString>("old");
    QTest::addColumn<QString>("staging");
    QTest::addColumn<int>("round"); // what reopens: the round, the labels, the dataset (or none)
    QTest::addColumn<QString>("reopenedLabels");
    QTest::addColumn<QString>("dataset");
    auto row = [](const char *name, const char *manifest, const char *labels, const char *frames,
                  const char *old, const char *staging, int round, const char *reopenedLabels,
                  const char *dataset) {
        QTest::newRow(name) << QString(manifest) << QString(labels) << QString(frames)
                            << QString(old) << QString(staging) << round << QString(reopenedLabels)
                            << QString(dataset);
    };
    // name; session.json, labels.json, frames, frames.old, frames.tmp; what reopens
    row("self-training: writing B", "S1", "L1", "A", "", "B", 1, "L1", "A");
    row("self-training: A moved aside", "S1", "L1", "", "A", "B", 1, "L1", "A");
    row("self-training: B moved in", "S1", "L1", "B", "A", "", 1, "L1", "");
    row("self-training: A deleted", "S1", "L1", "B", "", "", 1, "L1", "");
    row("self-training: labels.json written", "S1", "L2", "B", "", "", 2, "L2", "B");
    row("self-training: session.json written", "S2", "L2", "B", "", "", 2, "L2", "B");
    row("rebuild: A moved aside", "S1", "L1", "", "A", "A2", 1, "L1", "A");
    row("rebuild: A2 moved in", "S1", "L1", "A2", "A", "", 1, "L1", "A2");
    row("first build: A moved in", "S0", "L1", "A", "", "", 1, "L1", "A");
}

void TstSession::killedDatasetOrSelfTrainingReopensAsOneState()
{
    namespace fs = std::filesystem;
    QFETCH(QString, manifest);
    QFETCH(QString, labels);
    QFETCH(QString, frames);
    QFETCH(QString, old);
    QFETCH(QString, staging);
    QFETCH(int, round);
    QFETCH(QString, reopenedLabels);
    QFETCH(QString, dataset);
    QTemporaryDir root;
    // A source: a rectangle crossing 24 frames.
    const fs::path images = root.filePath(QStringLiteral("images")).toStdString();
    fs::create_directories(images);
    for (int f = 0; f < 24; ++f) {
        cv::Mat image(48, 64, CV_8UC3, cv::Scalar(90, 100, 110));
        cv::rectangle(image, cv::Rect(2 * f, 10, 8, 20), cv::Scalar(0, 0, 220), cv::FILLED);
        cv::imwrite((images / (std::to_string(100 + f) + ".png")).string(), image);
    }
    std::map<QString, vision::LabelResult> label;
    vision::LabelResult &l1 = label[QStringLiteral("L1")];
    l1.source = images.string();
    l1.frame_size = cv::Size(64, 48);
    vision::Track walker;
    walker.id = 1;
    for (int f = 0; f < 24; ++f)
        walker.boxes.push_back({f, cv::Rect2d(2 * f, 10, 8, 20), vision::BoxSource::Teacher, 1.0f});
    l1.tracks.push_back(walker);
    l1.updateStats();
    vision::LabelResult &l2 = label[QStringLiteral("L2")] = l1;
    vision::Track found;
    found.id = 2;
    for (int f = 0; f < 24; f += 2)
        found.boxes.push_back({f, cv::Rect2d(40, 30, 10, 12), vision::BoxSource::Student, 0.8f});
    l2.tracks.push_back(found);
    l2.updateStats();
    l2.round = 2;
    // The datasets, each built in a folder of its own.
    std::map<QString, vision::FrameDatasetStats> built;
    auto source = vision::FrameSource::open(images.string());
    for (const auto &[name, from, every] :
         {std::tuple{"A", "L1", 2}, std::tuple{"A2", "L1", 3}, std::tuple{"B", "L2", 2}}) {
        vision::FrameDatasetOptions o;
        o.width = 64;
        o.every = every;
        o.augmented = 1;
        built[QLatin1String(name)] =
            vision::FrameDataset::build(root.filePath(QLatin1String(name)).toStdString(),
                                        label.at(QLatin1String(from)), *source, o);
    }
    // The session folder a kill left.
    const QString dir = root.filePath(QStringLiteral("session"));
    app::Session s;
    s.dir = dir;
    if (manifest != QLatin1String("S0"))
        s.frameStats = built.at(manifest == QLatin1String("S1") ? "A" : "B");
    s.round = manifest == QLatin1String("S2") ? 2 : 1;
    s.training.state = app::TrainingRecord::State::Finished;
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));
    label.at(labels).save(dir.toStdString());
    for (const auto &[what, folder] : {std::pair{frames, "frames"}, std::pair{old, "frames.old"},
                                       std::pair{staging, "frames.tmp"}})
        if (!what.isEmpty())
            fs::copy(root.filePath(what + QStringLiteral("/frames")).toStdString(),
                     fs::path(dir.toStdString()) / folder, fs::copy_options::recursive);

    app::Workflow w;
    QSignalSpy messages(&w, &app::Workflow::message);
    QVERIFY2(w.openSession(dir, &error), qPrintable(error));
    const app::Session &back = w.session();
    QCOMPARE(back.round, round);
    QVERIFY(w.labels());
    QCOMPARE(int(w.labels()->tracks.size()), int(label.at(reopenedLabels).tracks.size()));
    QCOMPARE(w.labels()->round, round);
    QCOMPARE(back.hasDataset(), !dataset.isEmpty());
    bool said = false;
    for (const QList<QVariant> &m : messages)
        said = said || m.at(0).toString().contains(QLatin1String("self-training pass"));
    QCOMPARE(said, dataset.isEmpty()); // a dataset not counted is said
    if (dataset.isEmpty())
        return;
    // The figures shown are those of the dataset training reads.
    const vision::FrameDatasetStats &want = built.at(dataset);
    QCOMPARE(back.frameStats->samples[0], want.samples[0]);
    QCOMPARE(back.frameStats->objects[0], want.objects[0]);
    QCOMPARE(back.frameStats->every, want.every);
    QCOMPARE(back.frameStats->round, want.round);
    std::vector<vision::FrameSample> samples;
    QVERIFY_THROWS_NO_EXCEPTION(samples = vision::FrameDataset::index(dir.toStdString()));
    QCOMPARE(int(samples.size()), want.samples[0] + want.samples[1]);
}

void TstSession::stoppedLabellingKeepsItsLabels()
{
    // The window's labelling over a folder whose 13th image is not an image: the labels of the
    // first twelve frames are kept, in the outcome and on disk, and the reason is said.
    QTemporaryDir root;
    const QString images = root.filePath(QStringLiteral("images"));
    QVERIFY(QDir().mkpath(images));
    for (int f = 0; f < 20; ++f) {
        cv::Mat frame(160, 320, CV_8UC3, cv::Scalar(90, 100, 110));
        cv::rectangle(frame, cv::Rect(20 + 4 * f, 40, 30, 64), cv::Scalar(200, 40, 210),
                      cv::FILLED);
        const std::string name = images.toStdString() + "/frame" + std::to_string(100 + f) + ".png";
        if (f == 12)
            QVERIFY(QFile::copy(QStringLiteral(EDGETRAIN_SOURCE_DIR "/README.md"),
                                QString::fromStdString(name)));
        else
            QVERIFY(cv::imwrite(name, frame));
    }
    app::CaptureSettings capture;
    capture.source = images;
    capture.teacher = QStringLiteral("motion");
    capture.every = 1;
    const QString dir = root.filePath(QStringLiteral("session"));
    const app::LabelOutcome out =
        app::LabelTask(capture, dir).run([](int, int, const QString &) {}, nullptr);
    QVERIFY(out.labels);
    QCOMPARE(out.labels->stats.frames, 12);
    QVERIFY2(out.error.startsWith(QLatin1String("labelling stopped at frame 12: cannot read "
                                                "image")),
             qPrintable(out.error));
    const vision::LabelResult saved = vision::LabelResult::load(dir.toStdString());
    QCOMPARE(saved.stats.frames, 12);
    QCOMPARE(saved.stopped, out.labels->stopped);
    QVERIFY(app::LabelTask::summary(*out.labels).startsWith(QLatin1String("labelling stopped")));
}

void TstSession::trimToNothingIsRefused()
{
    QTemporaryDir root;
    vision::LabelResult labels;
    vision::Track t;
    t.id = 0;
    for (int f = 10; f < 20; ++f)
        t.boxes.push_back({f, cv::Rect2d(20, 30, 24, 48), vision::BoxSource::Tracker, 0.5f});
    labels.tracks.push_back(t);
    app::Workflow workflow;
    QString error;
    QVERIFY2(!openWithLabels(root, labels, workflow, &error).isEmpty(), qPrintable(error));
    workflow.trimTrack(0, 100, 200); // no box there: the track would be lost
    QCOMPARE(int(workflow.labels()->tracks.front().boxes.size()), 10);
    workflow.trimTrack(0, 12, 14);
    QCOMPARE(int(workflow.labels()->tracks.front().boxes.size()), 3);
}

QTEST_GUILESS_MAIN(TstSession)
#include "tst_session.moc"

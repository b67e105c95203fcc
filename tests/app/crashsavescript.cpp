#include "crashsavescript.h"

#include <QDir>

using namespace edgetrain;

namespace {

const QString kNodeNames[CrashSaveScript::kNodes] = {
    QStringLiteral("pi-bay-1"), QStringLiteral("pi-bay-2"), QStringLiteral("old laptop, \"desk\"")};

// Every figure is a multiple of 1/64, so it reads back from JSON and CSV exactly as written.
double sixtyFourths(int n)
{
    return double(n) / 64.0;
}

void startRun(app::Session &s, int step)
{
    // As Workflow::startTraining: a new record, the last evaluation cleared.
    s.training = app::TrainingRecord();
    s.training.state = app::TrainingRecord::State::Running;
    s.training.jobId = QStringLiteral("session-step-%1").arg(step);
    s.training.started = QDateTime(QDate(2024, 5, 1), QTime(9, 0), Qt::UTC).addSecs(step);
    s.training.averageDecay = 0.99;
    for (const QString &name : kNodeNames)
        s.training.nodes.append(name);
    s.evaluation.done = false;
    s.evaluation.operatingPoint.reset();
    s.evaluation.result = {};
    std::erase_if(s.evaluation.verified,
                  [&](const app::VerifiedRound &v) { return v.round >= s.round; });
}

void addEpoch(app::Session &s, int step)
{
    // What the nodes report during an epoch (Workflow's metrics and progress slots), then the
    // epoch itself.
    app::TrainingRecord &t = s.training;
    const int epoch = int(t.epochs.size()) + 1;
    for (int i = 0; i < CrashSaveScript::kReadingsPerEpoch; ++i)
        for (int n = 0; n < CrashSaveScript::kNodes; ++n) {
            app::MetricRow m;
            m.seconds = sixtyFourths(int(t.metrics.size()) * 16);
            m.node = kNodeNames[n];
            m.cpuPercent = sixtyFourths((step * 7 + i * 13 + n) % 6400);
            m.memoryUsedBytes = double((200 + n) << 20) + 4096.0 * i;
            m.rxBytesPerSecond = 1000.0 * (i + n);
            m.txBytesPerSecond = 2000.0 * (i + n);
            m.phase = QStringLiteral("training");
            m.epoch = epoch;
            m.loss = sixtyFourths(200 - epoch);
            m.accuracy = sixtyFourths(epoch);
            m.imagesPerSecond = 40.0 + n;
            if (n != 2) { // the laptop reports no power
                m.powerWatts = sixtyFourths(300 + i);
                m.powerMeasured = n == 0;
                m.energyJoules = sixtyFourths(int(t.metrics.size()) * 100);
            }
            t.metrics.push_back(m);
        }
    for (int i = 0; i < CrashSaveScript::kProgressPerEpoch; ++i)
        for (int n = 0; n < CrashSaveScript::kNodes; ++n)
            t.progress.push_back({sixtyFourths(int(t.progress.size()) * 32), kNodeNames[n], epoch,
                                  std::int64_t(epoch) * 100 + i, sixtyFourths(150 - i),
                                  sixtyFourths(i + 8), 41.5 + n});
    net::ClusterEpoch e;
    e.epoch = epoch;
    e.train_loss = sixtyFourths(180 - epoch);
    e.train_accuracy = sixtyFourths(epoch + 20);
    e.test_loss = sixtyFourths(190 - epoch);
    e.test_accuracy = sixtyFourths(epoch + 10);
    e.test_count = 120;
    e.samples = 900;
    e.seconds = sixtyFourths(step * 64);
    e.images_per_second = 123.5;
    e.nodes = CrashSaveScript::kNodes;
    e.shares = {0.375, 0.375, 0.25};
    t.epochs.push_back(e);
    t.seconds = e.seconds;
    if (epoch % 4 == 0)
        t.events.push_back({e.seconds,
                            net::NodeId{kNodeNames[2], QStringLiteral("192.0.2.9"), 47700},
                            net::ClusterEventKind::Rebalanced,
                            QStringLiteral("shares moved after epoch %1").arg(epoch)});
}

void finishRun(app::Session &s)
{
    app::TrainingRecord &t = s.training;
    t.state = app::TrainingRecord::State::Finished;
    t.weights = QStringLiteral("student-frames.safetensors");
    t.keptEpoch = CrashSaveScript::kEpochs - 2;
}

void evaluate(app::Session &s, int step)
{
    // As the evaluation's result lands: the figures on the tracker's labels and, for the round,
    // the verified frames' scores with their precision-recall curves.
    app::EvaluationRecord &e = s.evaluation;
    e.done = true;
    e.result.frames = 40;
    e.result.tracker_only_boxes = 17;
    e.result.student_recall_tracker_only = sixtyFourths(40);
    e.result.gains.push_back({step, cv::Rect2d(10, 20, 30, 60), cv::Rect2d(11, 21, 29, 58)});
    vision::OperatingPoint point;
    point.threshold = 0.375f;
    point.f1 = sixtyFourths(45);
    point.frames = 100;
    point.boxes = 240;
    e.operatingPoint = point;
    app::VerifiedRound v;
    v.round = s.round;
    v.frames = 24;
    v.first_frame = 480;
    for (const char *name : {"teacher", "motion", "student"}) {
        vision::DetectorScore sc;
        sc.name = name;
        sc.frames = 24;
        sc.truths = 150;
        sc.detections = 140 + step % 10;
        sc.true_positives = 120;
        sc.recall = sixtyFourths(51);
        sc.precision = sixtyFourths(55);
        sc.ap50 = sixtyFourths(step % 64);
        sc.threshold = 0.375f;
        for (int k = 0; k < 300; ++k)
            sc.curve.push_back(
                {sixtyFourths(k % 64), sixtyFourths(64 - k % 64), float(sixtyFourths(64 - k / 5))});
        v.scores.push_back(std::move(sc));
    }
    e.verified.push_back(std::move(v));
    e.student_fps = 60.5;
    e.teacher_fps = 4.25;
}

} // namespace

bool CrashSaveState::open(const QString &dir, bool writes, QString *error)
{
    auto s = app::Session::open(dir, error);
    if (!s)
        return false;
    session = std::move(*s);
    if (!verification.open(dir, error))
        return false;
    if (!writes)
        verification.moveTo(QString());
    try {
        labels = vision::LabelResult::load(dir.toStdString());
    } catch (const std::exception &e) {
        *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

void CrashSaveScript::create(CrashSaveState &state, const QString &dir)
{
    app::Session &s = state.session;
    s.dir = QDir(dir).absolutePath();
    s.title = QStringLiteral("Loading bay, camera 2");
    s.created = QDateTime(QDate(2024, 5, 1), QTime(8, 0), Qt::UTC);
    s.capture.source = QStringLiteral("/data/bay.avi");
    vision::FrameDatasetStats stats;
    stats.input = cv::Size(256, 192);
    stats.every = 2;
    stats.frames[0] = 400;
    stats.frames[1] = 80;
    stats.samples[0] = 2000;
    s.frameStats = stats;
    for (int n = 0; n < kNodes; ++n)
        s.nodes.push_back({kNodeNames[n], QStringLiteral("192.0.2.%1").arg(7 + n), 47700, true,
                           QStringLiteral("aarch64"), QStringLiteral("Cortex-A72"), 4, 4LL << 30});

    // A labelled source: 40 tracks of 150 boxes each.
    vision::LabelResult &l = state.labels;
    l.source = s.capture.source.toStdString();
    l.teacher = "hog";
    l.frame_size = cv::Size(640, 480);
    for (int id = 1; id <= 40; ++id) {
        vision::Track t;
        t.id = id;
        for (int f = 0; f < 150; ++f)
            t.boxes.push_back(
                {id * 10 + f, cv::Rect2d(f % 500, id * 5, 24 + id % 8, 48 + id % 16),
                 f % 10 == 0 ? vision::BoxSource::Teacher : vision::BoxSource::Tracker,
                 float(sixtyFourths(32 + f % 32))});
        l.tracks.push_back(std::move(t));
    }
    l.updateStats();

    QString error;
    state.verification.open(s.dir, &error); // none yet: an empty truth, saved to s.dir
    state.verification.pickFrames(&l, 1200, 24, 1, l.source, l.frame_size);
}

CrashSaveStep CrashSaveScript::advance(CrashSaveState &state, int step)
{
    if (step % 5 == 2) {
        // The Verify view: a box drawn on one of the picked frames, or the frame marked done.
        const std::vector<int> frames = state.verification.frames();
        const int frame = frames[std::size_t(step / 5) % frames.size()];
        if ((step / 5) % 3 == 2)
            state.verification.setDone(frame, true);
        else
            state.verification.addBox(frame, cv::Rect2d(step % 600, 100, 30, 70));
        return {SavedFile::Truth, "truth edit"};
    }
    if (step % 7 == 4) {
        // The review (Workflow::editTrack): a track rejected, or accepted again.
        vision::Track &t = state.labels.tracks[std::size_t(step) % state.labels.tracks.size()];
        const bool reject = t.state == vision::Track::State::Accepted;
        t.state = reject ? vision::Track::State::Rejected : vision::Track::State::Accepted;
        t.note = reject ? "rejected in review" : "";
        state.labels.updateStats();
        return {SavedFile::Labels, "label edit"};
    }
    app::Session &s = state.session;
    using State = app::TrainingRecord::State;
    if (s.training.state == State::Running) {
        if (int(s.training.epochs.size()) < kEpochs) {
            addEpoch(s, step);
            return {SavedFile::Session, "epoch"};
        }
        finishRun(s);
        return {SavedFile::Session, "run end"};
    }
    if (s.training.state == State::Finished && !s.evaluation.done) {
        evaluate(s, step);
        return {SavedFile::Session, "evaluation"};
    }
    startRun(s, step);
    return {SavedFile::Session, "run start"};
}

bool CrashSaveScript::save(CrashSaveState &state, SavedFile file, QString *error)
{
    switch (file) {
    case SavedFile::Session:
        return state.session.save(error);
    case SavedFile::Truth:
        if (!state.verification.flush()) {
            *error = QStringLiteral("truth.json was not saved");
            return false;
        }
        return true;
    case SavedFile::Labels:
        try {
            state.labels.save(state.session.dir.toStdString());
        } catch (const std::exception &e) {
            *error = QString::fromStdString(e.what());
            return false;
        }
        return true;
    }
    return false;
}

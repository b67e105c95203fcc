#include "core/fieldcheck.h"
#include "net/planner/clusterplanner.h"
#include "session.h"

#include <QJsonArray>

// Session::fromJson(): session.json read back, every field checked, the first problem named by
// its path in core::FieldCheck's words (field "plan.batch" must be an integer from 1 to 1048576,
// got 0).

namespace edgetrain::app {

namespace {

/** Reads fields of one JSON object, remembering the first problem with its path. */
class Reader
{
public:
    Reader(const QJsonObject &o, QString where, QString *error)
        : m_o(o), m_where(std::move(where)), m_error(error)
    {}
    bool ok() const { return m_error->isEmpty(); }
    Reader object(const QString &key) const
    {
        const QJsonValue v = m_o.value(key);
        if (!v.isUndefined() && !v.isObject())
            fail(key, "an object");
        return Reader(v.toObject(), field(key), m_error);
    }
    QJsonArray array(const QString &key) const
    {
        const QJsonValue v = m_o.value(key);
        if (!v.isUndefined() && !v.isArray())
            fail(key, "an array");
        return v.toArray();
    }
    QString text(const QString &key, const QString &fallback = {}) const
    {
        const QJsonValue v = m_o.value(key);
        if (v.isUndefined())
            return fallback;
        if (!v.isString())
            fail(key, "a string");
        return v.toString();
    }
    double number(const QString &key, double fallback, double min, double max) const
    {
        const QJsonValue v = m_o.value(key);
        if (v.isUndefined())
            return fallback;
        if (!v.isDouble()) {
            fail(key, core::FieldCheck::numberFrom(min, max));
            return fallback;
        }
        return check(core::FieldCheck::numberIn(field(key).toStdString(), v.toDouble(), min, max))
                   ? v.toDouble()
                   : fallback;
    }
    int integer(const QString &key, int fallback, int min, int max) const
    {
        const QJsonValue v = m_o.value(key);
        if (v.isUndefined())
            return fallback;
        if (!v.isDouble() || !core::FieldCheck::isIntegral(v.toDouble())) {
            fail(key, core::FieldCheck::integerFrom(min, max));
            return fallback;
        }
        const auto i = std::int64_t(v.toDouble());
        return check(core::FieldCheck::integerIn(field(key).toStdString(), i, min, max)) ? int(i)
                                                                                         : fallback;
    }
    bool boolean(const QString &key, bool fallback) const
    {
        const QJsonValue v = m_o.value(key);
        if (v.isUndefined())
            return fallback;
        if (!v.isBool())
            fail(key, "true or false");
        return v.toBool();
    }
    /** Each string of the array under `key` (anything else read as an empty string). */
    QStringList strings(const QString &key) const
    {
        QStringList out;
        for (const QJsonValue &v : array(key))
            out.append(v.toString());
        return out;
    }
    /** A reader for one element of the array under `key`, its problems named by that array. */
    Reader item(const QJsonValue &v, const QString &key) const
    {
        return Reader(v.toObject(), field(key), m_error);
    }
    /** Records that `key` holds a value it does not take (unless a problem came first). */
    void reject(const QString &key, const std::string &expected, const QString &got = {}) const
    {
        check(core::FieldCheck::mustBe(field(key).toStdString(), expected, got.toStdString()));
    }
    bool has(const QString &key) const { return m_o.contains(key); }
    QStringList keys() const { return m_o.keys(); }
    QString field(const QString &key) const
    {
        return m_where.isEmpty() ? key : m_where + QLatin1Char('.') + key;
    }

private:
    void fail(const QString &key, const std::string &expected) const
    {
        check(core::FieldCheck::mustBe(field(key).toStdString(), expected));
    }
    /** Keeps the first problem; true when there is none. */
    bool check(const std::string &problem) const
    {
        if (!problem.empty() && m_error->isEmpty())
            *m_error = QString::fromStdString(problem);
        return problem.empty();
    }
    QJsonObject m_o;
    QString m_where;
    QString *m_error;
};

cv::Rect2d readRect(const QJsonValue &v)
{
    const QJsonArray a = v.toArray();
    return a.size() == 4
               ? cv::Rect2d(a[0].toDouble(), a[1].toDouble(), a[2].toDouble(), a[3].toDouble())
               : cv::Rect2d();
}

SessionNode readNode(const Reader &k)
{
    SessionNode node;
    node.name = k.text(QStringLiteral("name"));
    node.host = k.text(QStringLiteral("host"));
    node.port = quint16(k.integer(QStringLiteral("port"), 0, 0, 65535));
    node.paired = k.boolean(QStringLiteral("paired"), false);
    node.arch = k.text(QStringLiteral("arch"));
    node.cpuModel = k.text(QStringLiteral("cpu"));
    node.cores = k.integer(QStringLiteral("cores"), 0, 0, 1 << 20);
    node.ramBytes = std::int64_t(k.number(QStringLiteral("ram_bytes"), 0, 0, 1e18));
    return node;
}

/** "nodes": the key file, the probe addresses and the nodes met so far. */
void readNodes(const Reader &n, Session &s)
{
    s.keyFile = n.text(QStringLiteral("key_file"));
    s.probes = n.strings(QStringLiteral("probes"));
    s.nodes.clear();
    for (const QJsonValue &v : n.array(QStringLiteral("known")))
        s.nodes.push_back(readNode(n.item(v, QStringLiteral("known"))));
}

/** "capture"; what it leaves out keeps the value `capture` has. */
void readCapture(const Reader &c, CaptureSettings &capture)
{
    capture.source = c.text(QStringLiteral("source"));
    capture.teacher = c.text(QStringLiteral("teacher"), capture.teacher);
    capture.tracker = c.text(QStringLiteral("tracker"), capture.tracker);
    capture.every = c.integer(QStringLiteral("every"), capture.every, 1, 10000);
    capture.maxFrames = c.integer(QStringLiteral("max_frames"), 0, 0, 100000000);
}

/** "dataset"'s settings; what it leaves out keeps the value `dataset` has. */
void readDatasetSettings(const Reader &d, DatasetSettings &dataset)
{
    dataset.kind = d.text(QStringLiteral("kind"), QStringLiteral("crops")); // older sessions: crops
    if (dataset.kind != QLatin1String("frames") && dataset.kind != QLatin1String("crops"))
        d.reject(QStringLiteral("kind"), "frames or crops", dataset.kind);
    dataset.frameWidth = d.integer(QStringLiteral("frame_width"), dataset.frameWidth, 64, 2048);
    dataset.frameEvery = d.integer(QStringLiteral("frame_every"), 0, 0, 100000);
    dataset.frameAugment = d.integer(QStringLiteral("frame_augment"), dataset.frameAugment, 0, 10);
    if (dataset.frameWidth % 8 != 0)
        d.reject(QStringLiteral("frame_width"), "a multiple of 8",
                 QString::number(dataset.frameWidth));
    dataset.width = d.integer(QStringLiteral("width"), dataset.width, 8, 512);
    dataset.height = d.integer(QStringLiteral("height"), dataset.height, 8, 512);
    dataset.negativesPerPositive =
        d.number(QStringLiteral("negatives_per_positive"), dataset.negativesPerPositive, 0, 100);
    dataset.seed = d.integer(QStringLiteral("seed"), dataset.seed, 0, 1 << 30);
}

/** "dataset.built": the crop dataset's counts, none when it was not built. */
std::optional<vision::CropStats> readCropStats(const Reader &d)
{
    if (!d.has(QStringLiteral("built")))
        return std::nullopt;
    const Reader b = d.object(QStringLiteral("built"));
    vision::CropStats s;
    auto counts = [&](const QString &key, int(&out)[3]) {
        const QJsonArray a = b.array(key);
        for (int i = 0; i < 3 && i < a.size(); ++i)
            out[i] = a[i].toInt();
    };
    counts(QStringLiteral("positives"), s.positives);
    counts(QStringLiteral("negatives"), s.negatives);
    counts(QStringLiteral("tracks"), s.tracks);
    return s;
}

/** "dataset.frames_built": the frame dataset's figures, none when it was not built. */
std::optional<vision::FrameDatasetStats> readFrameStats(const Reader &d)
{
    if (!d.has(QStringLiteral("frames_built")))
        return std::nullopt;
    const Reader b = d.object(QStringLiteral("frames_built"));
    vision::FrameDatasetStats s;
    const QJsonArray input = b.array(QStringLiteral("input"));
    s.input = cv::Size(input.size() == 2 ? input[0].toInt() : 0,
                       input.size() == 2 ? input[1].toInt() : 0);
    s.every = b.integer(QStringLiteral("every"), 1, 1, 1 << 30);
    auto pair = [&](const QString &key, int(&out)[2]) {
        const QJsonArray a = b.array(key);
        for (int i = 0; i < 2 && i < a.size(); ++i)
            out[i] = a[i].toInt();
    };
    pair(QStringLiteral("frames"), s.frames);
    pair(QStringLiteral("samples"), s.samples);
    pair(QStringLiteral("objects"), s.objects);
    pair(QStringLiteral("ignores"), s.ignores);
    s.backgrounds = b.integer(QStringLiteral("backgrounds"), 0, 0, 1 << 30);
    s.seconds = b.number(QStringLiteral("seconds"), 0, 0, 1e9);
    s.round = b.integer(QStringLiteral("round"), 1, 1, 1000);
    return s;
}

/** "plan"'s memory budgets, under the keys older sessions used when they have those. */
void readBudgets(const Reader &p, PlanSettings &plan)
{
    // Sessions written before sizes said their unit: budget_all, budgets.
    const bool unitless =
        !p.has(QStringLiteral("budget_all_bytes")) && p.has(QStringLiteral("budget_all"));
    const QString allKey =
        unitless ? QStringLiteral("budget_all") : QStringLiteral("budget_all_bytes");
    const QString deviceKey =
        unitless ? QStringLiteral("budgets") : QStringLiteral("device_budget_bytes");
    plan.budgetAllBytes = std::int64_t(p.number(allKey, -1, -1, 1e15));
    plan.clusterObjective = p.text(QStringLiteral("cluster_objective"));
    if (p.ok() && !plan.clusterObjective.isEmpty()) {
        QString why;
        if (const auto o = net::PlanObjective::parse(plan.clusterObjective, &why))
            plan.clusterObjective = o->name(); // "Energy" -> "energy", as the Plan page lists it
        else
            p.reject(QStringLiteral("cluster_objective"), "time, power, energy, edp or a mix",
                     plan.clusterObjective);
    }
    plan.deviceBudgetBytes.clear();
    // Per device: the device's name is the key, so each is read as a field of its own.
    const Reader budgets = p.object(deviceKey);
    for (const QString &node : budgets.keys())
        plan.deviceBudgetBytes[node] = std::int64_t(budgets.number(node, -1, -1, 1e15));
}

/** "plan"; what it leaves out keeps the value `plan` has. */
void readPlan(const Reader &p, const QString &datasetKind, PlanSettings &plan)
{
    // Older sessions (no dataset kind) trained the crop student.
    plan.model =
        p.text(QStringLiteral("model"),
               datasetKind == QLatin1String("crops") ? QStringLiteral("student") : plan.model);
    plan.batch = p.integer(QStringLiteral("batch"), plan.batch, 1, 1 << 20);
    plan.epochs = p.integer(QStringLiteral("epochs"), plan.epochs, 1, 100000);
    plan.lr = p.number(QStringLiteral("lr"), plan.lr, 1e-9, 100);
    plan.mode = p.text(QStringLiteral("mode"), plan.mode);
    if (p.ok() && !net::parseMode(plan.mode))
        p.reject(QStringLiteral("mode"), "sync, async or local-sgd", plan.mode);
    plan.staleness =
        p.integer(QStringLiteral("staleness"), plan.staleness, 0, net::JobSpec::kMaxStaleness);
    plan.localSteps =
        p.integer(QStringLiteral("local_steps"), plan.localSteps, 1, net::JobSpec::kMaxLocalSteps);
    plan.nodes = p.strings(QStringLiteral("nodes"));
    readBudgets(p, plan);
}

ClusterPlanRecord::Row readPlanCandidate(const Reader &cr, const QJsonObject &o)
{
    ClusterPlanRecord::Row row;
    row.nodes = cr.strings(QStringLiteral("nodes"));
    row.mode = cr.text(QStringLiteral("mode"));
    row.seconds = cr.number(QStringLiteral("seconds"), 0, 0, 1e12);
    row.watts = cr.number(QStringLiteral("watts"), 0, 0, 1e9);
    row.joules = cr.number(QStringLiteral("joules"), 0, 0, 1e18);
    row.edp = cr.number(QStringLiteral("edp"), 0, 0, 1e30);
    row.whyNot = cr.text(QStringLiteral("why_not"));
    row.powerKnown = o.value(QStringLiteral("power_known")).toBool(true);
    return row;
}

/** "training.plan": what the cluster planner weighed and chose. */
ClusterPlanRecord readClusterPlan(const Reader &pr)
{
    ClusterPlanRecord rec;
    rec.objective = pr.text(QStringLiteral("objective"));
    rec.profilingSeconds = pr.number(QStringLiteral("profiling_seconds"), 0, 0, 1e9);
    for (const QJsonValue &v : pr.array(QStringLiteral("candidates"))) {
        const ClusterPlanRecord::Row row =
            readPlanCandidate(pr.item(v, QStringLiteral("candidates")), v.toObject());
        if (int(rec.candidates.size()) < ClusterPlanRecord::kKept)
            rec.candidates.push_back(row);
    }
    rec.chosen = pr.integer(QStringLiteral("chosen"), -1, -1, int(rec.candidates.size()) - 1);
    rec.measuredSeconds = pr.number(QStringLiteral("measured_seconds"), -1, -1, 1e12);
    rec.measuredJoules = pr.number(QStringLiteral("measured_joules"), -1, -1, 1e18);
    return rec;
}

net::ClusterEpoch readEpoch(const Reader &e)
{
    net::ClusterEpoch ep;
    ep.epoch = e.integer(QStringLiteral("epoch"), 0, 0, 1 << 30);
    ep.train_loss = e.number(QStringLiteral("train_loss"), 0, -1e30, 1e30);
    ep.train_accuracy = e.number(QStringLiteral("train_accuracy"), 0, 0, 1);
    ep.test_loss = e.number(QStringLiteral("test_loss"), 0, -1e30, 1e30);
    ep.test_accuracy = e.number(QStringLiteral("test_accuracy"), -1, -1, 1);
    ep.test_count = std::int64_t(e.number(QStringLiteral("test_count"), 0, 0, 1e15));
    ep.samples = std::int64_t(e.number(QStringLiteral("samples"), 0, 0, 1e15));
    ep.seconds = e.number(QStringLiteral("seconds"), 0, 0, 1e9);
    ep.images_per_second = e.number(QStringLiteral("images_per_second"), 0, 0, 1e12);
    ep.nodes = e.integer(QStringLiteral("nodes"), 0, 0, 1 << 20);
    for (const QJsonValue &s : e.array(QStringLiteral("shares")))
        ep.shares.push_back(s.toDouble());
    return ep;
}

/** One of "training.events"; none when its kind is one this version does not know. */
std::optional<net::ClusterEvent> readEvent(const Reader &e)
{
    net::ClusterEvent ev;
    ev.seconds = e.number(QStringLiteral("seconds"), 0, 0, 1e9);
    ev.node.name = e.text(QStringLiteral("node"));
    if (e.has(QStringLiteral("host"))) {
        ev.node.host = e.text(QStringLiteral("host"));
        ev.node.port = quint16(e.integer(QStringLiteral("port"), 0, 0, 65535));
    } else if (const qsizetype paren = ev.node.name.indexOf(QLatin1String(" (")); paren > 0) {
        // Sessions written before events kept host and port apart: "name (host:port)".
        ev.node.name.truncate(paren);
    }
    ev.message = e.text(QStringLiteral("message"));
    // A kind a later version added is left out: events annotate the report, they carry no
    // state the session needs.
    const auto kind = net::eventKindFromName(e.text(QStringLiteral("kind")));
    if (!kind)
        return std::nullopt;
    ev.kind = *kind;
    return ev;
}

/** "training": the last run's state, its plan, epochs and events (not its CSV rows). */
TrainingRecord readTraining(const Reader &t)
{
    const QString state = t.text(QStringLiteral("state"), QStringLiteral("none"));
    TrainingRecord training;
    bool known = false;
    for (int i = 0; i < 5; ++i)
        if (state == QLatin1String(trainingStateName(TrainingRecord::State(i)))) {
            training.state = TrainingRecord::State(i);
            known = true;
        }
    if (!known)
        t.reject(QStringLiteral("state"), "none, running, finished, stopped or failed", state);
    // A session saved while training ran was not closed properly: the run was cut short.
    if (training.state == TrainingRecord::State::Running)
        training.state = TrainingRecord::State::Stopped;
    training.error = t.text(QStringLiteral("error"));
    training.jobId = t.text(QStringLiteral("job"));
    training.started = QDateTime::fromString(t.text(QStringLiteral("started")), Qt::ISODate);
    training.nodes = t.strings(QStringLiteral("nodes"));
    training.seconds = t.number(QStringLiteral("seconds"), 0, 0, 1e9);
    training.weights = t.text(QStringLiteral("weights"));
    training.keptEpoch = t.integer(QStringLiteral("kept_epoch"), 0, 0, 1000000);
    training.averageDecay = t.number(QStringLiteral("average_decay"), 0, 0, 0.9999);
    // How many rows of metrics.csv and progress.csv are this save's: Session::open reads them.
    (void)t.number(QStringLiteral("metrics_rows"), 0, 0, 1e15);
    (void)t.number(QStringLiteral("progress_rows"), 0, 0, 1e15);
    if (t.has(QStringLiteral("plan")))
        training.plan = readClusterPlan(t.object(QStringLiteral("plan")));
    for (const QJsonValue &v : t.array(QStringLiteral("epochs")))
        training.epochs.push_back(readEpoch(t.item(v, QStringLiteral("epochs"))));
    for (const QJsonValue &v : t.array(QStringLiteral("events")))
        if (const auto ev = readEvent(t.item(v, QStringLiteral("events"))))
            training.events.push_back(*ev);
    return training;
}

/** "evaluation": the student against the teacher and tracker on the held-out frames. */
vision::ViewpointEvaluation readViewpointEvaluation(const Reader &e)
{
    vision::ViewpointEvaluation v;
    v.frames = e.integer(QStringLiteral("frames"), 0, 0, 1 << 30);
    v.teacher_found_boxes = e.integer(QStringLiteral("teacher_found_boxes"), 0, 0, 1 << 30);
    v.tracker_only_boxes = e.integer(QStringLiteral("tracker_only_boxes"), 0, 0, 1 << 30);
    v.teacher_recall_teacher_found =
        e.number(QStringLiteral("teacher_recall_teacher_found"), 0, 0, 1);
    v.student_recall_teacher_found =
        e.number(QStringLiteral("student_recall_teacher_found"), 0, 0, 1);
    v.teacher_recall_tracker_only =
        e.number(QStringLiteral("teacher_recall_tracker_only"), 0, 0, 1);
    v.student_recall_tracker_only =
        e.number(QStringLiteral("student_recall_tracker_only"), 0, 0, 1);
    v.student_precision = e.number(QStringLiteral("student_precision"), 0, 0, 1);
    v.teacher_precision = e.number(QStringLiteral("teacher_precision"), 0, 0, 1);
    v.student_detections = e.integer(QStringLiteral("student_detections"), 0, 0, 1 << 30);
    v.teacher_detections = e.integer(QStringLiteral("teacher_detections"), 0, 0, 1 << 30);
    v.match_iou = e.number(QStringLiteral("match_iou"), 0.5, 0, 1);
    for (const QJsonValue &g : e.array(QStringLiteral("gains"))) {
        const QJsonObject o = g.toObject();
        v.gains.push_back({o.value(QStringLiteral("frame")).toInt(),
                           readRect(o.value(QStringLiteral("box"))),
                           readRect(o.value(QStringLiteral("student")))});
    }
    return v;
}

vision::OperatingPoint readOperatingPoint(const Reader &op)
{
    vision::OperatingPoint point;
    point.threshold = float(op.number(QStringLiteral("threshold"), 0.3, 0, 1));
    point.f1 = op.number(QStringLiteral("f1"), 0, 0, 1);
    // Sessions before the labels' F0.5: the best F1 was the point.
    point.beta = op.number(QStringLiteral("beta"), 1.0, 0.1, 10.0);
    point.f_beta = op.number(QStringLiteral("f_beta"), point.f1, 0, 1);
    point.recall = op.number(QStringLiteral("recall"), 0, 0, 1);
    point.precision = op.number(QStringLiteral("precision"), 0, 0, 1);
    point.frames = op.integer(QStringLiteral("frames"), 0, 0, 1 << 30);
    point.boxes = op.integer(QStringLiteral("boxes"), 0, 0, 1 << 30);
    return point;
}

/** One detector's score on a round's verified frames, with its precision-recall curve. */
vision::DetectorScore readDetectorScore(const Reader &sr)
{
    vision::DetectorScore sc;
    sc.name = sr.text(QStringLiteral("name")).toStdString();
    sc.frames = sr.integer(QStringLiteral("frames"), 0, 0, 1 << 30);
    sc.truths = sr.integer(QStringLiteral("truths"), 0, 0, 1 << 30);
    sc.detections = sr.integer(QStringLiteral("detections"), 0, 0, 1 << 30);
    sc.true_positives = sr.integer(QStringLiteral("true_positives"), 0, 0, 1 << 30);
    sc.false_positives = sr.integer(QStringLiteral("false_positives"), 0, 0, 1 << 30);
    sc.recall = sr.number(QStringLiteral("recall"), 0, 0, 1);
    sc.precision = sr.number(QStringLiteral("precision"), 0, 0, 1);
    sc.f1 = sr.number(QStringLiteral("f1"), 0, 0, 1);
    sc.ap50 = sr.number(QStringLiteral("ap50"), 0, 0, 1);
    sc.ap50_95 = sr.number(QStringLiteral("ap50_95"), 0, 0, 1);
    sc.threshold = float(sr.number(QStringLiteral("threshold"), 0, -1e9, 1e9));
    for (const QJsonValue &pv : sr.array(QStringLiteral("curve"))) {
        const QJsonArray a = pv.toArray();
        if (a.size() != 3) {
            sr.reject(QStringLiteral("curve"), "a list of [recall, precision, threshold] points");
            break;
        }
        sc.curve.push_back({a[0].toDouble(), a[1].toDouble(), float(a[2].toDouble())});
    }
    return sc;
}

/** "<figure>_lo" / "<figure>_hi" of recall, precision, f1 and ap50; nullopt when absent (a round
 *  scored before intervals existed). Differences may be negative. */
std::optional<vision::FigureIntervals> readIntervals(const Reader &r, double min)
{
    if (!r.has(QStringLiteral("recall_lo")))
        return std::nullopt;
    vision::FigureIntervals ci;
    const std::pair<const char *, vision::Interval *> figures[] = {
        {"recall", &ci.recall}, {"precision", &ci.precision}, {"f1", &ci.f1}, {"ap50", &ci.ap50}};
    for (const auto &[name, interval] : figures) {
        interval->lo = r.number(QLatin1String(name) + QLatin1String("_lo"), 0, min, 1);
        interval->hi = r.number(QLatin1String(name) + QLatin1String("_hi"), 0, min, 1);
    }
    return ci;
}

/** One of "verified_evaluation.rounds": the detectors scored on that round's verified frames. */
VerifiedRound readVerifiedRound(const Reader &vr)
{
    VerifiedRound v;
    v.round = vr.integer(QStringLiteral("round"), 1, 1, 1000);
    v.frames = vr.integer(QStringLiteral("frames"), 0, 0, 1 << 30);
    v.first_frame = vr.integer(QStringLiteral("first_frame"), 0, 0, 1 << 30);
    bool intervals = true;
    for (const QJsonValue &sv : vr.array(QStringLiteral("scores"))) {
        const Reader sr = vr.item(sv, QStringLiteral("scores"));
        v.scores.push_back(readDetectorScore(sr));
        const auto ci = readIntervals(sr, 0);
        intervals = intervals && ci;
        if (ci)
            v.intervals.push_back(*ci);
    }
    if (!intervals) // all or none
        v.intervals.clear();
    const Reader boot = vr.object(QStringLiteral("bootstrap"));
    v.resamples = boot.integer(QStringLiteral("resamples"), 0, 0, 1 << 24);
    v.seed = boot.text(QStringLiteral("seed"), QStringLiteral("0")).toULongLong();
    for (const QJsonValue &lv : vr.array(QStringLiteral("leads"))) {
        const Reader lr = vr.item(lv, QStringLiteral("leads"));
        vision::BootstrapDifference d;
        d.a = lr.text(QStringLiteral("of"), QStringLiteral("student")).toStdString();
        d.b = lr.text(QStringLiteral("over")).toStdString();
        d.a_minus_b.recall = lr.number(QStringLiteral("recall"), 0, -1, 1);
        d.a_minus_b.precision = lr.number(QStringLiteral("precision"), 0, -1, 1);
        d.a_minus_b.f1 = lr.number(QStringLiteral("f1"), 0, -1, 1);
        d.a_minus_b.ap50 = lr.number(QStringLiteral("ap50"), 0, -1, 1);
        if (const auto ci = readIntervals(lr, -1))
            d.ci = *ci;
        v.differences.push_back(d);
    }
    v.disagreement_frames = vr.integer(QStringLiteral("disagreement_frames"), 0, 0, 1 << 30);
    v.biased = vr.boolean(QStringLiteral("biased"), false);
    return v;
}

/** "verified_evaluation": the detectors' speeds and the scores of each round. */
void readVerifiedEvaluation(const Reader &ve, EvaluationRecord &evaluation)
{
    evaluation.student_fps = ve.number(QStringLiteral("student_fps"), 0, 0, 1e9);
    evaluation.teacher_fps = ve.number(QStringLiteral("teacher_fps"), 0, 0, 1e9);
    evaluation.motion_fps = ve.number(QStringLiteral("motion_fps"), 0, 0, 1e9);
    for (const QJsonValue &rv : ve.array(QStringLiteral("rounds")))
        evaluation.verified.push_back(readVerifiedRound(ve.item(rv, QStringLiteral("rounds"))));
}

/** "deployment": the last time the student ran on the devices, each device's last report. */
DeploymentRecord readDeployment(const Reader &d)
{
    DeploymentRecord rec;
    rec.started = QDateTime::fromString(d.text(QStringLiteral("started")), Qt::ISODate);
    rec.seconds = d.number(QStringLiteral("seconds"), 0, 0, 1e9);
    rec.stopped = d.boolean(QStringLiteral("stopped"), false);
    rec.error = d.text(QStringLiteral("error"));
    for (const QJsonValue &dv : d.array(QStringLiteral("devices"))) {
        const Reader v = d.item(dv, QStringLiteral("devices"));
        DeploymentRecord::Device device;
        device.node = v.text(QStringLiteral("node"));
        device.source = v.text(QStringLiteral("source"));
        device.frame = v.text(QStringLiteral("frame"));
        device.frameDetections = v.integer(QStringLiteral("frame_detections"), 0, 0, 1 << 20);
        device.frames = std::int64_t(v.number(QStringLiteral("frames"), 0, 0, 1e15));
        device.detections = std::int64_t(v.number(QStringLiteral("detections"), 0, 0, 1e15));
        device.fps = v.number(QStringLiteral("fps"), 0, 0, 1e9);
        device.latencyMsP50 = v.number(QStringLiteral("latency_ms_p50"), 0, 0, 1e9);
        device.latencyMsP95 = v.number(QStringLiteral("latency_ms_p95"), 0, 0, 1e9);
        device.cpuPercent = v.number(QStringLiteral("cpu_percent"), 0, 0, 1e6);
        device.rssBytes = std::int64_t(v.number(QStringLiteral("rss_bytes"), 0, 0, 1e15));
        device.error = v.text(QStringLiteral("error"));
        rec.devices.push_back(device);
    }
    return rec;
}

} // namespace

bool Session::fromJson(const QJsonObject &json, QString *error)
{
    error->clear();
    Reader r(json, {}, error);
    if (r.text(QStringLiteral("format")) != QLatin1String("edgetrain-session")) {
        *error = QStringLiteral("not an EdgeTrain session ('format' is not 'edgetrain-session')");
        return false;
    }
    const int version = r.integer(QStringLiteral("version"), 0, 0, 1 << 20);
    if (r.ok() && version != kFormatVersion) {
        *error = QStringLiteral("session format %1 is not known to this version (it reads %2)")
                     .arg(version)
                     .arg(kFormatVersion);
        return false;
    }
    title = r.text(QStringLiteral("title"), title);
    created = QDateTime::fromString(r.text(QStringLiteral("created")), Qt::ISODate);

    readNodes(r.object(QStringLiteral("nodes")), *this);
    readCapture(r.object(QStringLiteral("capture")), capture);
    const Reader d = r.object(QStringLiteral("dataset"));
    readDatasetSettings(d, dataset);
    datasetStats = readCropStats(d);
    frameStats = readFrameStats(d);
    readPlan(r.object(QStringLiteral("plan")), dataset.kind, plan);
    training = readTraining(r.object(QStringLiteral("training")));

    // The evaluation's parts are read in the order they stand in, so the first problem is named.
    evaluation = EvaluationRecord();
    evaluation.frames =
        r.integer(QStringLiteral("evaluation_frames"), evaluation.frames, 1, 1 << 20);
    if (r.has(QStringLiteral("evaluation"))) {
        evaluation.result = readViewpointEvaluation(r.object(QStringLiteral("evaluation")));
        evaluation.done = true;
    }
    round = r.integer(QStringLiteral("self_training_round"), 1, 1, 1000);
    evaluation.operatingPointAgainst = QStringLiteral("labels");
    if (r.has(QStringLiteral("operating_point"))) {
        const Reader op = r.object(QStringLiteral("operating_point"));
        evaluation.operatingPoint = readOperatingPoint(op);
        const QString against = op.text(QStringLiteral("against"), QStringLiteral("labels"));
        if (against != QLatin1String("labels") && against != QLatin1String("verified"))
            op.reject(QStringLiteral("against"), "\"labels\" or \"verified\"");
        else
            evaluation.operatingPointAgainst = against;
    }
    readVerifiedEvaluation(r.object(QStringLiteral("verified_evaluation")), evaluation);
    deployment.reset();
    if (r.has(QStringLiteral("deployment")))
        deployment = readDeployment(r.object(QStringLiteral("deployment")));
    return error->isEmpty();
}

} // namespace edgetrain::app

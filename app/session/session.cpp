#include "session.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

namespace edgetrain::app {

namespace {

QJsonObject epochJson(const net::ClusterEpoch &e)
{
    QJsonArray shares;
    for (double s : e.shares)
        shares.append(s);
    return QJsonObject{{QStringLiteral("epoch"), e.epoch},
                       {QStringLiteral("train_loss"), e.train_loss},
                       {QStringLiteral("train_accuracy"), e.train_accuracy},
                       {QStringLiteral("test_loss"), e.test_loss},
                       {QStringLiteral("test_accuracy"), e.test_accuracy},
                       {QStringLiteral("test_count"), qint64(e.test_count)},
                       {QStringLiteral("samples"), qint64(e.samples)},
                       {QStringLiteral("seconds"), e.seconds},
                       {QStringLiteral("images_per_second"), e.images_per_second},
                       {QStringLiteral("nodes"), e.nodes},
                       {QStringLiteral("shares"), shares}};
}

QJsonObject evaluationJson(const vision::ViewpointEvaluation &e)
{
    QJsonArray gains;
    auto rect = [](const cv::Rect2d &r) { return QJsonArray{r.x, r.y, r.width, r.height}; };
    for (const auto &g : e.gains)
        gains.append(QJsonObject{{QStringLiteral("frame"), g.frame},
                                 {QStringLiteral("box"), rect(g.box)},
                                 {QStringLiteral("student"), rect(g.student)}});
    return QJsonObject{
        {QStringLiteral("frames"), e.frames},
        {QStringLiteral("teacher_found_boxes"), e.teacher_found_boxes},
        {QStringLiteral("tracker_only_boxes"), e.tracker_only_boxes},
        {QStringLiteral("teacher_recall_teacher_found"), e.teacher_recall_teacher_found},
        {QStringLiteral("student_recall_teacher_found"), e.student_recall_teacher_found},
        {QStringLiteral("teacher_recall_tracker_only"), e.teacher_recall_tracker_only},
        {QStringLiteral("student_recall_tracker_only"), e.student_recall_tracker_only},
        {QStringLiteral("student_precision"), e.student_precision},
        {QStringLiteral("teacher_precision"), e.teacher_precision},
        {QStringLiteral("student_detections"), e.student_detections},
        {QStringLiteral("teacher_detections"), e.teacher_detections},
        {QStringLiteral("match_iou"), e.match_iou},
        {QStringLiteral("gains"), gains}};
}

QJsonObject scoreJson(const vision::DetectorScore &s)
{
    QJsonArray curve;
    for (const vision::PrPoint &p : s.curve)
        curve.append(QJsonArray{p.recall, p.precision, double(p.threshold)});
    return QJsonObject{{QStringLiteral("name"), QString::fromStdString(s.name)},
                       {QStringLiteral("frames"), s.frames},
                       {QStringLiteral("truths"), s.truths},
                       {QStringLiteral("detections"), s.detections},
                       {QStringLiteral("true_positives"), s.true_positives},
                       {QStringLiteral("false_positives"), s.false_positives},
                       {QStringLiteral("recall"), s.recall},
                       {QStringLiteral("precision"), s.precision},
                       {QStringLiteral("f1"), s.f1},
                       {QStringLiteral("ap50"), s.ap50},
                       {QStringLiteral("ap50_95"), s.ap50_95},
                       {QStringLiteral("threshold"), double(s.threshold)},
                       {QStringLiteral("curve"), curve}};
}

QJsonObject frameStatsJson(const vision::FrameDatasetStats &s)
{
    auto pair = [](const int (&c)[2]) { return QJsonArray{c[0], c[1]}; };
    return QJsonObject{{QStringLiteral("input"), QJsonArray{s.input.width, s.input.height}},
                       {QStringLiteral("every"), s.every},
                       {QStringLiteral("frames"), pair(s.frames)},
                       {QStringLiteral("samples"), pair(s.samples)},
                       {QStringLiteral("objects"), pair(s.objects)},
                       {QStringLiteral("ignores"), pair(s.ignores)},
                       {QStringLiteral("backgrounds"), s.backgrounds},
                       {QStringLiteral("seconds"), s.seconds}};
}

/** Reads fields of one JSON object, remembering the first problem with its path. */
class Reader
{
public:
    Reader(const QJsonObject &o, QString where, QString *error)
        : m_o(o), m_where(std::move(where)), m_error(error)
    {
    }
    bool ok() const { return m_error->isEmpty(); }
    Reader object(const QString &key) const
    {
        const QJsonValue v = m_o.value(key);
        if (!v.isUndefined() && !v.isObject())
            fail(key, QStringLiteral("an object"));
        return Reader(v.toObject(), field(key), m_error);
    }
    QJsonArray array(const QString &key) const
    {
        const QJsonValue v = m_o.value(key);
        if (!v.isUndefined() && !v.isArray())
            fail(key, QStringLiteral("an array"));
        return v.toArray();
    }
    QString text(const QString &key, const QString &fallback = {}) const
    {
        const QJsonValue v = m_o.value(key);
        if (v.isUndefined())
            return fallback;
        if (!v.isString())
            fail(key, QStringLiteral("a string"));
        return v.toString();
    }
    double number(const QString &key, double fallback, double min, double max) const
    {
        const QJsonValue v = m_o.value(key);
        if (v.isUndefined())
            return fallback;
        if (!v.isDouble() || v.toDouble() < min || v.toDouble() > max) {
            fail(key, QStringLiteral("a number from %1 to %2").arg(min).arg(max));
            return fallback;
        }
        return v.toDouble();
    }
    int integer(const QString &key, int fallback, int min, int max) const
    {
        return int(number(key, fallback, min, max));
    }
    bool boolean(const QString &key, bool fallback) const
    {
        const QJsonValue v = m_o.value(key);
        if (v.isUndefined())
            return fallback;
        if (!v.isBool())
            fail(key, QStringLiteral("true or false"));
        return v.toBool();
    }
    bool has(const QString &key) const { return m_o.contains(key); }
    QString field(const QString &key) const
    {
        return m_where.isEmpty() ? key : m_where + QLatin1Char('.') + key;
    }

private:
    void fail(const QString &key, const QString &expected) const
    {
        if (m_error->isEmpty())
            *m_error = QStringLiteral("'%1' must be %2").arg(field(key), expected);
    }
    QJsonObject m_o;
    QString m_where;
    QString *m_error;
};

cv::Rect2d readRect(const QJsonValue &v)
{
    const QJsonArray a = v.toArray();
    return a.size() == 4 ? cv::Rect2d(a[0].toDouble(), a[1].toDouble(), a[2].toDouble(),
                                      a[3].toDouble())
                         : cv::Rect2d();
}

const char *const kStates[] = {"none", "running", "finished", "stopped", "failed"};

QByteArray csvField(const QString &s)
{
    if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) && !s.contains(QLatin1Char('\n')))
        return s.toUtf8();
    QString q = s;
    q.replace(QLatin1String("\""), QLatin1String("\"\""));
    return '"' + q.toUtf8() + '"';
}

/** One CSV record's fields (RFC 4180: quoted fields may hold commas and doubled quotes). */
QList<QByteArray> csvFields(const QByteArray &line)
{
    QList<QByteArray> fields;
    QByteArray field;
    bool quoted = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
                field += line[++i];
            else if (c == '"')
                quoted = false;
            else
                field += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.append(field);
            field.clear();
        } else {
            field += c;
        }
    }
    fields.append(field);
    return fields;
}

/** The records of a CSV file after its header; none if the file is missing. A damaged file loses
 *  its charts, never the session, so nothing here fails. */
QList<QList<QByteArray>> csvRecords(const QString &path)
{
    QList<QList<QByteArray>> records;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return records;
    f.readLine(); // header
    while (!f.atEnd()) {
        QByteArray line = f.readLine();
        while (line.count('"') % 2 == 1 && !f.atEnd()) // a quoted field holding a line break
            line += f.readLine();
        const QByteArray trimmed = line.endsWith("\r\n") ? line.chopped(2)
                                   : line.endsWith('\n')  ? line.chopped(1)
                                                           : line;
        if (!trimmed.isEmpty())
            records.append(csvFields(trimmed));
    }
    return records;
}

} // namespace

const char *trainingStateName(TrainingRecord::State state)
{
    return kStates[int(state)];
}

std::int64_t PlanSettings::budgetFor(const QString &node) const
{
    const auto b = budgets.find(node);
    return b != budgets.end() ? b->second : budgetAll;
}

bool Session::hasLabels() const
{
    return QFileInfo::exists(path(QStringLiteral("labels.json")));
}

bool Session::hasDataset() const
{
    return dataset.kind == QLatin1String("crops") ? datasetStats.has_value() : frameStats.has_value();
}

const vision::DetectorScore *VerifiedRound::score(const std::string &name) const
{
    for (const vision::DetectorScore &s : scores)
        if (s.name == name)
            return &s;
    return nullptr;
}

QJsonObject Session::toJson() const
{
    QJsonArray nodeList;
    for (const SessionNode &n : nodes)
        nodeList.append(QJsonObject{{QStringLiteral("name"), n.name},
                                    {QStringLiteral("host"), n.host},
                                    {QStringLiteral("port"), n.port},
                                    {QStringLiteral("paired"), n.paired},
                                    {QStringLiteral("arch"), n.arch},
                                    {QStringLiteral("cpu"), n.cpuModel},
                                    {QStringLiteral("cores"), n.cores},
                                    {QStringLiteral("ram_bytes"), qint64(n.ramBytes)}});
    QJsonObject budgets;
    for (const auto &[node, bytes] : plan.budgets)
        budgets.insert(node, qint64(bytes));
    QJsonObject datasetJson{{QStringLiteral("kind"), dataset.kind},
                            {QStringLiteral("frame_width"), dataset.frameWidth},
                            {QStringLiteral("frame_every"), dataset.frameEvery},
                            {QStringLiteral("frame_augment"), dataset.frameAugment},
                            {QStringLiteral("width"), dataset.width},
                            {QStringLiteral("height"), dataset.height},
                            {QStringLiteral("negatives_per_positive"), dataset.negativesPerPositive},
                            {QStringLiteral("seed"), dataset.seed}};
    if (datasetStats) {
        auto counts = [](const int (&c)[3]) { return QJsonArray{c[0], c[1], c[2]}; };
        datasetJson.insert(QStringLiteral("built"),
                           QJsonObject{{QStringLiteral("positives"), counts(datasetStats->positives)},
                                       {QStringLiteral("negatives"), counts(datasetStats->negatives)},
                                       {QStringLiteral("tracks"), counts(datasetStats->tracks)}});
    }
    if (frameStats)
        datasetJson.insert(QStringLiteral("frames_built"), frameStatsJson(*frameStats));
    QJsonArray epochs, events;
    for (const auto &e : training.epochs)
        epochs.append(epochJson(e));
    for (const auto &e : training.events)
        events.append(QJsonObject{{QStringLiteral("seconds"), e.seconds},
                                  {QStringLiteral("node"), e.node.name},
                                  {QStringLiteral("host"), e.node.host},
                                  {QStringLiteral("port"), int(e.node.port)},
                                  {QStringLiteral("kind"), net::eventKindName(e.kind)},
                                  {QStringLiteral("message"), e.message}});
    QJsonObject json{
        {QStringLiteral("format"), QStringLiteral("edgetrain-session")},
        {QStringLiteral("version"), kFormatVersion},
        {QStringLiteral("title"), title},
        {QStringLiteral("created"), created.toString(Qt::ISODate)},
        {QStringLiteral("nodes"),
         QJsonObject{{QStringLiteral("key_file"), keyFile},
                     {QStringLiteral("probes"), QJsonArray::fromStringList(probes)},
                     {QStringLiteral("known"), nodeList}}},
        {QStringLiteral("capture"),
         QJsonObject{{QStringLiteral("source"), capture.source},
                     {QStringLiteral("teacher"), capture.teacher},
                     {QStringLiteral("tracker"), capture.tracker},
                     {QStringLiteral("every"), capture.every},
                     {QStringLiteral("max_frames"), capture.maxFrames}}},
        {QStringLiteral("dataset"), datasetJson},
        {QStringLiteral("plan"),
         QJsonObject{{QStringLiteral("model"), plan.model},
                     {QStringLiteral("batch"), plan.batch},
                     {QStringLiteral("epochs"), plan.epochs},
                     {QStringLiteral("lr"), plan.lr},
                     {QStringLiteral("mode"), plan.mode},
                     {QStringLiteral("staleness"), plan.staleness},
                     {QStringLiteral("local_steps"), plan.localSteps},
                     {QStringLiteral("nodes"), QJsonArray::fromStringList(plan.nodes)},
                     {QStringLiteral("budget_all"), qint64(plan.budgetAll)},
                     {QStringLiteral("budgets"), budgets}}},
        {QStringLiteral("training"),
         QJsonObject{{QStringLiteral("state"), QString::fromLatin1(trainingStateName(training.state))},
                     {QStringLiteral("error"), training.error},
                     {QStringLiteral("job"), training.jobId},
                     {QStringLiteral("started"), training.started.toString(Qt::ISODate)},
                     {QStringLiteral("nodes"), QJsonArray::fromStringList(training.nodes)},
                     {QStringLiteral("seconds"), training.seconds},
                     {QStringLiteral("weights"), training.weights},
                     {QStringLiteral("kept_epoch"), training.keptEpoch},
                     {QStringLiteral("epochs"), epochs},
                     {QStringLiteral("events"), events}}}};
    json.insert(QStringLiteral("evaluation_frames"), evaluation.frames);
    json.insert(QStringLiteral("self_training_round"), round);
    if (evaluation.done)
        json.insert(QStringLiteral("evaluation"), evaluationJson(evaluation.result));
    QJsonArray verified;
    for (const VerifiedRound &v : evaluation.verified) {
        QJsonArray scores;
        for (const vision::DetectorScore &sc : v.scores)
            scores.append(scoreJson(sc));
        verified.append(QJsonObject{{QStringLiteral("round"), v.round},
                                    {QStringLiteral("frames"), v.frames},
                                    {QStringLiteral("first_frame"), v.first_frame},
                                    {QStringLiteral("scores"), scores}});
    }
    if (const auto &p = evaluation.operatingPoint)
        json.insert(QStringLiteral("operating_point"),
                    QJsonObject{{QStringLiteral("threshold"), double(p->threshold)},
                                {QStringLiteral("against"), QStringLiteral("labels")},
                                {QStringLiteral("f1"), p->f1},
                                {QStringLiteral("recall"), p->recall},
                                {QStringLiteral("precision"), p->precision},
                                {QStringLiteral("frames"), p->frames},
                                {QStringLiteral("boxes"), p->boxes}});
    json.insert(QStringLiteral("verified_evaluation"),
                QJsonObject{{QStringLiteral("rounds"), verified},
                            {QStringLiteral("student_fps"), evaluation.student_fps},
                            {QStringLiteral("teacher_fps"), evaluation.teacher_fps},
                            {QStringLiteral("motion_fps"), evaluation.motion_fps}});
    return json;
}

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

    const Reader n = r.object(QStringLiteral("nodes"));
    keyFile = n.text(QStringLiteral("key_file"));
    probes.clear();
    for (const QJsonValue &v : n.array(QStringLiteral("probes")))
        probes.append(v.toString());
    nodes.clear();
    for (const QJsonValue &v : n.array(QStringLiteral("known"))) {
        const Reader k(v.toObject(), n.field(QStringLiteral("known")), error);
        SessionNode node;
        node.name = k.text(QStringLiteral("name"));
        node.host = k.text(QStringLiteral("host"));
        node.port = quint16(k.integer(QStringLiteral("port"), 0, 0, 65535));
        node.paired = k.boolean(QStringLiteral("paired"), false);
        node.arch = k.text(QStringLiteral("arch"));
        node.cpuModel = k.text(QStringLiteral("cpu"));
        node.cores = k.integer(QStringLiteral("cores"), 0, 0, 1 << 20);
        node.ramBytes = std::int64_t(k.number(QStringLiteral("ram_bytes"), 0, 0, 1e18));
        nodes.push_back(node);
    }

    const Reader c = r.object(QStringLiteral("capture"));
    capture.source = c.text(QStringLiteral("source"));
    capture.teacher = c.text(QStringLiteral("teacher"), capture.teacher);
    capture.tracker = c.text(QStringLiteral("tracker"), capture.tracker);
    capture.every = c.integer(QStringLiteral("every"), capture.every, 1, 10000);
    capture.maxFrames = c.integer(QStringLiteral("max_frames"), 0, 0, 100000000);

    const Reader d = r.object(QStringLiteral("dataset"));
    dataset.kind = d.text(QStringLiteral("kind"), QStringLiteral("crops")); // older sessions: crops
    if (r.ok() && dataset.kind != QLatin1String("frames") && dataset.kind != QLatin1String("crops"))
        *error = QStringLiteral("'dataset.kind' must be frames or crops");
    dataset.frameWidth = d.integer(QStringLiteral("frame_width"), dataset.frameWidth, 64, 2048);
    dataset.frameEvery = d.integer(QStringLiteral("frame_every"), 0, 0, 100000);
    dataset.frameAugment = d.integer(QStringLiteral("frame_augment"), dataset.frameAugment, 0, 10);
    if (r.ok() && dataset.frameWidth % 8 != 0)
        *error = QStringLiteral("'dataset.frame_width' must be a multiple of 8");
    dataset.width = d.integer(QStringLiteral("width"), dataset.width, 8, 512);
    dataset.height = d.integer(QStringLiteral("height"), dataset.height, 8, 512);
    dataset.negativesPerPositive =
        d.number(QStringLiteral("negatives_per_positive"), dataset.negativesPerPositive, 0, 100);
    dataset.seed = d.integer(QStringLiteral("seed"), dataset.seed, 0, 1 << 30);
    datasetStats.reset();
    if (d.has(QStringLiteral("built"))) {
        const Reader b = d.object(QStringLiteral("built"));
        vision::CropStats s;
        auto counts = [&](const QString &key, int (&out)[3]) {
            const QJsonArray a = b.array(key);
            for (int i = 0; i < 3 && i < a.size(); ++i)
                out[i] = a[i].toInt();
        };
        counts(QStringLiteral("positives"), s.positives);
        counts(QStringLiteral("negatives"), s.negatives);
        counts(QStringLiteral("tracks"), s.tracks);
        datasetStats = s;
    }
    frameStats.reset();
    if (d.has(QStringLiteral("frames_built"))) {
        const Reader b = d.object(QStringLiteral("frames_built"));
        vision::FrameDatasetStats s;
        const QJsonArray input = b.array(QStringLiteral("input"));
        s.input = cv::Size(input.size() == 2 ? input[0].toInt() : 0,
                           input.size() == 2 ? input[1].toInt() : 0);
        s.every = b.integer(QStringLiteral("every"), 1, 1, 1 << 30);
        auto pair = [&](const QString &key, int (&out)[2]) {
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
        frameStats = s;
    }

    const Reader p = r.object(QStringLiteral("plan"));
    // Older sessions (no dataset kind) trained the crop student.
    plan.model = p.text(QStringLiteral("model"), dataset.kind == QLatin1String("crops")
                                                     ? QStringLiteral("student")
                                                     : plan.model);
    plan.batch = p.integer(QStringLiteral("batch"), plan.batch, 1, 1 << 20);
    plan.epochs = p.integer(QStringLiteral("epochs"), plan.epochs, 1, 100000);
    plan.lr = p.number(QStringLiteral("lr"), plan.lr, 1e-9, 100);
    plan.mode = p.text(QStringLiteral("mode"), plan.mode);
    if (r.ok() && !net::parseMode(plan.mode))
        *error = QStringLiteral("'plan.mode' must be sync, async or local-sgd");
    plan.staleness = p.integer(QStringLiteral("staleness"), plan.staleness, 0,
                               net::JobSpec::kMaxStaleness);
    plan.localSteps = p.integer(QStringLiteral("local_steps"), plan.localSteps, 1,
                                net::JobSpec::kMaxLocalSteps);
    plan.nodes.clear();
    for (const QJsonValue &v : p.array(QStringLiteral("nodes")))
        plan.nodes.append(v.toString());
    plan.budgetAll = std::int64_t(p.number(QStringLiteral("budget_all"), -1, -1, 1e15));
    plan.budgets.clear();
    // Per device: the device's name is the key, so each is read as a field of its own.
    const Reader budgets = p.object(QStringLiteral("budgets"));
    const QJsonObject byNode =
        json.value(QStringLiteral("plan")).toObject().value(QStringLiteral("budgets")).toObject();
    for (const QString &node : byNode.keys())
        plan.budgets[node] = std::int64_t(budgets.number(node, -1, -1, 1e15));

    const Reader t = r.object(QStringLiteral("training"));
    const QString state = t.text(QStringLiteral("state"), QStringLiteral("none"));
    training = TrainingRecord();
    bool known = false;
    for (int i = 0; i < 5; ++i)
        if (state == QLatin1String(kStates[i])) {
            training.state = TrainingRecord::State(i);
            known = true;
        }
    if (!known && r.ok())
        *error = QStringLiteral("'training.state' '%1' is not one of none, running, finished, "
                                "stopped, failed")
                     .arg(state);
    // A session saved while training ran was not closed properly: the run was cut short.
    if (training.state == TrainingRecord::State::Running)
        training.state = TrainingRecord::State::Stopped;
    training.error = t.text(QStringLiteral("error"));
    training.jobId = t.text(QStringLiteral("job"));
    training.started = QDateTime::fromString(t.text(QStringLiteral("started")), Qt::ISODate);
    for (const QJsonValue &v : t.array(QStringLiteral("nodes")))
        training.nodes.append(v.toString());
    training.seconds = t.number(QStringLiteral("seconds"), 0, 0, 1e9);
    training.weights = t.text(QStringLiteral("weights"));
    training.keptEpoch = t.integer(QStringLiteral("kept_epoch"), 0, 0, 1000000);
    for (const QJsonValue &v : t.array(QStringLiteral("epochs"))) {
        const Reader e(v.toObject(), t.field(QStringLiteral("epochs")), error);
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
        training.epochs.push_back(ep);
    }
    for (const QJsonValue &v : t.array(QStringLiteral("events"))) {
        const Reader e(v.toObject(), t.field(QStringLiteral("events")), error);
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
        if (const auto kind = net::eventKindFromName(e.text(QStringLiteral("kind")))) {
            ev.kind = *kind;
            training.events.push_back(ev);
        }
    }

    evaluation = EvaluationRecord();
    evaluation.frames = r.integer(QStringLiteral("evaluation_frames"), evaluation.frames, 1, 1 << 20);
    if (r.has(QStringLiteral("evaluation"))) {
        const Reader e = r.object(QStringLiteral("evaluation"));
        auto &v = evaluation.result;
        v.frames = e.integer(QStringLiteral("frames"), 0, 0, 1 << 30);
        v.teacher_found_boxes = e.integer(QStringLiteral("teacher_found_boxes"), 0, 0, 1 << 30);
        v.tracker_only_boxes = e.integer(QStringLiteral("tracker_only_boxes"), 0, 0, 1 << 30);
        v.teacher_recall_teacher_found = e.number(QStringLiteral("teacher_recall_teacher_found"), 0, 0, 1);
        v.student_recall_teacher_found = e.number(QStringLiteral("student_recall_teacher_found"), 0, 0, 1);
        v.teacher_recall_tracker_only = e.number(QStringLiteral("teacher_recall_tracker_only"), 0, 0, 1);
        v.student_recall_tracker_only = e.number(QStringLiteral("student_recall_tracker_only"), 0, 0, 1);
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
        evaluation.done = true;
    }
    round = r.integer(QStringLiteral("self_training_round"), 1, 1, 1000);
    if (json.contains(QStringLiteral("operating_point"))) {
        const Reader op = r.object(QStringLiteral("operating_point"));
        vision::OperatingPoint point;
        point.threshold = float(op.number(QStringLiteral("threshold"), 0.3, 0, 1));
        point.f1 = op.number(QStringLiteral("f1"), 0, 0, 1);
        point.recall = op.number(QStringLiteral("recall"), 0, 0, 1);
        point.precision = op.number(QStringLiteral("precision"), 0, 0, 1);
        point.frames = op.integer(QStringLiteral("frames"), 0, 0, 1 << 30);
        point.boxes = op.integer(QStringLiteral("boxes"), 0, 0, 1 << 30);
        evaluation.operatingPoint = point;
    }
    const Reader ve = r.object(QStringLiteral("verified_evaluation"));
    evaluation.student_fps = ve.number(QStringLiteral("student_fps"), 0, 0, 1e9);
    evaluation.teacher_fps = ve.number(QStringLiteral("teacher_fps"), 0, 0, 1e9);
    evaluation.motion_fps = ve.number(QStringLiteral("motion_fps"), 0, 0, 1e9);
    for (const QJsonValue &rv : ve.array(QStringLiteral("rounds"))) {
        const Reader vr(rv.toObject(), ve.field(QStringLiteral("rounds")), error);
        VerifiedRound v;
        v.round = vr.integer(QStringLiteral("round"), 1, 1, 1000);
        v.frames = vr.integer(QStringLiteral("frames"), 0, 0, 1 << 30);
        v.first_frame = vr.integer(QStringLiteral("first_frame"), 0, 0, 1 << 30);
        for (const QJsonValue &sv : vr.array(QStringLiteral("scores"))) {
            const Reader sr(sv.toObject(), vr.field(QStringLiteral("scores")), error);
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
                    if (error->isEmpty())
                        *error = QStringLiteral("'%1' points must be [recall, precision, threshold]")
                                     .arg(sr.field(QStringLiteral("curve")));
                    break;
                }
                sc.curve.push_back({a[0].toDouble(), a[1].toDouble(), float(a[2].toDouble())});
            }
            v.scores.push_back(std::move(sc));
        }
        evaluation.verified.push_back(std::move(v));
    }
    return error->isEmpty();
}

bool writeFileAtomically(const QString &path, const QByteArray &data, QString *error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(data) != data.size() || !file.commit()) {
        *error = QStringLiteral("cannot write '%1': %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

bool Session::save(QString *error) const
{
    if (!QDir().mkpath(dir)) {
        *error = QStringLiteral("cannot create the session folder '%1'").arg(dir);
        return false;
    }
    return writeFileAtomically(path(QStringLiteral("metrics.csv")), metricsCsv(), error) &&
           writeFileAtomically(path(QStringLiteral("progress.csv")), progressCsv(), error) &&
           writeFileAtomically(path(QStringLiteral("session.json")),
                               QJsonDocument(toJson()).toJson(QJsonDocument::Indented), error);
}

std::optional<Session> Session::open(const QString &dir, QString *error)
{
    Session s;
    s.dir = QDir(dir).absolutePath();
    const QString manifest = s.path(QStringLiteral("session.json"));
    QFile file(manifest);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("cannot open '%1': %2").arg(manifest, file.errorString());
        return std::nullopt;
    }
    QJsonParseError parse;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parse);
    if (parse.error != QJsonParseError::NoError || !doc.isObject()) {
        *error = QStringLiteral("'%1' is not a JSON object (%2 at byte %3)")
                     .arg(manifest, parse.errorString())
                     .arg(parse.offset);
        return std::nullopt;
    }
    if (!s.fromJson(doc.object(), error)) {
        *error = QStringLiteral("'%1': %2").arg(manifest, *error);
        return std::nullopt;
    }
    // The device readings and the training progress; a damaged file loses the charts, not the
    // session. Numbers are read as they were written: locale-free.
    for (const QList<QByteArray> &f : csvRecords(s.path(QStringLiteral("metrics.csv")))) {
        if (f.size() < 11)
            continue;
        MetricRow m;
        m.seconds = f[0].toDouble();
        m.node = QString::fromUtf8(f[1]);
        m.cpuPercent = f[2].toDouble();
        m.memoryUsedBytes = f[3].toDouble();
        m.rxBytesPerSecond = f[4].toDouble();
        m.txBytesPerSecond = f[5].toDouble();
        m.phase = QString::fromUtf8(f[6]);
        m.epoch = f[7].toInt();
        m.loss = f[8].toDouble();
        m.accuracy = f[9].toDouble();
        m.imagesPerSecond = f[10].toDouble();
        s.training.metrics.push_back(m);
    }
    for (const QList<QByteArray> &f : csvRecords(s.path(QStringLiteral("progress.csv")))) {
        if (f.size() < 7)
            continue;
        ProgressRow p;
        p.seconds = f[0].toDouble();
        p.node = QString::fromUtf8(f[1]);
        p.epoch = f[2].toInt();
        p.step = f[3].toLongLong();
        p.loss = f[4].toDouble();
        p.accuracy = f[5].toDouble();
        p.imagesPerSecond = f[6].toDouble();
        s.training.progress.push_back(p);
    }
    return s;
}

QByteArray Session::metricsCsv() const
{
    QByteArray out = "seconds,node,cpu_percent,memory_used_bytes,rx_bytes_per_second,"
                     "tx_bytes_per_second,phase,epoch,loss,accuracy,images_per_second\n";
    for (const MetricRow &m : training.metrics) {
        out += QByteArray::number(m.seconds, 'f', 3) + ',' + csvField(m.node) + ',' +
               QByteArray::number(m.cpuPercent, 'f', 1) + ',' +
               QByteArray::number(qint64(m.memoryUsedBytes)) + ',' +
               QByteArray::number(m.rxBytesPerSecond, 'f', 0) + ',' +
               QByteArray::number(m.txBytesPerSecond, 'f', 0) + ',' + csvField(m.phase) + ',' +
               QByteArray::number(m.epoch) + ',' + QByteArray::number(m.loss, 'g', 6) + ',' +
               QByteArray::number(m.accuracy, 'g', 6) + ',' +
               QByteArray::number(m.imagesPerSecond, 'f', 1) + '\n';
    }
    return out;
}

QByteArray Session::progressCsv() const
{
    QByteArray out = "seconds,node,epoch,step,loss,accuracy,images_per_second\n";
    for (const ProgressRow &p : training.progress)
        out += QByteArray::number(p.seconds, 'f', 3) + ',' + csvField(p.node) + ',' +
               QByteArray::number(p.epoch) + ',' + QByteArray::number(qint64(p.step)) + ',' +
               QByteArray::number(p.loss, 'g', 6) + ',' + QByteArray::number(p.accuracy, 'g', 6) + ',' +
               QByteArray::number(p.imagesPerSecond, 'f', 1) + '\n';
    return out;
}

QByteArray Session::epochsCsv() const
{
    QByteArray out = "epoch,nodes,train_loss,train_accuracy,validation_loss,validation_accuracy,"
                     "samples,seconds,images_per_second\n";
    for (const auto &e : training.epochs)
        out += QByteArray::number(e.epoch) + ',' + QByteArray::number(e.nodes) + ',' +
               QByteArray::number(e.train_loss, 'g', 6) + ',' +
               QByteArray::number(e.train_accuracy, 'g', 6) + ',' +
               QByteArray::number(e.test_loss, 'g', 6) + ',' +
               QByteArray::number(e.test_accuracy, 'g', 6) + ',' +
               QByteArray::number(qint64(e.samples)) + ',' +
               QByteArray::number(e.seconds, 'f', 3) + ',' +
               QByteArray::number(e.images_per_second, 'f', 1) + '\n';
    return out;
}

} // namespace edgetrain::app

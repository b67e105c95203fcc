#include "session.h"

#include <QJsonArray>

// The session as JSON (session.json): what Session::toJson() writes. Session::fromJson() reads it
// back (sessionread.cpp); files and CSV: session.cpp.

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

/** The bounds of a figure set as "<figure>_lo" / "<figure>_hi" fields of `o`. */
void insertIntervals(QJsonObject &o, const vision::FigureIntervals &ci)
{
    const std::pair<const char *, const vision::Interval *> figures[] = {
        {"recall", &ci.recall}, {"precision", &ci.precision}, {"f1", &ci.f1}, {"ap50", &ci.ap50}};
    for (const auto &[name, interval] : figures) {
        o.insert(QLatin1String(name) + QLatin1String("_lo"), interval->lo);
        o.insert(QLatin1String(name) + QLatin1String("_hi"), interval->hi);
    }
}

QJsonObject roundJson(const VerifiedRound &v)
{
    QJsonArray scores;
    for (std::size_t i = 0; i < v.scores.size(); ++i) {
        QJsonObject sc = scoreJson(v.scores[i]);
        if (i < v.intervals.size())
            insertIntervals(sc, v.intervals[i]);
        scores.append(sc);
    }
    QJsonObject round{{QStringLiteral("round"), v.round},
                      {QStringLiteral("frames"), v.frames},
                      {QStringLiteral("first_frame"), v.first_frame},
                      {QStringLiteral("scores"), scores}};
    if (v.resamples > 0) {
        QJsonArray leads;
        for (const vision::BootstrapDifference &d : v.differences) {
            QJsonObject lead{{QStringLiteral("of"), QString::fromStdString(d.a)},
                             {QStringLiteral("over"), QString::fromStdString(d.b)},
                             {QStringLiteral("recall"), d.a_minus_b.recall},
                             {QStringLiteral("precision"), d.a_minus_b.precision},
                             {QStringLiteral("f1"), d.a_minus_b.f1},
                             {QStringLiteral("ap50"), d.a_minus_b.ap50}};
            insertIntervals(lead, d.ci);
            leads.append(lead);
        }
        round.insert(QStringLiteral("leads"), leads);
        // A string: JSON numbers lose 64-bit integers.
        round.insert(QStringLiteral("bootstrap"),
                     QJsonObject{{QStringLiteral("resamples"), v.resamples},
                                 {QStringLiteral("seed"), QString::number(v.seed)},
                                 {QStringLiteral("level"), 0.95}});
    }
    round.insert(QStringLiteral("disagreement_frames"), v.disagreement_frames);
    round.insert(QStringLiteral("biased"), v.biased);
    return round;
}

QJsonObject frameStatsJson(const vision::FrameDatasetStats &s)
{
    auto pair = [](const int(&c)[2]) { return QJsonArray{c[0], c[1]}; };
    return QJsonObject{{QStringLiteral("input"), QJsonArray{s.input.width, s.input.height}},
                       {QStringLiteral("every"), s.every},
                       {QStringLiteral("frames"), pair(s.frames)},
                       {QStringLiteral("samples"), pair(s.samples)},
                       {QStringLiteral("objects"), pair(s.objects)},
                       {QStringLiteral("ignores"), pair(s.ignores)},
                       {QStringLiteral("backgrounds"), s.backgrounds},
                       {QStringLiteral("seconds"), s.seconds},
                       {QStringLiteral("round"), s.round}};
}

QJsonObject deploymentJson(const DeploymentRecord &d)
{
    QJsonArray devices;
    for (const DeploymentRecord::Device &v : d.devices)
        devices.append(QJsonObject{{QStringLiteral("node"), v.node},
                                   {QStringLiteral("source"), v.source},
                                   {QStringLiteral("frame"), v.frame},
                                   {QStringLiteral("frame_detections"), v.frameDetections},
                                   {QStringLiteral("frames"), qint64(v.frames)},
                                   {QStringLiteral("detections"), qint64(v.detections)},
                                   {QStringLiteral("fps"), v.fps},
                                   {QStringLiteral("latency_ms_p50"), v.latencyMsP50},
                                   {QStringLiteral("latency_ms_p95"), v.latencyMsP95},
                                   {QStringLiteral("cpu_percent"), v.cpuPercent},
                                   {QStringLiteral("rss_bytes"), qint64(v.rssBytes)},
                                   {QStringLiteral("error"), v.error}});
    return QJsonObject{{QStringLiteral("started"), d.started.toString(Qt::ISODate)},
                       {QStringLiteral("seconds"), d.seconds},
                       {QStringLiteral("stopped"), d.stopped},
                       {QStringLiteral("error"), d.error},
                       {QStringLiteral("devices"), devices}};
}

const char *const kStates[] = {"none", "running", "finished", "stopped", "failed"};

} // namespace

const char *trainingStateName(TrainingRecord::State state)
{
    return kStates[int(state)];
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
    for (const auto &[node, bytes] : plan.deviceBudgetBytes)
        budgets.insert(node, qint64(bytes));
    QJsonObject datasetJson{
        {QStringLiteral("kind"), dataset.kind},
        {QStringLiteral("frame_width"), dataset.frameWidth},
        {QStringLiteral("frame_every"), dataset.frameEvery},
        {QStringLiteral("frame_augment"), dataset.frameAugment},
        {QStringLiteral("width"), dataset.width},
        {QStringLiteral("height"), dataset.height},
        {QStringLiteral("negatives_per_positive"), dataset.negativesPerPositive},
        {QStringLiteral("seed"), dataset.seed}};
    if (datasetStats) {
        auto counts = [](const int(&c)[3]) { return QJsonArray{c[0], c[1], c[2]}; };
        datasetJson.insert(
            QStringLiteral("built"),
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
    QJsonObject trainingJson{
        {QStringLiteral("state"), QString::fromLatin1(trainingStateName(training.state))},
        {QStringLiteral("error"), training.error},
        {QStringLiteral("job"), training.jobId},
        {QStringLiteral("started"), training.started.toString(Qt::ISODate)},
        {QStringLiteral("nodes"), QJsonArray::fromStringList(training.nodes)},
        {QStringLiteral("seconds"), training.seconds},
        {QStringLiteral("weights"), training.weights},
        {QStringLiteral("kept_epoch"), training.keptEpoch},
        {QStringLiteral("average_decay"), training.averageDecay},
        {QStringLiteral("epochs"), epochs},
        {QStringLiteral("events"), events},
        // The rows of metrics.csv and progress.csv this save wrote (Session::save, open).
        {QStringLiteral("metrics_rows"), qint64(training.metrics.size())},
        {QStringLiteral("progress_rows"), qint64(training.progress.size())}};
    if (const auto &p = training.plan) {
        QJsonArray rows;
        for (const ClusterPlanRecord::Row &c : p->candidates)
            rows.append(QJsonObject{{QStringLiteral("nodes"), QJsonArray::fromStringList(c.nodes)},
                                    {QStringLiteral("mode"), c.mode},
                                    {QStringLiteral("seconds"), c.seconds},
                                    {QStringLiteral("watts"), c.watts},
                                    {QStringLiteral("joules"), c.joules},
                                    {QStringLiteral("edp"), c.edp},
                                    {QStringLiteral("why_not"), c.whyNot},
                                    {QStringLiteral("power_known"), c.powerKnown}});
        trainingJson.insert(QStringLiteral("plan"),
                            QJsonObject{{QStringLiteral("objective"), p->objective},
                                        {QStringLiteral("profiling_seconds"), p->profilingSeconds},
                                        {QStringLiteral("candidates"), rows},
                                        {QStringLiteral("chosen"), p->chosen},
                                        {QStringLiteral("measured_seconds"), p->measuredSeconds},
                                        {QStringLiteral("measured_joules"), p->measuredJoules}});
    }
    QJsonObject json{
        {QStringLiteral("format"), QStringLiteral("edgetrain-session")},
        {QStringLiteral("version"), kFormatVersion},
        {QStringLiteral("title"), title},
        {QStringLiteral("created"), created.toString(Qt::ISODate)},
        {QStringLiteral("nodes"),
         QJsonObject{{QStringLiteral("key_file"), keyFile},
                     {QStringLiteral("probes"), QJsonArray::fromStringList(probes)},
                     {QStringLiteral("known"), nodeList}}},
        {QStringLiteral("capture"), QJsonObject{{QStringLiteral("source"), capture.source},
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
                     {QStringLiteral("budget_all_bytes"), qint64(plan.budgetAllBytes)},
                     {QStringLiteral("device_budget_bytes"), budgets},
                     {QStringLiteral("cluster_objective"), plan.clusterObjective}}},
        {QStringLiteral("training"), trainingJson}};
    json.insert(QStringLiteral("evaluation_frames"), evaluation.frames);
    json.insert(QStringLiteral("self_training_round"), round);
    if (evaluation.done)
        json.insert(QStringLiteral("evaluation"), evaluationJson(evaluation.result));
    QJsonArray verified;
    for (const VerifiedRound &v : evaluation.verified)
        verified.append(roundJson(v));
    if (const auto &p = evaluation.operatingPoint)
        json.insert(QStringLiteral("operating_point"),
                    QJsonObject{{QStringLiteral("threshold"), double(p->threshold)},
                                {QStringLiteral("against"), evaluation.operatingPointAgainst},
                                {QStringLiteral("f1"), p->f1},
                                {QStringLiteral("beta"), p->beta},
                                {QStringLiteral("f_beta"), p->f_beta},
                                {QStringLiteral("recall"), p->recall},
                                {QStringLiteral("precision"), p->precision},
                                {QStringLiteral("frames"), p->frames},
                                {QStringLiteral("boxes"), p->boxes}});
    json.insert(QStringLiteral("verified_evaluation"),
                QJsonObject{{QStringLiteral("rounds"), verified},
                            {QStringLiteral("student_fps"), evaluation.student_fps},
                            {QStringLiteral("teacher_fps"), evaluation.teacher_fps},
                            {QStringLiteral("motion_fps"), evaluation.motion_fps}});
    if (deployment)
        json.insert(QStringLiteral("deployment"), deploymentJson(*deployment));
    return json;
}

} // namespace edgetrain::app

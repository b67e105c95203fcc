#include "clustertraining.h"

#include "vision/framestudenttrainer.h"

#include <QDateTime>
#include <QEventLoop>
#include <QTimer>

namespace edgetrain::app {

void applyTiling(net::JobSpec &job, const core::ModelSpec &spec, qsizetype nodes,
                 const std::map<QString, std::int64_t> &budgets, const TilingRequest &request)
{
    // A node's part of the batch, evenly split (the planner's shares move it a little), within
    // the smallest budget any node has.
    std::int64_t budget = -1;
    for (const auto &[name, bytes] : budgets)
        if (bytes >= 0)
            budget = budget < 0 ? bytes : std::min(budget, bytes);
    const std::int64_t n = std::max<qsizetype>(1, nodes);
    // Splitting the tiles, a node holds the whole batch's input and the group's whole output:
    // planned for the whole batch, which overstates its share of the tiles' own memory.
    const bool across = n > 1 && job.mode == net::TrainingMode::Sync;
    const core::Model::Tiling t =
        resolveTiling(spec, across ? job.batch : (job.batch + n - 1) / n, budget, request);
    job.tiled_stages = t.active() ? t.stages : 0;
    job.tile_rows = t.active() ? t.rows : 1;
    job.tile_cols = t.active() ? t.cols : 1;
    // In sync mode the nodes split the tiles of every image (the paper's method); the other
    // modes have no collective every step, so each node tiles its own part of the batch.
    job.tiles_across = t.active() && across;
}

TrainingSetup clusterSetup(const ClusterJob &j, const ClusterOptions &cluster)
{
    TrainingSetup s;
    net::JobSpec &job = s.job;
    job.id = QStringLiteral("%1-%2").arg(
        j.idPrefix, QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-hhmmss")));
    job.mode = cluster.mode;
    job.model = j.spec.toJson();
    job.seed = j.seed;
    job.epochs = j.epochs;
    job.batch = j.batch;
    job.lr = j.lr;
    job.staleness = cluster.staleness;
    job.local_steps = cluster.localSteps;
    job.collective_timeout_ms = cluster.collectiveTimeout_ms;
    if (j.frames) { // as FrameStudentTrainer trains it: cosine down from the peak, weight decay
        job.schedule = QStringLiteral("cosine");
        job.weight_decay = vision::FrameTrainOptions().weight_decay;
        job.average_decay = j.averageDecay; // async: the server's
    }
    job.dataset = QStringLiteral("shipped");
    applyTiling(job, j.spec, cluster.nodes.size(), cluster.budgetBytes, cluster.tiling);
    s.key = cluster.key;
    s.nodes = cluster.nodes;
    s.budgetBytes = cluster.budgetBytes;
    s.sessionDir = j.sessionDir;
    s.frames = j.frames;
    s.maxObjects = j.spec.loss().centernet.max_objects;
    s.keepBest = j.keepBest;
    s.patience = j.patience;
    s.spec = j.spec;
    s.objective = cluster.objective;
    s.weightsPath = j.weightsPath;
    return s;
}

TrainingOutcome trainOnCluster(const TrainingSetup &setup, const ClusterCallbacks &callbacks,
                               const std::atomic<bool> *stop)
{
    TrainingRun run;
    TrainingOutcome outcome;
    bool ended = false;
    QEventLoop loop;
    if (callbacks.status)
        QObject::connect(&run, &TrainingRun::status, &loop, callbacks.status);
    if (callbacks.epoch)
        QObject::connect(&run, &TrainingRun::epoch, &loop, callbacks.epoch);
    if (callbacks.event)
        QObject::connect(&run, &TrainingRun::clusterEvent, &loop, callbacks.event);
    if (callbacks.planned)
        QObject::connect(&run, &TrainingRun::planned, &loop, callbacks.planned);
    QObject::connect(&run, &TrainingRun::done, &loop, [&](const TrainingOutcome &o) {
        outcome = o;
        ended = true;
        loop.quit();
    });
    QTimer stopPoll;
    bool stopping = false;
    QObject::connect(&stopPoll, &QTimer::timeout, &loop, [&] {
        if (stop && stop->load() && !stopping) {
            stopping = true;
            if (callbacks.stopping)
                callbacks.stopping();
            run.stop();
        }
    });
    stopPoll.start(100);
    if (callbacks.watch)
        callbacks.watch(run);
    run.start(setup); // may end at once (an unreadable dataset)
    if (!ended)
        loop.exec();
    return outcome;
}

} // namespace edgetrain::app

#include "workflow.h"

#include "clustertraining.h"
#include "core/zoo.h"
#include "datasettask.h"
#include "deploymentrun.h"
#include "evaluationtask.h"
#include "labeltask.h"
#include "selftrainingtask.h"
#include "trainingrun.h"
#include "vision/framestudenttrainer.h"
#include "vision/studentteacher.h"

#include <QFileInfo>
#include <QtConcurrent/QtConcurrentRun>

#include <utility>

namespace edgetrain::app {

Workflow::Workflow(QObject *parent) : QObject(parent)
{
    qRegisterMetaType<PlanView>();
    qRegisterMetaType<net::ClusterPlanResult>();
    qRegisterMetaType<MetricRow>();
    qRegisterMetaType<ProgressRow>();
    qRegisterMetaType<net::TrainingStatus>();
    qRegisterMetaType<net::NodeId>();
    m_saver.setMaxThreadCount(1);

    connect(&m_runner, &TaskRunner::started, this, &Workflow::taskStarted);
    connect(&m_runner, &TaskRunner::progress, this, &Workflow::taskProgress);

    connect(&m_nodes, &NodeRegistry::message, this, &Workflow::message);
    connect(&m_verification, &Verification::truthChanged, this, [this] { rescoreVerified(); });
    connect(&m_nodes, &NodeRegistry::keyLoaded, this,
            [this](const QString &path) { m_session.keyFile = path; });
    connect(&m_nodes, &NodeRegistry::probeAdded, this, [this](const QString &hostPort) {
        if (!m_session.probes.contains(hostPort))
            m_session.probes.append(hostPort);
    });
    connect(&m_nodes, &NodeRegistry::paired, this, &Workflow::recordPaired);
    connect(&m_nodes, &NodeRegistry::forgotten, this, &Workflow::recordForgotten);

    m_planner = new PlannerWorker;
    m_planner->moveToThread(&m_plannerThread);
    connect(&m_plannerThread, &QThread::finished, m_planner, &QObject::deleteLater);
    connect(m_planner, &PlannerWorker::ready, this, [this](const PlanView &v) {
        m_planBusy = false;
        if (m_planPending) { // the user moved on: plan what they ask for now
            const PlanRequest next = *m_planPending;
            m_planPending.reset();
            requestPlan(next);
        } else {
            Q_EMIT planReady(v);
        }
    });
    m_plannerThread.setObjectName(QStringLiteral("planner"));
    m_plannerThread.start();
    m_trainThread.setObjectName(QStringLiteral("training"));
    m_trainThread.start();
}

Workflow::~Workflow()
{
    m_runner.cancel(); // the runner's destructor waits for the work to return
    if (m_run)
        QMetaObject::invokeMethod(
            m_run, [run = m_run] { run->stop(); }, Qt::BlockingQueuedConnection);
    if (m_deploy)
        QMetaObject::invokeMethod(
            m_deploy, [run = m_deploy] { run->stop(); }, Qt::BlockingQueuedConnection);
    m_saver.waitForDone();
    m_plannerThread.quit();
    m_plannerThread.wait();
    if (m_run)
        m_run->deleteLater();
    if (m_deploy)
        m_deploy->deleteLater();
    m_trainThread.quit();
    m_trainThread.wait();
}

QString Workflow::clusterSummary() const
{
    QString text = m_nodes.clusterSummary();
    if (busy() == Task::Training) {
        const auto &t = m_session.training;
        text += QStringLiteral(" · training epoch %1/%2")
                    .arg(std::min<int>(int(t.epochs.size()) + 1, m_session.plan.epochs))
                    .arg(m_session.plan.epochs);
    } else if (busy() != Task::None) {
        text += QStringLiteral(" · ") + taskName(busy());
    }
    return text;
}

// ----- long tasks -------------------------------------------------------------------------------

void Workflow::finishTask(Task task, bool ok, const QString &text)
{
    m_runner.end(task);
    saveQuietly();
    Q_EMIT message(text);
    Q_EMIT taskFinished(task, ok, text);
}

void Workflow::cancel()
{
    if (busy() == Task::ClusterPlan)
        stopTraining(); // its nodes finish profiling and are released
    else if (busy() == Task::Deployment)
        stopDeployment();
    else
        m_runner.cancel();
}

void Workflow::startLabelling()
{
    if (busy() != Task::None)
        return;
    if (m_session.capture.source.isEmpty()) {
        Q_EMIT taskFinished(Task::Labelling, false, QStringLiteral("choose a source first"));
        return;
    }
    m_runner.run(
        Task::Labelling,
        [task = LabelTask(m_session.capture, m_session.dir)](const TaskRunner::Report &report,
                                                             const std::atomic<bool> *stop) {
            return task.run(report, stop);
        },
        [this](const LabelOutcome &out) {
            if (!out.labels)
                return finishTask(Task::Labelling, false,
                                  QStringLiteral("labelling failed: ") + out.error);
            m_labels = out.labels;
            Q_EMIT labelsChanged();
            const QString summary = LabelTask::summary(*out.labels);
            finishTask(Task::Labelling, !out.labels->cancelled && out.error.isEmpty(),
                       out.error.isEmpty() ? summary : out.error + QStringLiteral(" — ") + summary);
        });
}

void Workflow::startDataset()
{
    if (busy() != Task::None)
        return;
    if (!m_labels) {
        Q_EMIT taskFinished(Task::Dataset, false, QStringLiteral("label a source first"));
        return;
    }
    m_runner.run(
        Task::Dataset,
        [task = DatasetTask(m_session.dataset, m_session.dir, m_labels)](
            const TaskRunner::Report &report, const std::atomic<bool> *stop) {
            return task.run(report, stop);
        },
        [this](const DatasetOutcome &out) {
            if (!out.ok())
                return finishTask(Task::Dataset, false, QStringLiteral("dataset: ") + out.error);
            if (out.frameStats)
                m_session.frameStats = out.frameStats;
            else
                m_session.datasetStats = out.stats;
            Q_EMIT datasetChanged();
            finishTask(Task::Dataset, true,
                       out.frameStats ? DatasetTask::summary(*out.frameStats)
                                      : DatasetTask::summary(*out.stats));
        });
}

// ----- plan -------------------------------------------------------------------------------------

std::int64_t Workflow::deviceBatch() const
{
    const QStringList chosen =
        m_session.plan.nodes.isEmpty() ? m_nodes.pairedNodes() : m_session.plan.nodes;
    const std::int64_t n = std::max<qsizetype>(chosen.size(), 1);
    return (m_session.plan.batch + n - 1) / n;
}

PlanRequest Workflow::planRequestFor(std::int64_t budget) const
{
    PlanRequest r;
    r.model = m_session.plan.model;
    if (m_session.plan.model == QLatin1String("detector")) {
        // The frame dataset's input; before one is built, the source's aspect (4:3 if unknown).
        cv::Size input = m_session.frameStats ? m_session.frameStats->input : cv::Size();
        if (input.area() == 0)
            input = vision::FrameDataset::inputSize(m_labels && m_labels->frame_size.area() > 0
                                                        ? m_labels->frame_size
                                                        : cv::Size(640, 480),
                                                    m_session.dataset.frameWidth);
        r.width = input.width;
        r.height = input.height;
        // The camera's full resolution beside it, for the Plan step's choice of input.
        if (m_labels && m_labels->frame_size.area() > 0) {
            const cv::Size full =
                vision::FrameDataset::inputSize(m_labels->frame_size, m_labels->frame_size.width);
            r.alternativeWidth = full.width;
            r.alternativeHeight = full.height;
        }
    } else {
        r.width = m_session.dataset.width;
        r.height = m_session.dataset.height;
    }
    r.deviceBatch = deviceBatch();
    r.budgetBytes = budget;
    return r;
}

void Workflow::requestPlan(const PlanRequest &request)
{
    if (m_planBusy) {
        m_planPending = request;
        return;
    }
    m_planBusy = true;
    QMetaObject::invokeMethod(
        m_planner, [p = m_planner, request] { p->plan(request); }, Qt::QueuedConnection);
}

// ----- training ---------------------------------------------------------------------------------

namespace {

/** What the session keeps of a ranking: the best ClusterPlanRecord::kKept candidates. */
ClusterPlanRecord planRecord(const net::ClusterPlanResult &plan)
{
    ClusterPlanRecord rec;
    rec.objective = plan.objective.name(); // the run's, whatever the page says now
    rec.profilingSeconds = plan.profiling_seconds;
    for (const net::PlanCandidate &c : plan.ranked) {
        if (int(rec.candidates.size()) == ClusterPlanRecord::kKept)
            break;
        rec.candidates.push_back({c.names, net::modeName(c.mode), c.seconds, c.watts, c.joules,
                                  c.edp, net::ClusterPlanner::unsuitable(c, plan.objective),
                                  c.power_known});
    }
    rec.chosen = plan.chosen && !rec.candidates.empty() ? 0 : -1;
    return rec;
}

/** A cluster event for the status bar: "node kind: what happened". */
QString eventMessage(const net::ClusterEvent &e)
{
    return QStringLiteral("%1 %2: %3")
        .arg(e.node.isNone() ? QStringLiteral("cluster") : e.node.name, net::eventKindName(e.kind),
             e.message);
}

QString planMessage(const net::ClusterPlanResult &plan)
{
    if (plan.chosen)
        return QStringLiteral("planner: %1 (%2) is the best of %3 candidates for %4: predicted "
                              "%5 s, %6 W, %7 J")
            .arg(plan.chosen->names.join(u'+'), net::modeName(plan.chosen->mode))
            .arg(plan.ranked.size())
            .arg(plan.objective.name())
            .arg(plan.chosen->seconds, 0, 'f', 1)
            .arg(plan.chosen->watts, 0, 'f', 2)
            .arg(plan.chosen->joules, 0, 'f', 0);
    return !plan.error.isEmpty()
               ? QStringLiteral("planner: %1").arg(plan.error)
               : QStringLiteral("planner: no cluster of these nodes can train within the limits");
}

} // namespace

bool Workflow::buildTrainingSetup(TrainingSetup &s, QStringList &names, QString *why) const
{
    auto refuse = [why](const QString &text) {
        *why = text;
        return false;
    };
    const bool frames = m_session.dataset.kind != QLatin1String("crops");
    if (!m_session.hasDataset())
        return refuse(QStringLiteral("build the dataset first (step 3)"));
    if (frames != (m_session.plan.model == QLatin1String("detector")))
        return refuse(frames ? QStringLiteral("the frame dataset trains the full-frame student: "
                                              "choose the model 'detector' (step 4)")
                             : QStringLiteral("crops train a crop student: build a frame dataset "
                                              "for the detector (step 3)"));
    if (!m_nodes.hasKey())
        return refuse(QStringLiteral("load the cluster key first (step 1)"));
    const auto mode = net::parseMode(m_session.plan.mode);
    if (!mode)
        return refuse(QStringLiteral("unknown mode '%1'").arg(m_session.plan.mode));
    ClusterOptions cluster;
    cluster.key = m_nodes.key();
    cluster.mode = *mode;
    cluster.staleness = m_session.plan.staleness;
    cluster.localSteps = m_session.plan.localSteps;
    for (const auto &[key, n] : m_nodes.all())
        if (n.state == NodeView::State::Paired &&
            (m_session.plan.nodes.isEmpty() || m_session.plan.nodes.contains(n.info.name))) {
            cluster.nodes.append({n.host, n.port});
            names.append(n.info.name);
            const std::int64_t budget = m_session.plan.budgetBytesFor(n.info.name);
            if (budget >= 0)
                cluster.budgetBytes[n.info.name] = budget;
        }
    if (cluster.nodes.isEmpty())
        return refuse(QStringLiteral("no paired node takes part: pair nodes in step 1 and choose "
                                     "them in step 4"));
    if (!m_session.plan.clusterObjective.isEmpty()) {
        QString wrong;
        cluster.objective = net::PlanObjective::parse(m_session.plan.clusterObjective, &wrong);
        if (!cluster.objective)
            return refuse(wrong);
    }
    ClusterJob job;
    try {
        job.spec = planRequestFor(-1).spec();
    } catch (const std::exception &e) {
        return refuse(QString::fromStdString(e.what()));
    }
    job.frames = frames;
    job.seed = std::uint64_t(m_session.dataset.seed);
    job.epochs = m_session.plan.epochs;
    job.batch = m_session.plan.batch;
    job.lr = m_session.plan.lr;
    if (frames) {
        // The detector's training as the CLI's viewpoint trains it by default (FrameTrainOptions):
        // the epoch with the lowest validation loss of the frame dataset (time blocks it does not
        // train on) is kept, and the run ends once `patience` epochs have not lowered it. The
        // crop and Fashion-MNIST models keep their last: their validation set is the test set.
        const vision::FrameTrainOptions defaults;
        job.averageDecay = defaults.average_decay;
        job.keepBest = defaults.keep_best;
        job.patience = defaults.patience;
    }
    job.sessionDir = m_session.dir;
    job.weightsPath = frames ? QString::fromStdString(
                                   vision::StudentTeacher::weightsPath(m_session.dir.toStdString()))
                             : m_session.path(QStringLiteral("student.safetensors"));
    s = clusterSetup(job, cluster);
    return true;
}

bool Workflow::prepareRun(Task task, TrainingSetup &setup, QStringList &names)
{
    if (busy() != Task::None)
        return false;
    QString why;
    if (buildTrainingSetup(setup, names, &why))
        return true;
    Q_EMIT taskFinished(task, false, why);
    return false;
}

void Workflow::startTraining()
{
    TrainingSetup s;
    QStringList names;
    if (!prepareRun(Task::Training, s, names))
        return;
    const net::JobSpec &job = s.job;
    m_session.training = TrainingRecord();
    m_session.training.state = TrainingRecord::State::Running;
    m_session.training.jobId = job.id;
    m_session.training.averageDecay = job.average_decay;
    m_session.training.started = QDateTime::currentDateTimeUtc();
    m_session.training.nodes = names;
    m_session.evaluation.done = false;
    m_session.evaluation.operatingPoint.reset(); // new weights: calibrated again after training
    dropVerifiedDetections();
    m_session.evaluation.result = {};
    // Earlier rounds' verified figures stay; this round's are measured again.
    std::erase_if(m_session.evaluation.verified,
                  [&](const VerifiedRound &v) { return v.round >= m_session.round; });
    m_trainClock.start();
    m_runner.begin(Task::Training);
    saveQuietly();
    Q_EMIT evaluationChanged();

    m_run = new TrainingRun;
    m_run->moveToThread(&m_trainThread);
    connectTrainingRun();
    QMetaObject::invokeMethod(
        m_run, [run = m_run, s] { run->start(s); }, Qt::QueuedConnection);
}

void Workflow::startClusterComparison()
{
    TrainingSetup s;
    QStringList names;
    if (!prepareRun(Task::ClusterPlan, s, names))
        return;
    if (!s.objective) {
        Q_EMIT taskFinished(Task::ClusterPlan, false,
                            QStringLiteral("choose what to compare the clusters by (step 4, "
                                           "\u201cTrain on:\u201d): time, energy, power or EDP"));
        return;
    }
    s.planOnly = true;
    // The session's training record stays as it is: nothing trains, nothing is written.
    m_runner.begin(Task::ClusterPlan);
    m_run = new TrainingRun;
    m_run->moveToThread(&m_trainThread);
    connect(m_run, &TrainingRun::status, this,
            [this](const QString &text) { Q_EMIT taskProgress(Task::ClusterPlan, 0, 0, text); });
    connect(m_run, &TrainingRun::planned, this, [this](const net::ClusterPlanResult &plan) {
        m_clusterPreview = planRecord(plan);
        m_previewRanked = int(plan.ranked.size());
        Q_EMIT clusterPlanChanged();
    });
    // A node lost while profiling is said, as in a run (the comparison goes on without it).
    connect(m_run, &TrainingRun::clusterEvent, this,
            [this](const net::ClusterEvent &e) { Q_EMIT message(eventMessage(e)); });
    connect(m_run, &TrainingRun::done, this, [this](const TrainingOutcome &o) {
        m_run->deleteLater();
        m_run = nullptr;
        QString text;
        if (o.ok && m_clusterPreview && m_clusterPreview->chosen >= 0) {
            const ClusterPlanRecord::Row &c =
                m_clusterPreview->candidates[std::size_t(m_clusterPreview->chosen)];
            text = QStringLiteral("compared %1 clusters by %2 after %3 s of profiling: the best "
                                  "is %4, predicted %5 s (nothing trained)")
                       .arg(m_previewRanked)
                       .arg(m_clusterPreview->objective)
                       .arg(m_clusterPreview->profilingSeconds, 0, 'f', 1)
                       .arg(c.nodes.join(u'+'))
                       .arg(c.seconds, 0, 'f', 1);
        } else {
            text = o.cancelled ? QStringLiteral("comparing clusters stopped")
                               : QStringLiteral("comparing clusters failed: %1").arg(o.error);
        }
        m_runner.end(Task::ClusterPlan);
        Q_EMIT message(text);
        Q_EMIT taskFinished(Task::ClusterPlan, o.ok, text);
    });
    QMetaObject::invokeMethod(
        m_run, [run = m_run, s] { run->start(s); }, Qt::QueuedConnection);
}

void Workflow::connectTrainingRun()
{
    connect(m_run, &TrainingRun::status, this,
            [this](const QString &text) { Q_EMIT taskProgress(Task::Training, 0, 0, text); });
    connect(m_run, &TrainingRun::metrics, this,
            [this](const net::NodeId &node, const net::SystemSample &sample) {
                const net::TrainingStatus st = sample.training.value_or(net::TrainingStatus());
                MetricRow m;
                m.seconds = double(m_trainClock.elapsed()) / 1000.0;
                m.node = node.name;
                m.cpuPercent = sample.cpu_percent;
                m.memoryUsedBytes =
                    double(sample.memory_total_bytes - sample.memory_available_bytes);
                if (sample.agent_rss_bytes > 0)
                    m.processRssBytes = double(sample.agent_rss_bytes);
                // The node's own traffic: on one machine (the demo) the interfaces are shared
                // and loopback is not counted.
                m.rxBytesPerSecond = sample.agent_rx_bytes_per_second;
                m.txBytesPerSecond = sample.agent_tx_bytes_per_second;
                if (sample.power_watts) {
                    m.powerWatts = *sample.power_watts;
                    m.powerMeasured = sample.powerMeasured();
                    m.energyJoules = sample.energy_joules;
                }
                m.phase = st.active ? net::phaseName(st.phase) : QStringLiteral("idle");
                m.epoch = st.epoch;
                m.loss = st.loss;
                m.accuracy = st.accuracy;
                m.imagesPerSecond = st.images_per_second;
                m_session.training.metrics.push_back(m);
                Q_EMIT metricsAdded(m);
            });
    connect(m_run, &TrainingRun::progress, this,
            [this](const net::NodeId &node, const net::TrainingStatus &st) {
                if (st.phase != net::TrainingPhase::Training || st.epoch <= 0)
                    return;
                ProgressRow p;
                p.seconds = double(m_trainClock.elapsed()) / 1000.0;
                p.node = node.name;
                p.epoch = st.epoch;
                p.step = st.step;
                p.loss = st.loss;
                p.accuracy = st.accuracy;
                p.imagesPerSecond = st.images_per_second;
                m_session.training.progress.push_back(p);
                Q_EMIT progressAdded(p);
            });
    connect(m_run, &TrainingRun::epoch, this, [this](const net::ClusterEpoch &e) {
        m_session.training.epochs.push_back(e);
        m_session.training.seconds = double(m_trainClock.elapsed()) / 1000.0;
        saveQuietly(); // an epoch done is never lost
        Q_EMIT taskProgress(
            Task::Training, e.epoch, m_session.plan.epochs,
            QStringLiteral("epoch %1 of %2: loss %3, validation accuracy %4 %, %5 images/s")
                .arg(e.epoch)
                .arg(m_session.plan.epochs)
                .arg(e.train_loss, 0, 'f', 4)
                .arg(e.test_accuracy < 0 ? QStringLiteral("n/a")
                                         : QString::number(100 * e.test_accuracy, 'f', 1))
                .arg(e.images_per_second, 0, 'f', 0));
        Q_EMIT epochFinished(e);
    });
    connect(m_run, &TrainingRun::clusterEvent, this, [this](const net::ClusterEvent &e) {
        m_session.training.events.push_back(e);
        Q_EMIT clusterEvent(e);
        Q_EMIT message(eventMessage(e));
    });
    connect(m_run, &TrainingRun::planned, this, [this](const net::ClusterPlanResult &plan) {
        m_clusterPreview.reset(); // this run's ranking is the newer one
        const ClusterPlanRecord rec = planRecord(plan);
        m_session.training.plan = rec;
        if (plan.chosen)
            m_session.training.nodes = plan.chosen->names; // the nodes that train
        saveQuietly();
        Q_EMIT clusterPlanChanged();
        Q_EMIT message(planMessage(plan));
    });
    connect(m_run, &TrainingRun::done, this, [this](const TrainingOutcome &o) {
        auto &t = m_session.training;
        if (t.plan) {
            t.plan->measuredSeconds = o.trainingSeconds;
            t.plan->measuredJoules = o.trainingJoules;
            Q_EMIT clusterPlanChanged();
        }
        t.seconds = o.seconds;
        t.error = o.error;
        t.state = o.ok          ? TrainingRecord::State::Finished
                  : o.cancelled ? TrainingRecord::State::Stopped
                                : TrainingRecord::State::Failed;
        if (o.weightsSaved) {
            t.weights = QFileInfo(m_run->weightsPath()).fileName();
            t.keptEpoch = o.keptEpoch;
        }
        const int jobEpochs = m_run->setup().job.epochs, patience = m_run->setup().patience;
        m_run->deleteLater();
        m_run = nullptr;
        QString planned;
        if (t.plan && t.plan->chosen >= 0 && t.plan->measuredSeconds > 0)
            planned = QStringLiteral("; on %1 as planned: %2 s of training (predicted %3 s)")
                          .arg(t.plan->candidates[std::size_t(t.plan->chosen)].nodes.join(u'+'))
                          .arg(t.plan->measuredSeconds, 0, 'f', 1)
                          .arg(t.plan->candidates[std::size_t(t.plan->chosen)].seconds, 0, 'f', 1);
        const QString text =
            o.ok ? QStringLiteral("training finished: %1 epochs in %2 s%3%4")
                       .arg(o.endedEarlyEpoch > 0
                                ? QStringLiteral("%1 of %2").arg(t.epochs.size()).arg(jobEpochs)
                                : QString::number(t.epochs.size()))
                       .arg(o.seconds, 0, 'f', 1)
                       .arg(t.keptEpoch > 0
                                ? (t.averageDecay > 0
                                       ? QStringLiteral("; kept the moving average of the "
                                                        "weights at epoch %1 (the lowest "
                                                        "validation loss)")
                                       : QStringLiteral("; kept the weights of epoch %1 (the "
                                                        "lowest validation loss)"))
                                          .arg(t.keptEpoch) +
                                      (o.endedEarlyEpoch > 0
                                           ? QStringLiteral("; ended early: none of the last %1 "
                                                            "epochs lowered it")
                                                 .arg(patience)
                                           : QString())
                                : QString(),
                            planned)
            : o.cancelled ? QStringLiteral("training stopped after %1 %2")
                                .arg(t.epochs.size())
                                .arg(t.epochs.size() == 1 ? QStringLiteral("epoch")
                                                          : QStringLiteral("epochs"))
                          : QStringLiteral("training failed: %1").arg(o.error);
        finishTask(Task::Training, o.ok, text);
        // A finished run is evaluated at once: that is what the user trained for.
        if (o.ok && o.weightsSaved && m_labels)
            startEvaluation();
    });
}

void Workflow::stopTraining()
{
    if (m_run)
        QMetaObject::invokeMethod(
            m_run, [run = m_run] { run->stop(); }, Qt::QueuedConnection);
}

// ----- evaluation -------------------------------------------------------------------------------

void Workflow::startEvaluation()
{
    if (busy() != Task::None)
        return;
    if (!m_labels || m_session.training.weights.isEmpty()) {
        Q_EMIT taskFinished(Task::Evaluation, false,
                            QStringLiteral("train the student first (step 5)"));
        return;
    }
    m_runner.run(
        Task::Evaluation,
        [task = EvaluationTask(m_session, m_labels, m_verification.truth())](
            const TaskRunner::Report &report, const std::atomic<bool> *stop) {
            return task.run(report, stop);
        },
        [this](const EvaluationOutcome &out) {
            if (!out.result)
                return finishTask(Task::Evaluation, false,
                                  QStringLiteral("evaluation: ") + out.error);
            EvaluationRecord &e = m_session.evaluation;
            e.done = true;
            e.result = *out.result;
            if (out.operating_point) {
                e.operatingPoint = out.operating_point;
                e.operatingPointAgainst = out.operating_point_against;
            }
            if (out.detections) {
                m_verifiedDetections = out.detections;
                QString error;
                if (!out.detections->save(m_session.dir, &error))
                    Q_EMIT message(error);
                e.student_fps = out.student_fps;
                e.teacher_fps = out.teacher_fps;
                e.motion_fps = out.motion_fps;
                // Scored against the truth as it is now: frames verified while it ran count.
                applyVerifiedRound();
            }
            Q_EMIT evaluationChanged();
            finishTask(Task::Evaluation, true, EvaluationTask::summary(out));
        });
}

bool Workflow::canSelfTrain() const
{
    return busy() == Task::None && m_session.dataset.kind != QLatin1String("crops") && m_labels &&
           !m_session.training.weights.isEmpty() &&
           m_session.training.state == TrainingRecord::State::Finished;
}

void Workflow::startSelfTrainingRound()
{
    if (busy() != Task::None)
        return;
    m_trainAfterSelfTraining = true;
    startSelfTraining();
}

void Workflow::startSelfTraining()
{
    if (busy() != Task::None)
        return;
    const bool chain = std::exchange(m_trainAfterSelfTraining, false);
    if (!canSelfTrain()) {
        Q_EMIT taskFinished(Task::SelfTraining, false,
                            QStringLiteral("self-training needs a trained full-frame student "
                                           "(frame dataset, model 'detector', step 5)"));
        return;
    }
    m_runner.run(
        Task::SelfTraining,
        [task = SelfTrainingTask(m_session, m_labels)](const TaskRunner::Report &report,
                                                       const std::atomic<bool> *stop) {
            return task.run(report, stop);
        },
        [this, chain](const SelfTrainingOutcome &out) {
            if (!out.labels) {
                // Failed after the dataset was replaced (labels.json not written), the session
                // goes on as it would reopen.
                const QString dropped = m_session.reconcile(m_labels.get());
                if (!dropped.isEmpty())
                    Q_EMIT datasetChanged();
                return finishTask(
                    Task::SelfTraining, false,
                    QStringLiteral("self-training: ") + out.error +
                        (dropped.isEmpty() ? QString() : QStringLiteral("; ") + dropped));
            }
            m_labels = out.labels;
            m_session.frameStats = out.frameStats;
            m_session.round = out.labels->round;
            Q_EMIT labelsChanged();
            Q_EMIT datasetChanged();
            Q_EMIT roundChanged(m_session.round);
            finishTask(Task::SelfTraining, true, SelfTrainingTask::summary(out, m_session.round));
            if (chain)
                startTraining(); // round N trains on the renewed labels; evaluated when done
        });
}

} // namespace edgetrain::app

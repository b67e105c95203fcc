#include "trainingrun.h"

#include "core/error.h"
#include "vision/cropdataset.h"
#include "vision/framedataset.h"

namespace edgetrain::app {

namespace {

using Splits = std::pair<std::shared_ptr<const core::TensorDataset>,
                         std::shared_ptr<const core::TensorDataset>>;

/** The session's built dataset: its train and validation splits (validation null when there is
 *  none). Throws when it cannot be read or its train split is empty. */
Splits loadSessionData(const TrainingSetup &s)
{
    std::shared_ptr<const core::TensorDataset> train, validation;
    const std::string dir = s.sessionDir.toStdString();
    if (s.frames) {
        // Labels of the spec's width (DetectionLoss), shipped like the crops.
        train = std::make_shared<core::TensorDataset>(
            vision::FrameDataset::load(dir, vision::Split::Train, s.maxObjects));
        bool anyValidation = false;
        for (const vision::FrameSample &f : vision::FrameDataset::index(dir))
            anyValidation |= f.split == vision::Split::Validation;
        if (anyValidation)
            validation = std::make_shared<core::TensorDataset>(
                vision::FrameDataset::load(dir, vision::Split::Validation, s.maxObjects));
    } else {
        train = std::make_shared<core::TensorDataset>(
            vision::CropDataset::load(dir, vision::Split::Train));
        validation = std::make_shared<core::TensorDataset>(
            vision::CropDataset::load(dir, vision::Split::Validation));
    }
    if (train->size() == 0)
        throw core::Error("the dataset's train split is empty");
    return {train, validation};
}

} // namespace

void TrainingRun::start(const TrainingSetup &s)
{
    m_setup = s;
    m_clock.start();
    Splits data{s.trainData, s.validationData};
    if (s.shipData && !data.first) {
        try {
            Q_EMIT status(QStringLiteral("loading the dataset"));
            data = loadSessionData(s);
        } catch (const std::exception &e) {
            return end({false, false, QString::fromStdString(e.what())});
        }
    }
    const auto &[train, validation] = data;
    m_coordinator = new net::TrainingCoordinator(s.job, s.key, this);
    if (s.shipData)
        m_coordinator->setData(train, validation && validation->size() > 0 ? validation : nullptr);
    m_coordinator->setRejoin(s.rejoin);
    m_coordinator->setMemoryBudgets(s.budgetBytes);
    m_coordinator->setKeepBest(s.keepBest);
    m_coordinator->setPatience(s.patience);
    connect(m_coordinator, &net::TrainingCoordinator::nodeMetrics, this, &TrainingRun::metrics);
    connect(m_coordinator, &net::TrainingCoordinator::nodeProgress, this, &TrainingRun::progress);
    connect(m_coordinator, &net::TrainingCoordinator::epochFinished, this, &TrainingRun::epoch);
    connect(m_coordinator, &net::TrainingCoordinator::clusterEvent, this,
            &TrainingRun::clusterEvent);
    connect(m_coordinator, &net::TrainingCoordinator::finished, this, &TrainingRun::onFinished);
    connect(m_coordinator, &net::TrainingCoordinator::trainingStarted, this, [this] {
        m_trainingStart = double(m_clock.elapsed()) / 1000.0;
        Q_EMIT trainingStarted();
    });
    connect(m_coordinator, &net::TrainingCoordinator::epochFinished, this,
            [this] { m_lastEpochEnd = double(m_clock.elapsed()) / 1000.0; });
    connect(m_coordinator, &net::TrainingCoordinator::nodeMetrics, this,
            [this](const net::NodeId &node, const net::SystemSample &m) {
                if (m.power_watts)
                    m_energy[node.name].add(double(m_clock.elapsed()) / 1000.0, m.energy_joules);
            });
    if (s.selection) {
        m_coordinator->setLinkProbe(true);
        m_coordinator->setLinkRates(s.linkRates);
        m_coordinator->setSelection(s.selection);
    } else if (s.objective) {
        m_coordinator->setLinkProbe(true);
        // It plans for the job's mode (planCluster below).
        m_coordinator->setLinkRates(net::needsLinkRates({m_setup.job.mode}));
        m_coordinator->setSelection([this](const std::vector<net::ReadyNode> &nodes) {
            std::vector<std::pair<QString, QCborMap>> ready;
            for (const auto &n : nodes)
                ready.emplace_back(n.node.name, n.ready);
            const net::ClusterPlanResult plan =
                net::planCluster(ready, m_setup.job, *m_setup.objective, {m_setup.job.mode});
            std::vector<int> keep;
            if (plan.chosen) {
                keep = plan.chosen->devices;
                m_chosen = plan.chosen->names;
                Q_EMIT status(QStringLiteral("the planner ranked %1 candidates by %2 and chose %3: "
                                             "predicted %4 s, %5 W, %6 J")
                                  .arg(plan.ranked.size())
                                  .arg(m_setup.objective->name(), plan.chosen->names.join(u'+'))
                                  .arg(plan.chosen->seconds, 0, 'f', 1)
                                  .arg(plan.chosen->watts, 0, 'f', 2)
                                  .arg(plan.chosen->joules, 0, 'f', 0));
            }
            if (!plan.chosen)
                m_planError = plan.error.isEmpty()
                                  ? QStringLiteral("the planner found no cluster of these nodes "
                                                   "that can train within the limits")
                                  : QStringLiteral("the planner: %1").arg(plan.error);
            m_planned = true;
            Q_EMIT planned(plan);
            if (m_setup.planOnly)
                return std::vector<int>(); // compared, not trained: every node is released
            return keep;
        });
    }
    Q_EMIT status(s.nodes.size() == 1
                      ? QStringLiteral("connecting to 1 node")
                      : QStringLiteral("connecting to %1 nodes").arg(s.nodes.size()));
    m_pending = int(s.nodes.size());
    for (const auto &[host, port] : s.nodes) {
        auto *c = new net::ControlClient(host, port, s.key, m_coordinator);
        connect(c, &net::ControlClient::ready, this, [this, c](const net::NodeInfo &node) {
            Q_EMIT nodeReady(node, c->address());
            if (--m_pending == 0 && !m_started) {
                m_started = true;
                Q_EMIT status(QStringLiteral("shipping the data and the job"));
                Q_EMIT jobStarting();
                m_coordinator->start(m_clients);
            }
        });
        connect(c, &net::ControlClient::failed, this, [this](const QString &reason) {
            if (!m_started && m_coordinator) {
                Q_EMIT nodeUnreachable(reason);
                abort(QStringLiteral("cannot start: %1").arg(reason));
            }
        });
        c->connectToNode();
        m_clients.append(c);
    }
}

void TrainingRun::stop()
{
    m_stopping = true;
    if (m_started && m_coordinator)
        m_coordinator->stop();
    else if (m_coordinator)
        abort(QStringLiteral("stopped before the nodes had started"), true);
}

void TrainingRun::abort(const QString &error, bool cancelled)
{
    if (!m_coordinator)
        return;
    for (net::ControlClient *c : std::as_const(m_clients))
        c->close();
    m_coordinator->deleteLater();
    m_coordinator = nullptr;
    m_clients.clear();
    end({false, cancelled, error});
}

void TrainingRun::onFinished()
{
    const net::ClusterResult &r = m_coordinator->result();
    TrainingOutcome o;
    o.ok = r.error.isEmpty() && !r.cancelled;
    o.cancelled = r.cancelled || m_stopping;
    o.error = r.error;
    o.endedEarlyEpoch = r.ended_early_epoch;
    if (!r.weights.empty() && !m_setup.weightsPath.isEmpty()) {
        try {
            net::saveClusterWeights(m_setup.spec, m_setup.job.seed, r.weights,
                                    m_setup.weightsPath.toStdString());
            o.weightsSaved = true;
            o.keptEpoch = r.best_epoch;
        } catch (const std::exception &e) {
            o.ok = false;
            o.error = QStringLiteral("the trained weights could not be saved: %1")
                          .arg(QString::fromStdString(e.what()));
        }
    }
    if (m_setup.planOnly) {
        // Nothing trained, by design: the ranking is the result (planned()), or why none.
        o.ok = m_planned && m_planError.isEmpty() && r.error.isEmpty() && !o.cancelled;
        if (!o.ok && o.error.isEmpty() && !o.cancelled)
            o.error =
                m_planError.isEmpty() ? QStringLiteral("the nodes were not profiled") : m_planError;
    } else if (m_setup.objective && r.epochs.empty() && r.error.isEmpty() && !r.cancelled) {
        o.ok = false;
        o.error = m_planError.isEmpty() ? QStringLiteral("nothing was trained") : m_planError;
    }
    if (m_setup.objective && m_trainingStart >= 0 && m_lastEpochEnd > m_trainingStart) {
        o.trainingSeconds = m_lastEpochEnd - m_trainingStart;
        double joules = 0.0;
        bool any = false;
        for (const auto &[node, trace] : m_energy)
            if (m_chosen.contains(node)) {
                joules += trace.between(m_trainingStart, m_lastEpochEnd);
                any = true;
            }
        if (any)
            o.trainingJoules = joules;
    }
    m_result = r;
    m_coordinator->deleteLater();
    m_coordinator = nullptr;
    end(o);
}

void TrainingRun::end(TrainingOutcome o)
{
    o.seconds = double(m_clock.elapsed()) / 1000.0;
    Q_EMIT done(o);
}

} // namespace edgetrain::app

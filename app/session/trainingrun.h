#pragma once

#include "core/energytrace.h"
#include "core/modelspec.h"
#include "net/planner/clusterplanner.h"
#include "net/protocol/controlclient.h"
#include "net/training/job.h"
#include "net/training/trainingcoordinator.h"

#include <QElapsedTimer>
#include <QList>
#include <QObject>
#include <QPair>
#include <QString>

#include <cstdint>
#include <map>
#include <memory>

namespace edgetrain::app {

/** Everything one cluster run needs, copied out of the session on the GUI thread. */
struct TrainingSetup
{
    net::JobSpec job;
    QByteArray key;                              // the cluster key
    QList<QPair<QString, quint16>> nodes;        // control addresses of the nodes taking part
    std::map<QString, std::int64_t> budgetBytes; // memory budget by node name
    QString sessionDir;                          // holds the built dataset
    bool frames = false; // frames/ (FrameDataset) rather than dataset/ (crops)
    int maxObjects = 32; // frames: label boxes per sample (the spec's loss)
    // The data shipped to the nodes: sessionDir's built dataset, or `trainData` and
    // `validationData` (may be null) when trainData is set. shipData false: nothing is shipped,
    // the nodes read their own copies of job.dataset (the CLI's train without --ship-data).
    bool shipData = true;
    std::shared_ptr<const core::TensorDataset> trainData, validationData;
    QString weightsPath;   // where the trained weights are written; empty: not written here
    bool keepBest = false; // the lowest-validation-loss epoch's weights, not the last's
    int patience = 0;      // keepBest: end after this many epochs without a lower one (0: never)
    core::ModelSpec spec;
    // Set: every node profiles the job and the run trains on the cluster best for this
    // objective (in the job's mode); the others are released.
    std::optional<net::PlanObjective> objective;
    // With an objective: profile and rank only (the Plan step's comparison); every node is
    // released once the planner has ranked them, nothing trains and no weights are written.
    bool planOnly = false;
    // Set (instead of an objective): chooses who trains once every node has profiled the job,
    // as TrainingCoordinator::setSelection says (the CLI's own planner); the nodes probe their
    // links for it, and time the links' rates with `linkRates`.
    net::TrainingCoordinator::Selection selection;
    bool linkRates = false;
    bool rejoin = true; // lost nodes are called back and rejoin at the next epoch
};

/** How a run ended. `weightsSaved`: the trained weights are at TrainingSetup::weightsPath (with
 *  no path they are not written; TrainingRun::result() holds them). */
struct TrainingOutcome
{
    bool ok = false;
    bool cancelled = false;
    QString error;
    double seconds = 0.0;
    bool weightsSaved = false;
    int keptEpoch = 0;       // keepBest: the epoch whose weights were saved (0: the last)
    int endedEarlyEpoch = 0; // patience: the epoch after which the run ended (0: it ran them all)
    // With an objective: the chosen cluster's training (first group to last epoch), and its
    // devices' energy over that time (-1: not measured).
    double trainingSeconds = -1.0, trainingJoules = -1.0;
};

/**
 * One cluster run, on the training thread (the Workflow moves it there): the coordinator and its
 * connections live on that thread, so the parameter server, the barriers and the data shipment
 * never touch the GUI thread. Call start() and stop() on the run's thread (queued). Every run ends
 * with exactly one done(), also when the dataset cannot be read or a node cannot be reached.
 */
class TrainingRun : public QObject
{
    Q_OBJECT

public:
    /** Loads the dataset, connects to the nodes, and starts the job once all of them answer. */
    void start(const TrainingSetup &setup);
    /** Stops the run: the nodes finish their step; done() reports it as cancelled. */
    void stop();
    QString weightsPath() const { return m_setup.weightsPath; }
    const TrainingSetup &setup() const { return m_setup; }
    /** The coordinator's result, read on the run's thread: growing while the run goes, the
     *  final one from done() on (empty when the job never started). */
    const net::ClusterResult &result() const
    {
        return m_coordinator ? m_coordinator->result() : m_result;
    }

Q_SIGNALS:
    void status(const QString &text);
    void metrics(const edgetrain::net::NodeId &node, const edgetrain::net::SystemSample &sample);
    /** A node's training progress: twice a second at most, and at the end of every epoch. */
    void progress(const edgetrain::net::NodeId &node, const edgetrain::net::TrainingStatus &status);
    void epoch(const edgetrain::net::ClusterEpoch &epoch);
    void clusterEvent(const edgetrain::net::ClusterEvent &event);
    void done(const edgetrain::app::TrainingOutcome &outcome);
    /** A node answered with the cluster key, at its control address (before the job starts). */
    void nodeReady(const edgetrain::net::NodeInfo &node, const QString &address);
    /** A node could not be reached or refused the key, in the node client's words: the run
     *  ends (done(), its error saying it could not start) without starting the job. */
    void nodeUnreachable(const QString &reason);
    /** Every node answered: the job (and the data) go out now. */
    void jobStarting();
    /** The first group formed: training proper begins (loading, profiling, planning are over). */
    void trainingStarted();
    /** With an objective: the plan, once every node has profiled the job (before training). */
    void planned(const edgetrain::net::ClusterPlanResult &plan);

private:
    void abort(const QString &error, bool cancelled = false);
    void onFinished();
    void end(TrainingOutcome outcome);

    TrainingSetup m_setup;
    net::TrainingCoordinator *m_coordinator = nullptr;
    QList<net::ControlClient *> m_clients;
    int m_pending = 0; // nodes not connected yet
    bool m_started = false;
    bool m_stopping = false;
    QElapsedTimer m_clock;
    double m_trainingStart = -1.0, m_lastEpochEnd = -1.0; // on m_clock, seconds
    QStringList m_chosen;                                 // names of the chosen nodes
    QString m_planError;                                  // why the planner chose nothing
    bool m_planned = false;                               // the planner ranked the nodes
    std::map<QString, core::EnergyTrace> m_energy;        // by node name
    net::ClusterResult m_result;                          // kept once the coordinator is gone
};

} // namespace edgetrain::app

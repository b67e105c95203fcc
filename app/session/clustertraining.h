#pragma once

#include "app/session/tiling.h"
#include "core/modelspec.h"
#include "net/planner/clusterplanner.h"
#include "net/training/job.h"
#include "net/training/trainingcoordinator.h"
#include "trainingrun.h"

#include <QByteArray>
#include <QList>
#include <QPair>
#include <QString>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>

namespace edgetrain::app {

/** Where and how a run trains across nodes: what the window's Nodes and Plan steps hold, and
 *  what `edgetrain-cli`'s --nodes / --discover / --key-file / --mode give. */
struct ClusterOptions
{
    QList<QPair<QString, quint16>> nodes; // control addresses of the nodes taking part
    QByteArray key;                       // the cluster key
    net::TrainingMode mode = net::TrainingMode::Sync;
    int staleness = 4;                           // async
    int localSteps = 8;                          // local-sgd
    int collectiveTimeout_ms = 5000;             // a peer silent this long counts as lost
    std::map<QString, std::int64_t> budgetBytes; // memory budget by node name
    /** Set: every node profiles the job and the run trains on the best cluster for it. */
    std::optional<net::PlanObjective> objective;
    /** Each node's early stages as a fused tile group (resolveTiling: for its part of the batch
     *  within the smallest of the budgets). */
    TilingRequest tiling;
};

/** What is trained: the model, its dataset in the session folder, and the optimiser's numbers. */
struct ClusterJob
{
    core::ModelSpec spec;
    bool frames = false; // the frame dataset (frames/) and the detector, else crops (dataset/)
    int epochs = 1;
    std::int64_t batch = 12; // global
    double lr = 0.02;
    std::uint64_t seed = 1; // the weights' initialisation and the shuffling
    /** frames: a moving average of the weights (0: none), and the best epoch by validation
     *  loss kept, ending `patience` epochs after it (0: every epoch). */
    double averageDecay = 0.0;
    bool keepBest = false;
    int patience = 0;
    QString sessionDir;  // holds the built dataset
    QString weightsPath; // where the trained weights are written
    QString idPrefix = QStringLiteral("session");
};

/** Sets the job's tiling for a request (resolveTiling): each of `nodes` nodes with its part of
 *  the batch within the smallest of `budgets`; in sync mode on more than one node the nodes split
 *  the tiles (JobSpec::tiles_across). Throws core::SpecError where it cannot be met. */
void applyTiling(net::JobSpec &job, const core::ModelSpec &spec, qsizetype nodes,
                 const std::map<QString, std::int64_t> &budgets, const TilingRequest &request);

/** The cluster run's setup: the job the nodes get (the detector trains as
 *  FrameStudentTrainer trains it: cosine from the peak, its weight decay), the nodes and key.
 *  The one place a session's training becomes a net::JobSpec, for the window and the CLI. */
TrainingSetup clusterSetup(const ClusterJob &job, const ClusterOptions &cluster);

/** Progress of a blocking cluster run; every member may be empty. */
struct ClusterCallbacks
{
    std::function<void(const QString &text)> status;
    std::function<void(const net::ClusterEpoch &epoch)> epoch;
    std::function<void(const net::ClusterEvent &event)> event;
    std::function<void(const net::ClusterPlanResult &plan)> planned;
    std::function<void()> stopping; // the stop token was seen: the nodes finish their step
    /** Called with the run before it starts, to connect more of its signals (the CLI's live
     *  figures and its copy of the final result at done()); the run lives until trainOnCluster
     *  returns. */
    std::function<void(TrainingRun &run)> watch;
};

/**
 * Runs `setup` through TrainingRun (what the window's training step runs on its thread) on the
 * calling thread, in a local event loop, and returns how it ended. `stop` (may be null) is
 * polled every 100 ms: the nodes finish their step and the outcome says cancelled. Never
 * throws: an unreadable dataset or an unreachable node is the outcome's error.
 */
TrainingOutcome trainOnCluster(const TrainingSetup &setup, const ClusterCallbacks &callbacks,
                               const std::atomic<bool> *stop);

} // namespace edgetrain::app

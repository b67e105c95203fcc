#pragma once

#include "app/session/clustertraining.h"
#include "clicontext.h"
#include "core/trainer.h"

namespace edgetrain::app {

/** What `train` has parsed that a cluster run needs besides its own options. */
struct ClusterTrainSettings
{
    core::ModelSpec spec;
    core::TrainOptions options;
    std::string dataset;
    std::string data_dir;
    std::int64_t train_limit = 0;
    std::int64_t test_limit = 0;
    std::int64_t budget_bytes = -1; // per node; -1: none
    double average_decay = 0.0;     // the weights' moving average; 0: none
    std::string save_path;
    bool plan_only = false; // `plan`: profile and predict, train nothing
};

/** Where and how to train across nodes: --nodes, --discover (with --probe, --discovery-port,
 *  --timeout), --key-file, --mode, --staleness, --local-steps, --collective-timeout (its
 *  default: `collectiveTimeout`). Shared by every command that trains on nodes. */
void addNodeOptions(CliContext &cli, const QString &collectiveTimeout);
/** --nodes and --discover (with their help texts), --probe, --discovery-port and --timeout: the
 *  flags resolveNodes reads. */
void addDiscoveryOptions(CliContext &cli, const char *nodesHelp, const char *discoverHelp);
/** host:port of the nodes: --nodes as given, or the first --discover N that answer discovery
 *  (--probe, --discovery-port, --timeout). Throws UsageError for a bad flag, core::IoError when
 *  too few nodes answer. */
QList<QPair<QString, quint16>> resolveNodes(CliContext &cli);
/** addNodeOptions' flags as the session's ClusterOptions: the key read, the nodes resolved
 *  (--discover listens now). Throws UsageError for a bad flag, core::IoError for a key that
 *  cannot be read or nodes that do not answer. */
ClusterOptions clusterOptions(CliContext &cli);
/** Adds train's cluster options: addNodeOptions, and --exchange, --pipeline, --ship-data,
 *  --no-rejoin. */
void addClusterOptions(CliContext &cli);
bool wantsCluster(const CliContext &cli);
/** `train` across nodes: connects, sends the job, prints per-node metrics and the epochs,
 *  reports lost nodes; returns the exit status. */
int runClusterTraining(CliContext &cli, const ClusterTrainSettings &settings);

} // namespace edgetrain::app

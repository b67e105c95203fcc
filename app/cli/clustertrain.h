#pragma once

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

/** Adds train's cluster options (--nodes, --discover, --key-file, --mode, ...). */
void addClusterOptions(CliContext &cli);
bool wantsCluster(const CliContext &cli);
/** `train` across nodes: connects, sends the job, prints per-node metrics and the epochs,
 *  reports lost nodes; returns the exit status. */
int runClusterTraining(CliContext &cli, const ClusterTrainSettings &settings);

} // namespace edgetrain::app

#pragma once

#include "core/flatstate.h"
#include "core/lrschedule.h"
#include "core/model.h"
#include "core/sgd.h"
#include "core/tensordataset.h"
#include "core/weightaverage.h"
#include "net/training/job.h"

#include <memory>
#include <optional>

namespace edgetrain::net {
struct WorkerContext;
}

namespace edgetrain::net::worker {

/** What a job trains on this node: its model with the optimizer, the flat view the
 *  collectives exchange, the weight average (job.average_decay > 0), the rate schedule, and the
 *  data. `flat` refers to `model` and `optimizer`, which stay where they are when this moves. */
struct LoadedJob
{
    std::unique_ptr<core::Model> model;
    std::unique_ptr<core::Sgd> optimizer;
    std::unique_ptr<core::FlatState> flat;
    std::optional<core::WeightAverage> average;
    core::LrSchedule schedule;
    std::shared_ptr<const core::TensorDataset> train, test;
};

/** Builds a job's model and optimizer and finds its data: shipped to this node (the context's
 *  datasets) or Fashion-MNIST read from the node's data directory. */
class JobLoader
{
public:
    /** Throws core::Error if the shipment has not arrived or the data cannot be read,
     *  core::ShapeError if the data does not fit the model. */
    static LoadedJob load(const JobSpec &job, const WorkerContext &context);
};

} // namespace edgetrain::net::worker

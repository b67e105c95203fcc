#pragma once

#include "core/model.h"
#include "core/trainer.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/training/job.h"
#include "net/training/joblink.h"
#include "net/training/trainingworker.h"
#include "net/training/worker/epochtally.h"
#include "net/training/worker/jobloader.h"
#include "net/training/worker/memoryguard.h"
#include "net/training/worker/phaseclock.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace edgetrain::net::worker {

/**
 * The state of one job on one node that its parts share: what was loaded, the memory guard,
 * where training stands (step, epochs done, the epoch's order) and the epoch's sums, and the
 * node's status as its metrics report it. The modes, the group session and the end of an epoch
 * each hold a reference to it; all run on the worker's thread.
 */
struct WorkerState
{
    using StatusUpdate = std::function<void(const std::function<void(TrainingStatus &)> &)>;

    /** `setStatus` changes the node's status, `status` reads it (both thread-safe). */
    WorkerState(const JobSpec &job, JobLink &link, const WorkerContext &context,
                StatusUpdate setStatus, std::function<TrainingStatus()> status);

    const JobSpec &job;
    JobLink &link;
    const WorkerContext &context;
    StatusUpdate setStatus;
    std::function<TrainingStatus()> status;

    LoadedJob loaded;
    std::optional<MemoryGuard> memory; // from load() on

    std::unique_ptr<core::BatchOrder> order;
    int orderEpoch = 0;
    // Position, global (all ranks) in sync and local-sgd.
    std::int64_t step = 0;
    std::int64_t epochsDone = 0;
    std::int64_t batches = 0; // global batches per epoch
    std::int64_t totalSteps = 0;
    // The current epoch's sums: `tally` global in sync and local-sgd, `pending` this node's
    // own that are not yet shared (local-sgd, async).
    EpochTally tally, pending;
    // This node's compute over the epoch: its speed.
    double computeSeconds = 0.0, computed = 0.0;
    Clock::time_point epochStart = Clock::now();
    Clock::time_point lastProgress = Clock::now();
    std::vector<float> buffer; // the collectives' scratch
    std::vector<std::int32_t> labels;

    /** Loads the job (JobLoader), sets up the memory guard and the epochs' order. */
    void load();
    void setPhase(TrainingPhase phase);

    /** Sends a request to the coordinator and reads its answer. Throws LinkError as
     *  JobLink::request does, core::FormatError if the answer is not a TrainingReply. */
    TrainingReply ask(const QString &type, const QCborMap &body);

    /** Forward and backward on `count` samples of the training set; the memory guard checks
     *  after it. */
    core::StepResult compute(const std::int64_t *indices, std::int64_t count);
    /** The learning rate at the current step. */
    double rate() const;
    /** Moves the order to `epoch` (1-based), rebuilding it to go back. */
    void seekEpoch(int epoch);
    /** A step's figures in the status; posted as progress at most every half second. */
    void report(double loss, double accuracy);
    /** Posts the status as progress now (every epoch's end reaches the charts). */
    void postProgress();
    /** This node's images per second of compute over the epoch (0: none yet). */
    double computeSpeed() const;
    void startEpochCounters();

    /** Runs f with the weight average (when there is one) in the model's place. */
    template <typename F> auto withAverage(F &&f)
    {
        struct Swap
        {
            std::optional<core::WeightAverage> &a;
            core::Model &m;
            bool on;
            ~Swap()
            {
                if (on)
                    a->swap(m);
            }
        } swapped{loaded.average, *loaded.model, loaded.average && loaded.average->updates() > 0};
        if (swapped.on)
            loaded.average->swap(*loaded.model);
        return f();
    }
};

} // namespace edgetrain::net::worker

#pragma once

#include "core/model.h"
#include "net/protocol/messages/profilereport.h"
#include "net/training/job.h"
#include "net/training/joblink.h"
#include "net/training/worker/jobloader.h"
#include "net/training/worker/memoryguard.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace edgetrain::net {
struct WorkerContext;
}

namespace edgetrain::net::worker {

/**
 * What the node tells the coordinator before it joins: for the planner, the time per step at a
 * small batch and at the largest one it could get, an optimizer update, evaluation per sample,
 * the largest batch its memory takes, its power, its link and its exchange (LinkTurn: as soon as
 * no other node is measuring its link - first, between the timings, else after them). Timed on
 * a model of its own with the job's spec and data: profiling must not move the job's weights or
 * batch-norm statistics.
 */
class DeviceProfiler
{
public:
    /** `loaded` and `memory` are the job's; the guard remembers the largest local batch. */
    DeviceProfiler(const JobSpec &job, const WorkerContext &context, JobLink &link,
                   const LoadedJob &loaded, MemoryGuard &memory);

    /** The speed the coordinator splits the first epoch by (images/s): at a part of 16 (the
     *  large batch if smaller), read off the line through the report's two points. */
    static double typicalImagesPerSecond(const ProfileReport &report);

    /** Profiles the device (a few seconds). Throws what the model's passes throw; the link's
     *  and the exchange's failures are in the report instead. */
    ProfileReport run();

private:
    /** How long the timings' windows are (seconds), for the device's CPU quota. */
    struct Windows
    {
        bool quota = false;
        double period = 0.1;
        double min = 0.2;      // each timing's window
        double exchange = 0.2; // the exchange's three windows on the device
        double pair = 0.15;    // the exchange's windows against the coordinator
        double half = 0.1;     // the update's and evaluation's
    };
    static Windows windowsFor(const WorkerContext &context);

    void exchangeOnDevice(ProfileReport &report) const;
    /** The two batches the compute line goes through, within what the budget takes. */
    std::pair<std::int64_t, std::int64_t> batchesFor(std::int64_t maxBatch) const;
    /** Seconds per gather + forward + backward at batch `b` under its memory plan. */
    double timeSteps(core::Model &probe, std::int64_t b);
    /** Seconds per `work`, after a first touch, over at least the job's profile steps. */
    double timeRepeated(const std::function<void()> &work) const;
    /** An optimizer update with what a step does besides: the gradients out to the exchange's
     *  buffer, weighted by the rank's part, and back. */
    double timeUpdate(core::Model &probe) const;

    const JobSpec &m_job;
    const WorkerContext &m_context;
    JobLink &m_link;
    const LoadedJob &m_loaded;
    MemoryGuard &m_memory;
    Windows m_windows;
    int m_steps;                       // passes timed at least
    std::vector<std::int64_t> m_index; // the samples the steps gather
    std::vector<std::int32_t> m_labels;
};

} // namespace edgetrain::net::worker

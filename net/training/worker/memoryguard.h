#pragma once

#include "core/memoryplanner.h"
#include "core/model.h"
#include "core/schedule.h"
#include "net/agent/jobmemorylimit.h"
#include "net/training/job.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace edgetrain::net::worker {

/**
 * A job's memory on this node: the budget a step plans within (the job's, else the node's
 * --memory-limit), the plan for this rank's part of a batch, and the limit held on what the
 * job grows the process by, so that a plan that under-counts, or a device too small for the
 * job, ends the job with a JobMemoryError on this node instead of the OOM killer taking the
 * agent.
 *
 * Fault injection for the tests of that limit: EDGETRAIN_FAULT_JOB_GROWTH_BYTES in the node's
 * environment makes every training step (afterStep()) keep that many more bytes until the job
 * ends, as a plan that under-counts would.
 */
class MemoryGuard
{
public:
    /** `model` is the job's (it must outlive the guard); `nodeLimitBytes` the node's
     *  --memory-limit (-1: none). */
    MemoryGuard(const JobSpec &job, core::Model &model, std::int64_t nodeLimitBytes);

    /** The memory a step may use on this node: the job's budget, else the node's limit (-1:
     *  none). */
    std::int64_t budgetBytes() const;

    /** Holds what the job grows the process by, from here (model and data loaded) on, to its
     *  budget plus allowanceBytes(), or to what the device (its memory cgroup, else the
     *  kernel's MemAvailable) has left less kAgentReserveBytes, if that is less. No budget: no
     *  limit. */
    void hold();
    /** Throws JobMemoryError, saying why the limit is what it is, once the job went past it. */
    void check() const;
    /** After a training step: the fault injection's growth, then check(). */
    void afterStep();
    /** The limit hold() set (nullptr: none), for its peak in the log. */
    const JobMemoryLimit *limit() const { return m_limit.get(); }

    /** The plan for a batch of `batch` on `model` (the job's or a copy of it) within the
     *  budget, the measured process overhead included. */
    core::MemoryPlan plan(core::Model &model, std::int64_t batch);
    /** The largest local batch (at most the job's batch + 1) the job's model trains within the
     *  budget (-1: no budget, 0: not even one sample); remembered for evaluationBatch(). */
    std::int64_t largestLocalBatch();
    /** Evaluation's batch: 500, or within the budget what a training step's plan fits (forward
     *  alone needs no more than forward and backward at the same batch). */
    std::int64_t evaluationBatch() const;

    /** Plans this rank's steps for a local batch of at most `localBatch`: their checkpointing
     *  schedule (stepSchedule()). Throws core::Error if that batch does not fit the budget. */
    void planSteps(std::int64_t localBatch);
    /** The schedule a training step runs under (nullptr: store every activation). */
    const core::Schedule *stepSchedule() const
    {
        return m_checkpointing ? &*m_checkpointing : nullptr;
    }

    /** What a job may allocate that no step's plan counts, beyond the budget: a fixed part and
     *  kParameterCopies copies of the parameters (allowanceBytes() says why). */
    static constexpr std::int64_t kFixedAllowanceBytes = std::int64_t(32) << 20;
    static constexpr std::int64_t kParameterCopies = 10;
    std::int64_t allowanceBytes() const;
    /** What the agent keeps for itself when a job's limit is what the device has left. */
    static constexpr std::int64_t kAgentReserveBytes = std::int64_t(16) << 20;

private:
    const JobSpec &m_job;
    core::Model &m_model;
    std::int64_t m_nodeLimitBytes;
    std::unique_ptr<JobMemoryLimit> m_limit;
    std::string m_limitWhy;       // how its limit was set, for the log and the error
    bool m_limitByDevice = false; // what the device had left, not the budget, set it
    // What a training step grows this process by beyond the engine's tensors, measured once per
    // job on its model (core::fitProcessBudget); -1: not yet.
    std::int64_t m_processOverhead = -1;
    std::int64_t m_maxLocalBatch = -1; // largestLocalBatch(); -1: no budget or not asked
    std::optional<core::Schedule> m_checkpointing;
    std::int64_t m_faultGrowthBytes = 0;
    std::vector<std::vector<char>> m_faultGrowth;
};

} // namespace edgetrain::net::worker

#pragma once

#include "chainprofile.h"
#include "memoryaccountant.h"
#include "model.h"
#include "schedule.h"

#include <algorithm>
#include <string>
#include <vector>

namespace edgetrain::core {

/** A schedule with its predicted memory and cost for one model and batch. */
struct MemoryPlan
{
    Schedule schedule;
    bool fits = true;                      // predicted_peak_bytes <= budget_bytes (no budget: true)
    std::int64_t budget_bytes = -1;        // -1: none given
    MemorySnapshot predicted;              // peak bytes per category of one training step
    std::int64_t predicted_peak_bytes = 0; // all categories at once
    double predicted_recompute_factor = 1.0; // cost with this schedule / cost of store-all
    // When nothing fits the budget:
    std::int64_t min_budget_bytes = 0; // the smallest budget any schedule needs at this batch
    std::int64_t max_batch = 0;        // the largest batch that fits the budget (0: none)
    /** What the process needs beyond the engine's tensors (MemoryPlanner::setProcessOverhead):
     *  fits means predicted_peak_bytes + process_overhead_bytes <= budget_bytes. */
    std::int64_t process_overhead_bytes = 0;
};

/**
 * Memory budget -> checkpointing schedule, for a model at a batch size.
 *
 * Predictions are memory simulations of the real step (see MemorySimulation): every schedule is
 * replayed on the model with virtual tensors, so a predicted peak is the engine's own. The
 * budget covers what a training step allocates: weights and batch-norm statistics, gradients,
 * momentum, the input batch, activations and workspaces (not code or libraries).
 *
 * Costs come from the stages' FLOPs unless measureTimes() replaced them by stage timings.
 * Uses the calling thread's engine thread count (workspaces are per thread).
 */
class MemoryPlanner
{
public:
    MemoryPlanner(Model &model, std::int64_t batch);

    const ChainProfile &profile() const { return m_profile; }
    void measureTimes(int repeats) { m_profile.measureTimes(m_model, repeats); }

    /** Simulates one step of `schedule` and returns its plan (fits against budget_bytes). */
    MemoryPlan evaluate(const Schedule &schedule, std::int64_t budget_bytes = -1) const;

    /**
     * The cheapest schedule whose predicted peak fits the budget, among store-all,
     * sequential:K, revolve:C and the heterogeneous optimum; if none fits, a plan with
     * fits = false, the smallest budget that would fit and the largest batch that fits.
     */
    MemoryPlan plan(std::int64_t budget_bytes) const;

    /** The heterogeneous optimum for the budget (verified by simulation); fits = false if none. */
    MemoryPlan optimal(std::int64_t budget_bytes) const;

    /** Memory against recompute factor: the non-dominated plans from all kinds, by peak. */
    std::vector<MemoryPlan> sweep() const;

    /** The smallest budget any schedule fits in at this batch (the overhead included). */
    std::int64_t minimumBudget() const;

    /** Bytes of every budget that the engine's tensors may not use: the process's own growth
     *  over a step beyond them (fitProcessBudget() in processmemory.h measures it). */
    void setProcessOverhead(std::int64_t bytes) { m_overhead = std::max<std::int64_t>(0, bytes); }
    std::int64_t processOverhead() const { return m_overhead; }

private:
    std::vector<Schedule> candidates() const;
    std::int64_t activationBudget(std::int64_t budget_bytes) const;

    Model &m_model;
    std::int64_t m_batch;
    ChainProfile m_profile;
    std::int64_t m_storeAllPeak = 0;
    std::int64_t m_overhead = 0;
};

/** Parses "300MiB", "1.5GiB", "800MB", "123456" (bytes); throws SpecError. */
std::int64_t parseByteSize(const std::string &text);

} // namespace edgetrain::core

#pragma once

#include "model.h"

#include <cstdint>
#include <vector>

namespace edgetrain::core {

/**
 * What one stage of the chain costs at one batch size. Bytes come from a memory simulation of
 * the stage's real code; costs from FLOP counts or, after measureTimes(), from the clock.
 */
struct StageProfile
{
    std::int64_t input_bytes = 0;  // x[i]
    std::int64_t output_bytes = 0; // x[i+1]
    /** What a forward with cache keeps beyond its input and output (saved activations). */
    std::int64_t cache_bytes = 0;
    /** Transient peak of a forward above input, output and cache (im2col buffers, ...). */
    std::int64_t forward_workspace_bytes = 0;
    /** Transient peak of a backward above cache, incoming and outgoing gradients. */
    std::int64_t backward_workspace_bytes = 0;
    double forward_cost = 0.0; // seconds if measured, else FLOPs (only ratios matter)
    double backward_cost = 0.0;
};

/** The profile of every stage of a model at one batch size, plus the fixed memory. */
class ChainProfile
{
public:
    /**
     * Simulates every stage at `batch` (microseconds, no arithmetic) on the calling thread; costs
     * from FLOP counts (backward = 2 x forward). The engine's thread count must be the one the
     * training will use: im2col workspaces are per thread.
     */
    static ChainProfile simulate(Model &model, std::int64_t batch);

    /** Replaces the FLOP-based costs by measured stage times (real data, `repeats` medians). */
    void measureTimes(Model &model, int repeats);

    const std::vector<StageProfile> &stages() const { return m_stages; }
    std::vector<StageProfile> &stages() { return m_stages; }
    std::int64_t batch() const { return m_batch; }
    /** Weights (with batch-norm statistics), gradients and SGD momentum: live all the time. */
    std::int64_t fixedBytes() const { return m_fixedBytes; }
    bool measured() const { return m_measured; }
    /** Cost of one store-all step: sum of forward and backward costs. */
    double baseCost() const;
    /** Cost of running `schedule`: the forwards and backwards it evaluates. */
    double cost(const Schedule &schedule) const;

private:
    std::vector<StageProfile> m_stages;
    std::int64_t m_batch = 0;
    std::int64_t m_fixedBytes = 0;
    bool m_measured = false;
};

/** Bytes of weights, gradients and optimizer state of a model trained with momentum SGD. */
std::int64_t fixedTrainingBytes(Model &model, bool momentum = true);

} // namespace edgetrain::core

#pragma once

#include "chainprofile.h"
#include "schedule.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain::core {

/**
 * The cheapest schedule for a chain whose stages differ in cost and size, under a memory limit:
 * a dynamic program over (first stage, last stage, memory) in the spirit of Beaumont et al.'s
 * "Optimal checkpointing for heterogeneous chains" (rotor). In every sub-chain it either keeps
 * the first stage's activations and continues, or advances to a later stage j keeping only
 * x[j], solves the tail, then the head.
 *
 * Its memory model (exact in unit steps, conservative against the engine): stored stage inputs,
 * a cache pins its stage's input and output plus cache_bytes, one gradient is live (a phantom
 * one of the logits' size before the loss), and each forward / backward adds its output and
 * workspace for the time it runs. Sizes are rounded up to `unit_bytes`; the budget down.
 */
class OptimalCheckpointing
{
public:
    /**
     * `budget_bytes`: memory for everything the step allocates except the fixed training
     * state and the input batch x[0]. Returns nullopt if no schedule fits. The schedule is named
     * "optimal".
     */
    static std::optional<Schedule> solve(const std::vector<StageProfile> &stages,
                                         std::int64_t budget_bytes, std::int64_t unit_bytes);

    /** Peak of `schedule` under the model above (same exclusions as budget_bytes). */
    static std::int64_t modelPeak(const std::vector<StageProfile> &stages,
                                  const Schedule &schedule);
};

} // namespace edgetrain::core

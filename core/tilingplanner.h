#pragma once

#include "memoryplanner.h"
#include "model.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain::core {

/** A plan with tiling as a third way to meet a budget, beside checkpointing and a smaller batch:
 *  the tile group (none: stages = 0), the rest's schedule, and what the step costs. */
struct TiledPlan
{
    Model::Tiling tiling;
    MemoryPlan plan;                // on the chain as tiled (the group is its stage 0)
    double group_cost_factor = 1.0; // the group's step with tiles against without
    /** The whole step's predicted cost against the untiled store-all step: the schedule's
     *  recompute factor plus what tiling adds, weighted by the group's share of the FLOPs. */
    double predicted_step_factor = 1.0;
    std::int64_t group_peak_bytes = 0;         // the early group's own peak, as planned
    std::int64_t untiled_group_peak_bytes = 0; // the same stages without tiles
};

/**
 * The peak bytes a model's first `stages` stages allocate over one training step's forward and
 * backward beyond their input and their output (which the chain holds either way), simulated:
 * their stored activations, workspaces and recomputed tiles. On a tiled model `stages` must be
 * its group's; otherwise the stages run untiled, keeping everything as store-all does.
 */
std::int64_t groupPeakBytes(Model &model, int stages, std::int64_t batch);

/** How many of the model's first stages a tile group can take (0: none). */
int tileableStages(Model &model);

/**
 * Picks the cheapest plan that fits `budget_bytes` over tilings and schedules: no tiling, and
 * for each group of 1 .. tileableStages() stages and each grid from 1x2 to 4x4 (`grids`), the
 * memory planner's plan for the rest; the cheapest by predicted_step_factor that fits, untiled
 * when that fits within 2 % as cheaply. With `stages` or `grid` given, only those. Leaves the model
 * tiled as the returned plan says. A plan with fits = false when nothing fits.
 */
TiledPlan planTiling(Model &model, std::int64_t batch, std::int64_t budget_bytes,
                     std::optional<int> stages, std::optional<std::pair<int, int>> grid,
                     std::int64_t process_overhead = 0);

/** Evaluates one tiling (the model is left tiled so) with the rest's schedule for the budget. */
TiledPlan evaluateTiling(Model &model, std::int64_t batch, std::int64_t budget_bytes,
                         const Model::Tiling &tiling, std::int64_t process_overhead = 0);

/** The grids planTiling considers: 1x2, 2x1, 2x2, 2x3, 3x2, 3x3, 3x4, 4x3, 4x4. */
std::vector<std::pair<int, int>> tileGrids();

} // namespace edgetrain::core

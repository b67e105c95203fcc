#pragma once

#include "core/memoryplanner.h"
#include "core/modelspec.h"
#include "core/tilingplanner.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace edgetrain::app {

/** One schedule of a tiled chain: its peak against the whole step's cost (untiled store-all = 1,
 *  what tiling adds included). */
struct TiledPoint
{
    double stepFactor = 1.0;
    std::int64_t peakBytes = 0;
    std::string schedule;
};

/**
 * core::planTiling's free choice for one model, input and device batch, cheap enough to follow
 * a budget slider. planTiling plans every group and grid afresh for each budget (each one a
 * planner of its own, and a search for the largest batch where it does not fit); this keeps
 * what does not depend on the budget (each tiling's added cost and its smallest budget) and
 * plans only the tilings that could still beat the best found: a tiling's step is never below
 * one plus what tiling adds, so cheaper ones are tried first and the rest skipped. The answer
 * is planTiling's (ties go to the earlier candidate, untiled first, and tiles must save 2 % or
 * make the plan fit, as there); tst_planpage checks it against planTiling.
 *
 * Plans on models with virtual weights (core::MemorySimulation), so it allocates no weights and
 * may run beside a real model on the same thread, never inside a simulation of the caller's.
 */
class TilingSearch
{
public:
    /** `overheadBytes`: the process overhead every budget holds (core::planTiling's). */
    TilingSearch(core::ModelSpec spec, std::int64_t deviceBatch, std::int64_t overheadBytes);

    /**
     * What planTiling(model, batch, budget, {}, {}, overhead) returns, given `untiled`: the
     * untiled planner's plan for the same budget and overhead. Without a budget (< 0), the
     * untiled plan (storing everything costs least). Throws core::SpecError as planTiling does.
     */
    core::TiledPlan choose(std::int64_t budgetBytes, const core::MemoryPlan &untiled);

    /** The schedules of one tiling, as core::MemoryPlanner::sweep() finds them, by peak. */
    std::vector<TiledPoint> sweep(const core::Model::Tiling &tiling);

private:
    struct Option
    {
        core::Model::Tiling tiling;
        int order = 0;            // planTiling's order of candidates (untiled is 0)
        double addedFactor = 0.0; // what tiling adds to the whole step
        std::optional<std::int64_t> minimumBytes;
    };
    using Key = std::tuple<int, int, int>; // stages, rows, cols

    void listOptions(core::Model &model);
    std::int64_t minimumBytes(core::Model &model, Option &option) const;
    /** The group's peak with and without tiles (planTiling's group_peak_bytes and
     *  untiled_group_peak_bytes). */
    std::pair<std::int64_t, std::int64_t> groupPeaks(core::Model &model,
                                                     const core::Model::Tiling &tiling);
    const Option *find(const core::Model::Tiling &tiling) const;

    core::ModelSpec m_spec;
    std::int64_t m_batch;
    std::int64_t m_overhead;
    bool m_listed = false;
    std::vector<Option> m_options;                    // by addedFactor, cheapest first
    std::map<std::int64_t, core::TiledPlan> m_chosen; // by budget
    std::map<Key, std::pair<std::int64_t, std::int64_t>> m_groupPeaks;
    std::map<Key, std::vector<TiledPoint>> m_sweeps;
};

} // namespace edgetrain::app

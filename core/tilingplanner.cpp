#include "tilingplanner.h"

#include "error.h"
#include "memorysimulation.h"
#include "tiledstage.h"

#include <algorithm>

namespace edgetrain::core {

std::vector<std::pair<int, int>> tileGrids()
{
    return {{1, 2}, {2, 1}, {2, 2}, {2, 3}, {3, 2}, {3, 3}, {3, 4}, {4, 3}, {4, 4}};
}

std::int64_t groupPeakBytes(Model &model, int stages, std::int64_t batch)
{
    const int n = model.tiling().active() ? 1 : stages;
    if (n < 1 || n >= int(model.stageCount()))
        throw SpecError("a group of " + std::to_string(stages) + " stages is not in model '" +
                        model.spec().name() + "'");
    MemorySimulation simulation;
    MemoryAccountant &acc = simulation.accountant();
    const PassContext ctx;
    std::vector<Tensor> xs(std::size_t(n) + 1);
    std::vector<StageCache> caches(static_cast<std::size_t>(n));
    xs[0] = Tensor(model.batchShape(batch), MemoryCategory::Activations);
    // Forward: everything made beyond the input, less the output the chain holds anyway.
    std::int64_t base = acc.currentTotalBytes();
    acc.resetPeaks();
    for (int i = 0; i < n; ++i)
        xs[std::size_t(i) + 1] =
            model.stage(std::size_t(i)).forward(xs[std::size_t(i)], &caches[std::size_t(i)], ctx);
    const Shape out = xs.back().shape();
    const std::int64_t outBytes = out.numel() * std::int64_t(sizeof(float));
    std::int64_t peak = acc.peakTotalBytes() - base - outBytes;
    // Backward from the output's gradient (the chain's), the output itself gone.
    xs.back() = Tensor();
    Tensor grad(out, MemoryCategory::Activations);
    base = acc.currentTotalBytes();
    acc.resetPeaks();
    for (int i = n; i-- > 0;) {
        grad = model.stage(std::size_t(i)).backward(grad, caches[std::size_t(i)], ctx, i > 0);
        caches[std::size_t(i)] = StageCache();
        xs[std::size_t(i) + 1] = Tensor();
    }
    return std::max(peak, acc.peakTotalBytes() - base);
}

int tileableStages(Model &model)
{
    if (model.tiling().active())
        throw Error("tileableStages: the model is tiled already");
    int k = 0;
    while (k + 1 < int(model.stageCount()) &&
           TiledStage::refusal(model.stage(std::size_t(k))).empty())
        ++k;
    return k;
}

TiledPlan evaluateTiling(Model &model, std::int64_t batch, std::int64_t budget_bytes,
                         const Model::Tiling &tiling, std::int64_t process_overhead)
{
    model.setTiling(tiling.stages, tiling.rows, tiling.cols);
    MemoryPlanner planner(model, batch);
    planner.setProcessOverhead(process_overhead);
    TiledPlan r;
    r.tiling = model.tiling();
    const int L = int(model.stageCount());
    r.plan =
        budget_bytes >= 0 ? planner.plan(budget_bytes) : planner.evaluate(Schedule::storeAll(L));
    r.predicted_step_factor = r.plan.predicted_recompute_factor;
    if (r.tiling.active()) {
        const Shape input = model.batchShape(batch);
        r.group_cost_factor = static_cast<TiledStage &>(model.stage(0)).stepCostFactor(input);
        const double share = model.stage(0).forwardFlops(input) / model.forwardFlops(batch);
        r.predicted_step_factor += (r.group_cost_factor - 1.0) * share;
    }
    return r;
}

TiledPlan planTiling(Model &model, std::int64_t batch, std::int64_t budget_bytes,
                     std::optional<int> stages, std::optional<std::pair<int, int>> grid,
                     std::int64_t process_overhead)
{
    model.setTiling(0, 1, 1);
    const int tileable = tileableStages(model);
    std::vector<Model::Tiling> options;
    if (!stages && !grid)
        options.push_back({}); // untiled is always a candidate when the choice is free
    for (int k = stages.value_or(1); k <= stages.value_or(tileable); ++k)
        for (const auto &[rows, cols] : grid ? std::vector{*grid} : tileGrids())
            if (k >= 1 && k <= tileable)
                options.push_back({k, rows, cols});
    if (options.empty())
        throw SpecError(
            tileable == 0 ? "model '" + model.spec().name() + "' has no stage a tile group can take"
                          : "model '" + model.spec().name() +
                                "': a tile group can take its first " + std::to_string(tileable) +
                                " stages at most, not " + std::to_string(stages.value_or(0)));
    std::optional<TiledPlan> best, untiled;
    std::string lastRefusal;
    for (const Model::Tiling &t : options) {
        TiledPlan p;
        try {
            p = evaluateTiling(model, batch, budget_bytes, t, process_overhead);
        } catch (const SpecError &e) { // a grid larger than the group's output
            lastRefusal = e.what();
            continue;
        }
        if (!t.active())
            untiled = p;
        const bool better =
            !best || (p.plan.fits && !best->plan.fits) ||
            (p.plan.fits == best->plan.fits &&
             (p.plan.fits ? p.predicted_step_factor < best->predicted_step_factor - 1e-9
                          : p.plan.min_budget_bytes < best->plan.min_budget_bytes));
        if (better)
            best = p;
    }
    if (!best)
        throw SpecError(lastRefusal);
    // A tiled plan must make the budget fit or predict a clear gain (2 %: the FLOP model's
    // resolution) over the untiled one; near-ties stay untiled, the simpler run.
    if (untiled && best->tiling.active() && untiled->plan.fits == best->plan.fits &&
        best->predicted_step_factor > 0.98 * untiled->predicted_step_factor)
        best = untiled;
    model.setTiling(0, 1, 1);
    best->untiled_group_peak_bytes =
        best->tiling.active() ? groupPeakBytes(model, best->tiling.stages, batch) : 0;
    model.setTiling(best->tiling.stages, best->tiling.rows, best->tiling.cols);
    best->group_peak_bytes =
        best->tiling.active() ? groupPeakBytes(model, best->tiling.stages, batch) : 0;
    return *best;
}

} // namespace edgetrain::core

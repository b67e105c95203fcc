#include "tilingsearch.h"

#include "core/error.h"
#include "core/memorysimulation.h"
#include "core/tiledstage.h"

#include <algorithm>

namespace edgetrain::app {

namespace {
constexpr double kTie = 1e-9;       // planTiling's margin: a candidate must be cheaper by more
constexpr double kClearGain = 0.98; // planTiling's: tiles must save 2 % or make the plan fit
constexpr std::size_t kKept = 256;  // budgets remembered (a slider has a few hundred positions)
} // namespace

TilingSearch::TilingSearch(core::ModelSpec spec, std::int64_t deviceBatch,
                           std::int64_t overheadBytes)
    : m_spec(std::move(spec)), m_batch(std::max<std::int64_t>(1, deviceBatch)),
      m_overhead(std::max<std::int64_t>(0, overheadBytes))
{}

void TilingSearch::listOptions(core::Model &model)
{
    model.setTiling(0, 1, 1);
    const int tileable = core::tileableStages(model);
    const core::Shape input = model.batchShape(m_batch);
    int order = 0; // planTiling's candidates in its order: untiled, then by group and grid
    for (int stages = 1; stages <= tileable; ++stages)
        for (const auto &[rows, cols] : core::tileGrids()) {
            ++order;
            try {
                model.setTiling(stages, rows, cols);
                // As core::evaluateTiling weighs it: the group's added cost by its FLOPs' share.
                const auto &group = static_cast<core::TiledStage &>(model.stage(0));
                const double share = group.forwardFlops(input) / model.forwardFlops(m_batch);
                m_options.push_back(
                    {model.tiling(), order, (group.stepCostFactor(input) - 1.0) * share, {}});
            } catch (const core::SpecError &) { // a grid larger than the group's output
            }
        }
    model.setTiling(0, 1, 1);
    std::stable_sort(m_options.begin(), m_options.end(), [](const Option &a, const Option &b) {
        return a.addedFactor < b.addedFactor;
    });
    m_listed = true;
}

std::int64_t TilingSearch::minimumBytes(core::Model &model, Option &option) const
{
    if (!option.minimumBytes) {
        model.setTiling(option.tiling.stages, option.tiling.rows, option.tiling.cols);
        core::MemoryPlanner planner(model, m_batch);
        planner.setProcessOverhead(m_overhead);
        option.minimumBytes = planner.minimumBudget();
    }
    return *option.minimumBytes;
}

std::pair<std::int64_t, std::int64_t> TilingSearch::groupPeaks(core::Model &model,
                                                               const core::Model::Tiling &tiling)
{
    const Key key{tiling.stages, tiling.rows, tiling.cols};
    if (auto it = m_groupPeaks.find(key); it != m_groupPeaks.end())
        return it->second;
    model.setTiling(0, 1, 1);
    const std::int64_t untiled = core::groupPeakBytes(model, tiling.stages, m_batch);
    model.setTiling(tiling.stages, tiling.rows, tiling.cols);
    const std::int64_t tiled = core::groupPeakBytes(model, tiling.stages, m_batch);
    return m_groupPeaks[key] = {tiled, untiled};
}

const TilingSearch::Option *TilingSearch::find(const core::Model::Tiling &tiling) const
{
    for (const Option &o : m_options)
        if (o.tiling.stages == tiling.stages && o.tiling.rows == tiling.rows &&
            o.tiling.cols == tiling.cols)
            return &o;
    return nullptr;
}

core::TiledPlan TilingSearch::choose(std::int64_t budgetBytes, const core::MemoryPlan &untiled)
{
    core::TiledPlan best;
    best.plan = untiled;
    best.predicted_step_factor = untiled.predicted_recompute_factor;
    if (budgetBytes < 0)
        return best;
    if (auto it = m_chosen.find(budgetBytes); it != m_chosen.end())
        return it->second;
    const core::MemorySimulation virtualWeights;
    core::Model model(m_spec, 0);
    if (!m_listed)
        listOptions(model);
    int bestOrder = 0;
    for (Option &o : m_options) {
        // No later tiling can be cheaper: each costs at least one plus what its tiles add.
        if (best.plan.fits && 1.0 + o.addedFactor >= best.predicted_step_factor - kTie)
            break;
        if (minimumBytes(model, o) > budgetBytes)
            continue;
        const core::TiledPlan p =
            core::evaluateTiling(model, m_batch, budgetBytes, o.tiling, m_overhead);
        if (!p.plan.fits)
            continue;
        const bool better =
            !best.plan.fits || p.predicted_step_factor < best.predicted_step_factor - kTie ||
            (p.predicted_step_factor <= best.predicted_step_factor + kTie && o.order < bestOrder);
        if (better) {
            best = p;
            bestOrder = o.order;
        }
    }
    if (!best.plan.fits) { // nothing fits: planTiling's answer is the lowest floor
        const Option *lowest = nullptr;
        std::int64_t lowestBytes = untiled.min_budget_bytes;
        for (Option &o : m_options) {
            const std::int64_t bytes = minimumBytes(model, o);
            if (bytes < lowestBytes ||
                (bytes == lowestBytes && lowest && o.order < lowest->order)) {
                lowest = &o;
                lowestBytes = bytes;
            }
        }
        if (lowest)
            best = core::evaluateTiling(model, m_batch, budgetBytes, lowest->tiling, m_overhead);
    }
    // As planTiling: a near-tie with the untiled plan stays untiled, the simpler run.
    if (best.tiling.active() && best.plan.fits == untiled.fits &&
        best.predicted_step_factor > kClearGain * untiled.predicted_recompute_factor) {
        best = core::TiledPlan();
        best.plan = untiled;
        best.predicted_step_factor = untiled.predicted_recompute_factor;
    }
    if (best.tiling.active())
        std::tie(best.group_peak_bytes, best.untiled_group_peak_bytes) =
            groupPeaks(model, best.tiling);
    if (m_chosen.size() >= kKept)
        m_chosen.clear();
    return m_chosen[budgetBytes] = best;
}

std::vector<TiledPoint> TilingSearch::sweep(const core::Model::Tiling &tiling)
{
    const Key key{tiling.stages, tiling.rows, tiling.cols};
    if (auto it = m_sweeps.find(key); it != m_sweeps.end())
        return it->second;
    const core::MemorySimulation virtualWeights;
    core::Model model(m_spec, 0);
    if (!m_listed)
        listOptions(model);
    const Option *option = find(tiling);
    if (!option)
        throw core::SpecError("the model has no tile group of " + std::to_string(tiling.stages) +
                              " stages on " + std::to_string(tiling.rows) + "x" +
                              std::to_string(tiling.cols) + " tiles");
    model.setTiling(tiling.stages, tiling.rows, tiling.cols);
    core::MemoryPlanner planner(model, m_batch);
    planner.setProcessOverhead(m_overhead);
    std::vector<TiledPoint> points;
    for (const core::MemoryPlan &p : planner.sweep())
        points.push_back({p.predicted_recompute_factor + option->addedFactor,
                          p.predicted_peak_bytes, p.schedule.name()});
    std::sort(points.begin(), points.end(),
              [](const TiledPoint &a, const TiledPoint &b) { return a.peakBytes < b.peakBytes; });
    return m_sweeps[key] = points;
}

} // namespace edgetrain::app

#include "memoryplanner.h"

#include "error.h"
#include "memorysimulation.h"
#include "numbertext.h"
#include "optimalcheckpointing.h"

#include <algorithm>
#include <cmath>

namespace edgetrain::core {

namespace {
constexpr int kSequentialMax = 64;
constexpr std::int64_t kResolution = 1500; // memory steps of the dynamic program
} // namespace

MemoryPlanner::MemoryPlanner(Model &model, std::int64_t batch)
    : m_model(model), m_batch(batch), m_profile(ChainProfile::simulate(model, batch))
{
    if (batch < 1 || batch > 65536)
        throw SpecError("batch size must be between 1 and 65536");
    m_storeAllPeak = evaluate(Schedule::storeAll(int(model.stageCount()))).predicted_peak_bytes;
}

MemoryPlan MemoryPlanner::evaluate(const Schedule &schedule, std::int64_t budget_bytes) const
{
    MemoryPlan plan;
    plan.schedule = schedule;
    plan.budget_bytes = budget_bytes;
    MemorySnapshot step;
    {
        MemorySimulation sim;
        const Tensor x(m_model.batchShape(m_batch), MemoryCategory::Activations);
        const std::vector<std::int32_t> labels(
            std::size_t(m_batch) * std::size_t(m_model.spec().labelWidth()), 0);
        PassContext ctx;
        m_model.forwardBackward(x, labels.data(), ctx, &schedule);
        step = sim.accountant().snapshot();
    }
    std::int64_t params = 0, state = 0;
    for (const auto &p : m_model.parameters())
        params += p.parameter->value.numel();
    for (const auto &b : m_model.buffers())
        if (b.buffer.tensor)
            state += b.buffer.tensor->numel();
    plan.predicted = step;
    plan.predicted.peak_bytes[std::size_t(MemoryCategory::Weights)] = 4 * (params + state);
    plan.predicted.peak_bytes[std::size_t(MemoryCategory::Gradients)] = 4 * params;
    plan.predicted.peak_bytes[std::size_t(MemoryCategory::OptimizerState)] = 4 * params;
    plan.predicted_peak_bytes = m_profile.fixedBytes() + step.peak_total_bytes;
    plan.predicted.peak_total_bytes = plan.predicted_peak_bytes;
    plan.predicted_recompute_factor = m_profile.cost(schedule) / m_profile.baseCost();
    plan.process_overhead_bytes = m_overhead;
    plan.fits = budget_bytes < 0 || plan.predicted_peak_bytes + m_overhead <= budget_bytes;
    return plan;
}

std::int64_t MemoryPlanner::activationBudget(std::int64_t budget_bytes) const
{
    return budget_bytes - m_overhead - m_profile.fixedBytes() -
           m_profile.stages().front().input_bytes;
}

MemoryPlan MemoryPlanner::optimal(std::int64_t budget_bytes) const
{
    // When nothing fits, answer with the least memory any schedule needs (recompute everything),
    // predicted like every other plan.
    auto nothing = [&] {
        MemoryPlan p = evaluate(Schedule::revolve(int(m_model.stageCount()), 0), budget_bytes);
        p.fits = false;
        return p;
    };
    const std::int64_t available = activationBudget(budget_bytes);
    if (available <= 0)
        return nothing();
    // The program's model is conservative, and rounding may push the real peak past the
    // budget: verify by simulation and tighten until the schedule fits.
    std::int64_t target = available;
    for (int attempt = 0; attempt < 8 && target > 0; ++attempt) {
        const std::int64_t unit = std::max<std::int64_t>(4, target / kResolution);
        const auto schedule = OptimalCheckpointing::solve(m_profile.stages(), target, unit);
        if (!schedule)
            return nothing();
        MemoryPlan plan = evaluate(*schedule, budget_bytes);
        if (plan.fits)
            return plan;
        target -=
            std::max<std::int64_t>(unit, plan.predicted_peak_bytes + m_overhead - budget_bytes);
    }
    return nothing();
}

std::vector<Schedule> MemoryPlanner::candidates() const
{
    const int L = int(m_model.stageCount());
    std::vector<Schedule> list{Schedule::storeAll(L)};
    for (int k = 2; k <= std::min(L, kSequentialMax); ++k)
        list.push_back(Schedule::sequential(L, k));
    for (int c = 0; c < L; ++c) {
        list.push_back(Schedule::revolve(L, c));
        if (Schedule::revolveForwards(L, c) == L + (L - 1)) // enough slots: more add nothing
            break;
    }
    return list;
}

MemoryPlan MemoryPlanner::plan(std::int64_t budget_bytes) const
{
    MemoryPlan best;
    bool found = false;
    auto consider = [&](const MemoryPlan &p) {
        if (!p.fits)
            return;
        if (!found || p.predicted_recompute_factor < best.predicted_recompute_factor - 1e-12 ||
            (std::abs(p.predicted_recompute_factor - best.predicted_recompute_factor) <= 1e-12 &&
             p.predicted_peak_bytes < best.predicted_peak_bytes)) {
            best = p;
            found = true;
        }
    };
    if (m_storeAllPeak + m_overhead <= budget_bytes)
        return evaluate(Schedule::storeAll(int(m_model.stageCount())), budget_bytes);
    for (const Schedule &s : candidates())
        consider(evaluate(s, budget_bytes));
    consider(optimal(budget_bytes));
    if (found)
        return best;

    MemoryPlan none = evaluate(Schedule::revolve(int(m_model.stageCount()), 0), budget_bytes);
    none.fits = false;
    none.min_budget_bytes = minimumBudget();
    // The largest batch that fits: memory grows with the batch, so bisect.
    std::int64_t lo = 0, hi = m_batch - 1;
    while (lo < hi) {
        const std::int64_t mid = (lo + hi + 1) / 2;
        MemoryPlanner smaller(m_model, mid);
        smaller.setProcessOverhead(m_overhead);
        if (smaller.minimumBudget() <= budget_bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    none.max_batch = lo;
    return none;
}

std::int64_t MemoryPlanner::minimumBudget() const
{
    std::int64_t best = m_storeAllPeak;
    for (const Schedule &s : candidates())
        best = std::min(best, evaluate(s).predicted_peak_bytes);
    // The optimum can go lower than any fixed family: bisect on the budget it is given.
    std::int64_t lo = m_overhead + m_profile.fixedBytes() + m_profile.stages().front().input_bytes,
                 hi = best + m_overhead;
    for (int i = 0; i < 14 && lo < hi; ++i) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        const MemoryPlan p = optimal(mid);
        if (p.fits) {
            best = std::min(best, p.predicted_peak_bytes);
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return best + m_overhead;
}

std::vector<MemoryPlan> MemoryPlanner::sweep() const
{
    std::vector<MemoryPlan> all;
    for (const Schedule &s : candidates())
        all.push_back(evaluate(s));
    const std::int64_t lo = minimumBudget();
    for (int i = 0; i <= 12; ++i) {
        const auto budget =
            std::int64_t(double(lo) + double(m_storeAllPeak + m_overhead - lo) * i / 12.0);
        MemoryPlan p = optimal(budget);
        if (p.fits) {
            p.budget_bytes = -1;
            all.push_back(p);
        }
    }
    std::sort(all.begin(), all.end(), [](const MemoryPlan &a, const MemoryPlan &b) {
        return a.predicted_peak_bytes != b.predicted_peak_bytes
                   ? a.predicted_peak_bytes < b.predicted_peak_bytes
                   : a.predicted_recompute_factor < b.predicted_recompute_factor;
    });
    // Keep the Pareto front: each kept plan is faster than every smaller one.
    std::vector<MemoryPlan> front;
    for (const MemoryPlan &p : all)
        if (front.empty() ||
            p.predicted_recompute_factor < front.back().predicted_recompute_factor - 1e-9)
            front.push_back(p);
    return front;
}

std::int64_t parseByteSize(const std::string &text)
{
    std::size_t used = 0;
    const double value = NumberText::parsePrefix(text, &used).value_or(0.0);
    const std::string unit = used ? text.substr(used) : std::string();
    double scale = -1.0;
    if (unit.empty() || unit == "B")
        scale = 1.0;
    else if (unit == "KiB" || unit == "K")
        scale = 1024.0;
    else if (unit == "MiB" || unit == "M")
        scale = 1024.0 * 1024.0;
    else if (unit == "GiB" || unit == "G")
        scale = 1024.0 * 1024.0 * 1024.0;
    else if (unit == "kB" || unit == "KB")
        scale = 1e3;
    else if (unit == "MB")
        scale = 1e6;
    else if (unit == "GB")
        scale = 1e9;
    if (!used || scale < 0 || !(value > 0) || value * scale > 1e15)
        throw SpecError("memory size '" + text +
                        "': expected a positive size like 300MiB, 1.5GiB or 800MB");
    return std::int64_t(value * scale);
}

} // namespace edgetrain::core

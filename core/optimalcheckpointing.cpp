#include "optimalcheckpointing.h"

#include "error.h"

#include <algorithm>
#include <limits>

namespace edgetrain::core {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int kInfeasible = -2;
constexpr int kKeepFirst = -1; // base case, or keep stage s's activations (rotor's F_all)

class Solver
{
public:
    Solver(const std::vector<StageProfile> &stages, std::int64_t unit, std::int64_t memory)
        : m_L(int(stages.size())), m_M(memory)
    {
        auto units = [unit](std::int64_t bytes) { return (bytes + unit - 1) / unit; };
        m_a.resize(std::size_t(m_L) + 1);
        for (int i = 0; i < m_L; ++i) {
            const StageProfile &p = stages[std::size_t(i)];
            m_a[std::size_t(i)] = units(p.input_bytes);
            m_e.push_back(units(p.cache_bytes));
            m_wf.push_back(units(p.forward_workspace_bytes));
            m_wb.push_back(units(p.backward_workspace_bytes));
            m_uf.push_back(p.forward_cost);
            m_ub.push_back(p.backward_cost);
        }
        m_a[std::size_t(m_L)] = units(stages.back().output_bytes);
        m_cost.assign(std::size_t(m_L) * std::size_t(m_L) * std::size_t(m_M + 1), kInfinity);
        m_choice.assign(m_cost.size(), kInfeasible);
        fill();
    }

    bool feasible() const { return cost(0, m_L - 1, m_M) < kInfinity; }

    std::vector<ScheduleOp> ops()
    {
        m_ops.clear();
        emit(0, m_L - 1, m_M);
        return std::move(m_ops);
    }

private:
    std::size_t index(int s, int t, std::int64_t m) const
    {
        return (std::size_t(s) * std::size_t(m_L) + std::size_t(t)) * std::size_t(m_M + 1) +
               std::size_t(m);
    }
    double cost(int s, int t, std::int64_t m) const
    {
        return m < 0 ? kInfinity : m_cost[index(s, t, m)];
    }
    std::int64_t a(int i) const { return m_a[std::size_t(i)]; }

    void fill()
    {
        for (int len = 0; len < m_L; ++len) {
            for (int s = 0; s + len < m_L; ++s) {
                const int t = s + len;
                const auto us = std::size_t(s);
                const std::int64_t grad = a(t + 1);
                // Keep stage s's activations: forward with cache, solve the tail, backward.
                const std::int64_t keepForward = grad + a(s + 1) + m_e[us] + m_wf[us];
                // Stage 0 computes no input gradient (nothing needs it).
                const std::int64_t keepBackward =
                    2 * a(s + 1) + m_e[us] + (s > 0 ? a(s) : 0) + m_wb[us];
                const std::int64_t keepNeed = std::max(keepForward, keepBackward);
                for (std::int64_t m = 0; m <= m_M; ++m) {
                    double best = kInfinity;
                    int choice = kInfeasible;
                    if (m >= keepNeed) {
                        const double tail = s == t ? 0.0 : cost(s + 1, t, m - a(s + 1) - m_e[us]);
                        if (tail < kInfinity) {
                            best = m_uf[us] + tail + m_ub[us];
                            choice = kKeepFirst;
                        }
                    }
                    // Advance to j keeping only x[j]: tail [j, t], then head [s, j - 1].
                    double advance = 0.0;
                    std::int64_t advancePeak = 0;
                    for (int j = s + 1; j <= t; ++j) {
                        const int k = j - 1;
                        advance += m_uf[std::size_t(k)];
                        advancePeak = std::max(advancePeak, grad + (k > s ? a(k) : 0) + a(k + 1) +
                                                                m_wf[std::size_t(k)]);
                        if (m < advancePeak)
                            break;
                        const double c = advance + cost(j, t, m - a(j)) + cost(s, j - 1, m);
                        if (c < best) {
                            best = c;
                            choice = j;
                        }
                    }
                    m_cost[index(s, t, m)] = best;
                    m_choice[index(s, t, m)] = choice;
                }
            }
        }
    }

    void cacheOp(int i)
    {
        m_ops.push_back({ScheduleOp::ForwardCache, i});
        if (i == m_L - 1)
            m_ops.push_back({ScheduleOp::Loss, m_L});
    }

    void emit(int s, int t, std::int64_t m)
    {
        const int choice = m_choice[index(s, t, m)];
        if (choice == kKeepFirst) {
            cacheOp(s);
            if (s < t)
                emit(s + 1, t, m - a(s + 1) - m_e[std::size_t(s)]);
            m_ops.push_back({ScheduleOp::Backward, s});
            return;
        }
        const int j = choice;
        for (int k = s; k < j; ++k) {
            m_ops.push_back({ScheduleOp::ForwardKeep, k});
            if (k > s)
                m_ops.push_back({ScheduleOp::Discard, k});
        }
        emit(j, t, m - a(j));
        m_ops.push_back({ScheduleOp::Discard, j});
        emit(s, j - 1, m);
    }

    int m_L;
    std::int64_t m_M;
    std::vector<std::int64_t> m_a, m_e, m_wf, m_wb;
    std::vector<double> m_uf, m_ub;
    std::vector<double> m_cost;
    std::vector<int> m_choice;
    std::vector<ScheduleOp> m_ops;
};

} // namespace

std::optional<Schedule> OptimalCheckpointing::solve(const std::vector<StageProfile> &stages,
                                                    std::int64_t budget_bytes,
                                                    std::int64_t unit_bytes)
{
    if (stages.empty() || budget_bytes < 0)
        return std::nullopt;
    if (unit_bytes < 1)
        throw Error("optimal checkpointing needs a positive memory unit");
    const std::int64_t units = budget_bytes / unit_bytes;
    if (units > 100000)
        throw Error("optimal checkpointing: budget / unit must stay below 100000 steps");
    Solver solver(stages, unit_bytes, units);
    if (!solver.feasible())
        return std::nullopt;
    return Schedule::fromOps("optimal", int(stages.size()), solver.ops());
}

std::int64_t OptimalCheckpointing::modelPeak(const std::vector<StageProfile> &stages,
                                             const Schedule &schedule)
{
    const auto L = stages.size();
    std::vector<std::int64_t> a(L + 1);
    for (std::size_t i = 0; i < L; ++i)
        a[i] = stages[i].input_bytes;
    a[L] = stages.back().output_bytes;
    std::vector<char> stored(L + 1, 0), cached(L, 0);
    std::size_t grad = L; // the phantom gradient of the logits before the loss
    auto live = [&] {
        std::int64_t bytes = grad > 0 ? a[grad] : 0; // no gradient for the input
        for (std::size_t k = 1; k <= L; ++k)
            if (stored[k] || cached[k - 1] || (k < L && cached[k]))
                bytes += a[k];
        for (std::size_t k = 0; k < L; ++k)
            if (cached[k])
                bytes += stages[k].cache_bytes;
        return bytes;
    };
    std::int64_t peak = live();
    for (const auto &op : schedule.ops()) {
        const auto i = std::size_t(op.stage);
        switch (op.kind) {
        case ScheduleOp::ForwardKeep:
            peak = std::max(peak, live() + a[i + 1] + stages[i].forward_workspace_bytes);
            stored[i + 1] = 1;
            break;
        case ScheduleOp::ForwardCache:
            peak = std::max(peak, live() + a[i + 1] + stages[i].cache_bytes +
                                      stages[i].forward_workspace_bytes);
            stored[i + 1] = 1;
            cached[i] = 1;
            break;
        case ScheduleOp::Discard:
            stored[i] = 0;
            break;
        case ScheduleOp::Loss:
            stored[L] = 0;
            break;
        case ScheduleOp::Backward:
            peak = std::max(peak, live() + (i > 0 ? a[i] : 0) + stages[i].backward_workspace_bytes);
            cached[i] = 0;
            stored[i + 1] = 0;
            grad = i;
            break;
        }
        peak = std::max(peak, live());
    }
    return peak;
}

} // namespace edgetrain::core

#include "net/training/coordinator/sharefitter.h"

#include "core/memoryplanner.h"
#include "core/model.h"
#include "net/planner/clusterplanner.h"
#include "net/training/coordinator/member.h"

#include <algorithm>
#include <numeric>

namespace edgetrain::net {

ShareFitter::ShareFitter(JobSpec job, std::map<QString, std::int64_t> budgets)
    : m_job(std::move(job)), m_budgets(std::move(budgets))
{}

std::vector<double> ShareFitter::groupShares(const std::vector<Member *> &members, bool first) const
{
    std::vector<double> speeds;
    for (const Member *m : members)
        speeds.push_back(m->speed);
    // The first group: where per-epoch rebalancing would settle, from the nodes' profiles (the
    // time per step at two batch sizes), not their speed at a small batch — the planner
    // predicts this split. Later groups follow the speeds measured over the epochs.
    if (first) {
        std::vector<DeviceMeasurement> profiles;
        for (const Member *m : members)
            if (m->ready.profile.large_batch > m->ready.profile.small_batch)
                profiles.push_back(measurementFromReady(m->node.name, m->readyBody));
        if (profiles.size() == members.size()) {
            std::vector<const DeviceMeasurement *> d;
            for (const auto &p : profiles)
                d.push_back(&p);
            return settledShares(d, m_job.batch);
        }
    }
    return sharesFromSpeeds(speeds);
}

std::int64_t ShareFitter::largestBatchWithin(std::int64_t budget)
{
    if (const auto known = m_batchWithin.find(budget); known != m_batchWithin.end())
        return known->second;
    core::Model model(core::ModelSpec::fromJson(m_job.model, "the job's model"), m_job.seed);
    model.setTiling(m_job.tiled_stages, m_job.tile_rows, m_job.tile_cols); // as the nodes run it
    std::int64_t lo = 0, hi = m_job.batch + 1; // lo fits (0 trivially), find the largest
    while (lo < hi) {
        const std::int64_t mid = (lo + hi + 1) / 2;
        if (core::MemoryPlanner(model, mid).plan(budget).fits)
            lo = mid;
        else
            hi = mid - 1;
    }
    return m_batchWithin[budget] = lo;
}

std::vector<double> ShareFitter::fit(const std::vector<Member *> &members,
                                     std::vector<double> shares)
{
    // A worker plans its memory for its part of (batch + 1) split by the shares: at most
    // 2 + (total - n) * share (one each first, then a rounded-up remainder).
    const double total = double(m_job.batch + 1), n = double(members.size());
    std::vector<double> cap(members.size(), 1.0);
    bool any = false;
    for (std::size_t i = 0; i < members.size(); ++i) {
        const auto b = m_budgets.find(members[i]->link ? members[i]->link->info().name
                                                       : members[i]->node.name);
        if (b == m_budgets.end() || b->second < 0) {
            // The node's own limit, as its profile measured it (the largest local batch).
            const std::int64_t fit = members[i]->ready.profile.max_local_batch;
            if (fit >= 0) {
                cap[i] = std::max(1e-3, double(fit - 2) / std::max(1.0, total - n));
                any = true;
            }
            continue;
        }
        try {
            std::int64_t fit = largestBatchWithin(b->second);
            // The worker's own largest batch within that budget also counts what a step grows
            // its process beyond the engine's tensors, which the plan here cannot see: a share
            // above it made the worker refuse its part and fail the run.
            if (const std::int64_t own = members[i]->ready.profile.max_local_batch; own >= 0)
                fit = std::min(fit, own);
            // Never 0: a group's shares must all be positive. A node that cannot take even
            // its one sample refuses the job itself and says what would fit.
            cap[i] = std::max(1e-3, double(fit - 2) / std::max(1.0, total - n));
            any = true;
        } catch (const std::exception &) {
            // The model is refused when the job starts: nothing to cap.
        }
    }
    if (any)
        capShares(shares, cap); // where nobody has room the workers say what does not fit
    // When nobody had room the excess went nowhere: shares must still sum to 1.
    const double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
    if (sum > 0.0)
        for (double &share : shares)
            share /= sum;
    return shares;
}

} // namespace edgetrain::net

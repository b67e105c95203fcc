#include "core/clusterplanner.h"

#include "core/batchshares.h"
#include "core/error.h"
#include "core/numbertext.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace edgetrain::core {

namespace {

constexpr double kFloatBytes = 4.0;

double ceilDiv(std::int64_t a, std::int64_t b)
{
    return b > 0 ? double((a + b - 1) / b) : 0.0;
}

double objectiveValue(const PlanCandidate &c, PlanObjective::Kind kind)
{
    switch (kind) {
    case PlanObjective::Kind::Time:
        return c.seconds;
    case PlanObjective::Kind::Power:
        return c.watts;
    case PlanObjective::Kind::Energy:
        return c.joules;
    case PlanObjective::Kind::Edp:
        return c.edp;
    case PlanObjective::Kind::Mix:
        break;
    }
    return 0.0;
}

/** One epoch of training (evaluation aside): its wall time, how much of it the slowest device
 *  computes and communicates, and the seconds each device is busy in it. */
struct EpochCost
{
    double seconds = 0.0, compute = 0.0, communication = 0.0;
    std::vector<double> busy;
};

} // namespace

std::vector<double> settledShares(const std::vector<const DeviceCost *> &devices,
                                  std::int64_t batch)
{
    const std::size_t n = devices.size();
    std::vector<double> s(n, n ? 1.0 / double(n) : 0.0);
    for (int round = 0; round < 50; ++round) {
        const auto parts = splitByShares(batch, s);
        std::vector<double> speeds(n);
        for (std::size_t i = 0; i < n; ++i) {
            const std::int64_t b = std::max<std::int64_t>(parts[i], 1);
            speeds[i] = double(b) / std::max(devices[i]->stepSeconds(b), 1e-12);
        }
        const auto next = sharesFromSpeeds(speeds);
        double moved = 0.0;
        for (std::size_t i = 0; i < n; ++i)
            moved = std::max(moved, std::abs(next[i] - s[i]));
        s = next;
        if (moved < 1e-6)
            break;
    }
    return s;
}

ClusterPlanner::ClusterPlanner(std::vector<PlanDevice> devices, PlanWork work)
    : m_devices(std::move(devices)), m_work(work)
{
    if (m_devices.empty() || int(m_devices.size()) > kMaxDevices)
        throw Error("the planner takes 1 to " + std::to_string(kMaxDevices) + " devices, not " +
                    std::to_string(m_devices.size()));
    if (m_work.batch < 1 || m_work.epochs < 0 || m_work.train_samples < 0 || m_work.local_steps < 1)
        throw Error("the planner's work needs a batch of at least 1 and local steps of at "
                    "least 1");
}

std::vector<double> ClusterPlanner::shares(const std::vector<int> &devices) const
{
    std::vector<const DeviceCost *> d;
    for (int i : devices)
        d.push_back(&m_devices[std::size_t(i)].cost);
    return settledShares(d, m_work.batch);
}

double ClusterPlanner::allreduceSeconds(const std::vector<int> &devices, double bytes) const
{
    const std::size_t n = devices.size();
    if (n < 2 || bytes <= 0)
        return 0.0;
    // gloo's ring: a reduce-scatter and an allgather, 2(n-1) rounds of bytes/n each; a round
    // lasts as long as its slowest hop: rank k sends to rank k+1 through both links while the
    // slower of the two ends sends, receives and adds the chunk, whichever takes longer —
    // overlapped, not added (a pair on a slow link trains at the wire's time). Where the
    // link's rates were not timed (the exchange over the link stood for them) the hop is its
    // half round trip alone: the exchange's figure carries its own round trips, spread over
    // its chunk. An end's exchange figure is timed over its own link where it could be, else
    // on the device over loopback, which misses the path.
    const double chunk = bytes / double(n);
    double round = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
        const DeviceCost &from = m_devices[std::size_t(devices[k])].cost;
        const DeviceCost &to = m_devices[std::size_t(devices[(k + 1) % n])].cost;
        double rate = std::numeric_limits<double>::infinity();
        if (from.up_bytes_per_second > 0)
            rate = std::min(rate, from.up_bytes_per_second);
        if (to.down_bytes_per_second > 0)
            rate = std::min(rate, to.down_bytes_per_second);
        const double latency = 0.5 * (from.rtt_seconds + to.rtt_seconds);
        const double exchange =
            chunk * std::max(from.exchange_seconds_per_byte, to.exchange_seconds_per_byte);
        round = std::max(round,
                         std::max(latency + (std::isfinite(rate) ? chunk / rate : 0.0), exchange));
    }
    return 2.0 * double(n - 1) * round;
}

std::string ClusterPlanner::refusal(const std::vector<int> &devices, PlanMode mode,
                                    std::vector<double> &cap) const
{
    const std::size_t n = devices.size();
    // Memory: a device that cannot take one sample refuses the job; the others cap their share.
    cap.assign(n, 1.0);
    for (std::size_t i = 0; i < n; ++i) {
        const PlanDevice &d = m_devices[std::size_t(devices[i])];
        if (d.cost.max_local_batch == 0)
            return d.name + " cannot hold one sample of the model in its memory";
        // As the coordinator caps it: a worker plans its memory for its part of batch + 1, at
        // most 2 + (batch + 1 - n) x share. A device that takes batch + 1 (the most the
        // worker's search asks for) takes any part.
        if (d.cost.max_local_batch > 0 && d.cost.max_local_batch <= m_work.batch)
            cap[i] = std::min(
                1.0, std::max(1e-3, double(d.cost.max_local_batch - 2) /
                                        std::max(1.0, double(m_work.batch + 1 - std::int64_t(n)))));
    }
    for (int i : devices) {
        const PlanDevice &d = m_devices[std::size_t(i)];
        if (n > 1 && !d.link_error.empty())
            return "the link of " + d.name + " was not measured: " + d.link_error;
        // Its pushes and pulls ride the link's rates, alone too: the parameter server is the
        // coordinator's (a plan for async asks for them).
        if (mode == PlanMode::Async && !d.cost.link_rates_timed)
            return "the link of " + d.name + " was not timed for async";
    }
    return {};
}

PlanCandidate ClusterPlanner::predict(const std::vector<int> &devices, PlanMode mode) const
{
    PlanCandidate c;
    c.devices = devices;
    std::sort(c.devices.begin(), c.devices.end());
    c.mode = mode;
    for (int i : c.devices)
        c.names.push_back(m_devices.at(std::size_t(i)).name);
    if (c.devices.empty()) {
        c.refused = "no device";
        return c;
    }
    std::vector<double> cap;
    c.refused = refusal(c.devices, mode, cap);
    if (!c.refused.empty())
        return c;
    c.shares = shares(c.devices);
    if (std::accumulate(cap.begin(), cap.end(), 0.0) < 1.0 - 1e-9) {
        c.refused =
            "together their memory holds less than a batch of " + std::to_string(m_work.batch);
        return c;
    }
    capShares(c.shares, cap);
    fillFigures(c);
    return c;
}

void ClusterPlanner::fillFigures(PlanCandidate &c) const
{
    const std::size_t n = c.devices.size();
    auto device = [&](std::size_t i) -> const DeviceCost & {
        return m_devices[std::size_t(c.devices[i])].cost;
    };
    // Seconds each device is busy over an epoch: computing, and its network stack's work for
    // what it sends and receives (at busy_watts' utilisation).
    EpochCost epoch;
    epoch.busy.assign(n, 0.0);
    const double steps = ceilDiv(m_work.train_samples, m_work.batch);
    if (c.mode == PlanMode::Async) {
        // Each device: its slice of the data in local batches of batch x share; per push the
        // gradients (and batch-norm statistics, float32) go up, the model (a delta) comes down,
        // at the job's exchange's bytes per value.
        const auto slices = splitByShares(m_work.train_samples, c.shares);
        const double upBytes = m_work.async_value_bytes * double(m_work.gradient_floats) +
                               kFloatBytes * double(m_work.buffer_floats);
        const double downBytes = m_work.async_value_bytes * double(m_work.averaged_floats);
        for (std::size_t i = 0; i < n; ++i) {
            const DeviceCost &d = device(i);
            const std::int64_t local =
                std::max<std::int64_t>(1, std::llround(double(m_work.batch) * c.shares[i]));
            const double pushes = ceilDiv(slices[i], local);
            const double compute = d.stepSeconds(local);
            const double comm =
                d.rtt_seconds + (d.up_bytes_per_second > 0 ? upBytes / d.up_bytes_per_second : 0) +
                (d.down_bytes_per_second > 0 ? downBytes / d.down_bytes_per_second : 0);
            const double t = pushes * (compute + comm);
            epoch.busy[i] = pushes * (compute + upBytes * d.up_busy_seconds_per_byte +
                                      downBytes * d.down_busy_seconds_per_byte);
            if (t > epoch.seconds) {
                epoch.seconds = t;
                epoch.compute = pushes * compute;
                epoch.communication = pushes * comm;
            }
        }
    } else {
        const auto parts = splitByShares(m_work.batch, c.shares);
        double stepCompute = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            const double t = device(i).stepSeconds(parts[i]) + device(i).update_seconds;
            epoch.busy[i] = steps * t;
            stepCompute = std::max(stepCompute, t);
        }
        double comm = 0.0, reduced = 0.0; // seconds, and bytes allreduced over the epoch
        if (c.mode == PlanMode::Sync) {
            const double step = kFloatBytes * double(m_work.gradient_floats + 5);
            const double buffers = kFloatBytes * double(m_work.buffer_floats);
            comm = steps * allreduceSeconds(c.devices, step) + allreduceSeconds(c.devices, buffers);
            reduced = steps * step + buffers;
        } else {
            // local SGD: every local_steps steps, and at the end of the epoch
            const double averages = ceilDiv(std::int64_t(steps), m_work.local_steps);
            const double each = kFloatBytes * double(m_work.averaged_floats + 5);
            comm = averages * allreduceSeconds(c.devices, each);
            reduced = averages * each;
        }
        // In the ring each device sends and receives 2 (n - 1) / n of what is reduced: at what
        // the exchange over its link cost it a byte each way where that was timed (the ring's
        // own work: its sums and copies too), else the link's transfers' figures.
        if (n > 1)
            for (std::size_t i = 0; i < n; ++i) {
                const DeviceCost &d = device(i);
                const double perByte =
                    d.exchange_busy_seconds_per_byte > 0
                        ? d.exchange_busy_seconds_per_byte
                        : d.up_busy_seconds_per_byte + d.down_busy_seconds_per_byte;
                epoch.busy[i] += 2.0 * double(n - 1) / double(n) * reduced * perByte;
            }
        epoch.compute = steps * stepCompute;
        epoch.communication = comm;
        epoch.seconds = epoch.compute + epoch.communication;
    }
    // The evaluation: the test set split by speed; the epoch's barriers are round trips.
    double eval = 0.0, barrier = 0.0;
    const auto testParts = splitByShares(m_work.test_samples, c.shares);
    for (std::size_t i = 0; i < n; ++i) {
        const double t = double(testParts[i]) * device(i).eval_per_sample_seconds;
        epoch.busy[i] += t;
        eval = std::max(eval, t);
        barrier = std::max(barrier, 2.0 * device(i).rtt_seconds);
    }
    const double epochs = double(m_work.epochs);
    c.compute_seconds = epochs * (epoch.compute + eval);
    c.communication_seconds = epochs * (epoch.communication + barrier);
    c.seconds = epochs * (epoch.seconds + eval + barrier);

    c.watts = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const DeviceCost &d = device(i);
        if (!d.powerKnown()) {
            c.power_known = false;
            continue;
        }
        const double u =
            c.seconds > 0 ? std::clamp(epochs * epoch.busy[i] / c.seconds, 0.0, 1.0) : 0;
        c.watts += d.idle_watts + (d.busy_watts - d.idle_watts) * u;
    }
    c.joules = c.watts * c.seconds;
    c.edp = c.joules * c.seconds;
}

std::vector<PlanCandidate> ClusterPlanner::candidates(const std::vector<PlanMode> &modes) const
{
    std::vector<PlanCandidate> all;
    const int n = int(m_devices.size());
    const bool sync = std::find(modes.begin(), modes.end(), PlanMode::Sync) != modes.end();
    for (PlanMode mode : modes)
        for (unsigned mask = 1; mask < (1u << n); ++mask) {
            std::vector<int> subset;
            for (int i = 0; i < n; ++i)
                if (mask & (1u << i))
                    subset.push_back(i);
            if (subset.size() == 1 && mode != PlanMode::Sync && sync)
                continue;
            all.push_back(predict(subset, mode));
        }
    return all;
}

std::string ClusterPlanner::unsuitable(const PlanCandidate &c, const PlanObjective &o)
{
    if (!c.refused.empty())
        return c.refused;
    if (o.needsPower() && !c.power_known)
        return "the power of a device is not known";
    if (o.max_watts > 0 && c.watts > o.max_watts)
        return "draws " + NumberText::fixed(c.watts, 1) + " W, over the limit of " +
               NumberText::fixed(o.max_watts, 1) + " W";
    if (o.deadline_seconds > 0 && c.seconds > o.deadline_seconds)
        return "takes " + NumberText::fixed(c.seconds, 1) + " s, past the deadline of " +
               NumberText::fixed(o.deadline_seconds, 1) + " s";
    return {};
}

std::vector<std::size_t> ClusterPlanner::rankOrder(const std::vector<PlanCandidate> &all,
                                                   const PlanObjective &o)
{
    std::vector<bool> ok(all.size());
    for (std::size_t i = 0; i < all.size(); ++i)
        ok[i] = unsuitable(all[i], o).empty();
    std::vector<double> key(all.size(), 0.0);
    if (o.kind == PlanObjective::Kind::Mix) {
        // Each figure divided by the best suitable candidate's, so the weights compare alike.
        double best[4] = {0, 0, 0, 0};
        bool any = false;
        for (std::size_t i = 0; i < all.size(); ++i) {
            if (!ok[i])
                continue;
            const double v[4] = {all[i].seconds, all[i].watts, all[i].joules, all[i].edp};
            for (int k = 0; k < 4; ++k)
                best[k] = any ? std::min(best[k], v[k]) : v[k];
            any = true;
        }
        const double w[4] = {o.time_weight, o.power_weight, o.energy_weight, o.edp_weight};
        for (std::size_t i = 0; i < all.size(); ++i) {
            const double v[4] = {all[i].seconds, all[i].watts, all[i].joules, all[i].edp};
            for (int k = 0; k < 4; ++k)
                if (w[k] > 0)
                    key[i] += w[k] * v[k] / std::max(best[k], 1e-12);
        }
    } else {
        for (std::size_t i = 0; i < all.size(); ++i)
            key[i] = objectiveValue(all[i], o.kind);
    }
    std::vector<std::size_t> order(all.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (ok[a] != ok[b])
            return bool(ok[a]);
        if (key[a] != key[b])
            return key[a] < key[b];
        return all[a].seconds < all[b].seconds; // ties (equal power): the faster first
    });
    return order;
}

std::vector<PlanCandidate> ClusterPlanner::rank(std::vector<PlanCandidate> all,
                                                const PlanObjective &o)
{
    std::vector<PlanCandidate> ranked;
    ranked.reserve(all.size());
    for (std::size_t i : rankOrder(all, o))
        ranked.push_back(std::move(all[i]));
    return ranked;
}

} // namespace edgetrain::core

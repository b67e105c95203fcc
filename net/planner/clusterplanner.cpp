#include "net/planner/clusterplanner.h"

#include "core/error.h"
#include "net/protocol/cborfield.h"

#include <QCborArray>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace edgetrain::net {

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

bool needsPower(const PlanObjective &o)
{
    using K = PlanObjective::Kind;
    return o.kind == K::Power || o.kind == K::Energy || o.kind == K::Edp || o.max_watts > 0.0 ||
           (o.kind == K::Mix && (o.power_weight > 0 || o.energy_weight > 0 || o.edp_weight > 0));
}

} // namespace

DeviceMeasurement measurementFromReady(const QString &name, const QCborMap &ready)
{
    DeviceMeasurement d;
    d.name = name;
    const QCborMap p = ready.value(QLatin1String("profile")).toMap();
    const QCborArray batches = p.value(QLatin1String("batches")).toArray();
    const QCborArray seconds = p.value(QLatin1String("step_seconds")).toArray();
    if (batches.size() == 2 && seconds.size() == 2) {
        const double b1 = double(cborInteger(batches[0])), b2 = double(cborInteger(batches[1]));
        const double t1 = seconds[0].toDouble(), t2 = seconds[1].toDouble();
        if (b2 > b1 && t2 >= t1) {
            d.step_per_sample_seconds = (t2 - t1) / (b2 - b1);
            d.step_fixed_seconds = t1 - d.step_per_sample_seconds * b1;
        }
        if (d.step_fixed_seconds < 0.0 || d.step_per_sample_seconds <= 0.0) {
            d.step_fixed_seconds = 0.0;
            d.step_per_sample_seconds = b2 > 0 ? t2 / b2 : 0.0;
        }
    } else {
        // An older node: its speed alone, as time per sample.
        const double speed = ready.value(QLatin1String("images_per_second")).toDouble();
        d.step_per_sample_seconds = speed > 0 ? 1.0 / speed : 0.0;
    }
    d.update_seconds = p.value(QLatin1String("update_seconds")).toDouble();
    d.eval_per_sample_seconds = p.value(QLatin1String("eval_seconds_per_sample")).toDouble();
    d.max_local_batch = cborInteger(p.value(QLatin1String("max_local_batch")), -1);
    d.idle_watts = p.value(QLatin1String("idle_watts")).toDouble(-1.0);
    d.busy_watts = p.value(QLatin1String("busy_watts")).toDouble(-1.0);
    d.power_source = p.value(QLatin1String("power_source")).toString();
    const QCborMap exchange = p.value(QLatin1String("exchange")).toMap();
    d.exchange_seconds_per_byte =
        std::max(0.0, exchange.value(QLatin1String("seconds_per_byte")).toDouble());
    d.exchange_busy_seconds_per_byte =
        std::max(0.0, exchange.value(QLatin1String("busy_seconds_per_byte")).toDouble());
    d.exchange_error = exchange.value(QLatin1String("error")).toString();
    d.exchange_link_error = exchange.value(QLatin1String("link_error")).toString();
    const QString over = exchange.value(QLatin1String("over")).toString();
    d.exchange_over = over == QLatin1String("link") ? DeviceMeasurement::ExchangeOver::Link
                      : over == QLatin1String("loopback")
                          ? DeviceMeasurement::ExchangeOver::Loopback
                          : DeviceMeasurement::ExchangeOver::Unknown;
    d.profile_seconds = std::max(0.0, p.value(QLatin1String("seconds")).toDouble());
    const QCborMap link = p.value(QLatin1String("link")).toMap();
    d.link_probe_seconds = std::max(0.0, link.value(QLatin1String("seconds")).toDouble());
    d.link_rates_timed = false;
    if (link.contains(QLatin1String("error"))) {
        d.link_error = link.value(QLatin1String("error")).toString();
    } else if (link.isEmpty()) {
        d.link_error = QStringLiteral("the node did not probe it");
    } else {
        d.rtt_seconds = link.value(QLatin1String("rtt_seconds")).toDouble();
        d.link_rates_timed = link.contains(QLatin1String("up_bytes_per_second"));
        d.up_bytes_per_second = link.value(QLatin1String("up_bytes_per_second")).toDouble();
        d.down_bytes_per_second = link.value(QLatin1String("down_bytes_per_second")).toDouble();
        d.up_busy_seconds_per_byte =
            std::max(0.0, link.value(QLatin1String("up_busy_seconds_per_byte")).toDouble());
        d.down_busy_seconds_per_byte =
            std::max(0.0, link.value(QLatin1String("down_busy_seconds_per_byte")).toDouble());
    }
    return d;
}

PlanWork workFromReady(const JobSpec &job, const QCborMap &ready)
{
    PlanWork w;
    w.train_samples = cborInteger(ready.value(QLatin1String("train_samples")));
    w.test_samples = cborInteger(ready.value(QLatin1String("test_samples")));
    w.epochs = job.epochs;
    w.batch = job.batch;
    w.gradient_floats = cborInteger(ready.value(QLatin1String("gradient_floats")));
    w.averaged_floats = cborInteger(ready.value(QLatin1String("averaged_floats")));
    w.buffer_floats = cborInteger(ready.value(QLatin1String("buffer_floats")));
    if (w.gradient_floats <= 0) // an older node: its parameter count
        w.gradient_floats = w.averaged_floats =
            cborInteger(ready.value(QLatin1String("parameters")));
    w.local_steps = job.local_steps;
    w.async_value_bytes = job.exchange == QLatin1String("float32") ? 4.0 : 2.0;
    return w;
}

ClusterPlanResult planCluster(const std::vector<std::pair<QString, QCborMap>> &ready,
                              const JobSpec &job, const PlanObjective &objective,
                              const std::vector<TrainingMode> &modes)
{
    ClusterPlanResult r;
    r.objective = objective;
    for (const auto &[name, body] : ready) {
        r.devices.push_back(measurementFromReady(name, body));
        r.profiling_seconds = std::max(r.profiling_seconds, r.devices.back().profile_seconds);
        r.link_probe_seconds = std::max(r.link_probe_seconds, r.devices.back().link_probe_seconds);
    }
    if (ready.empty() || int(ready.size()) > ClusterPlanner::kMaxDevices) {
        r.error = QStringLiteral("the planner takes 1 to %1 nodes, not %2")
                      .arg(ClusterPlanner::kMaxDevices)
                      .arg(ready.size());
        return r;
    }
    const ClusterPlanner planner(r.devices, workFromReady(job, ready.front().second));
    r.ranked = ClusterPlanner::rank(planner.candidates(modes), objective);
    if (!r.ranked.empty() && ClusterPlanner::unsuitable(r.ranked.front(), objective).isEmpty())
        r.chosen = r.ranked.front();
    return r;
}

std::optional<PlanObjective> PlanObjective::parse(const QString &text, QString *error)
{
    PlanObjective o;
    const QString t = text.trimmed().toLower();
    if (t == QLatin1String("time"))
        o.kind = Kind::Time;
    else if (t == QLatin1String("power"))
        o.kind = Kind::Power;
    else if (t == QLatin1String("energy"))
        o.kind = Kind::Energy;
    else if (t == QLatin1String("edp"))
        o.kind = Kind::Edp;
    else if (t.startsWith(QLatin1String("mix:"))) {
        o.kind = Kind::Mix;
        o.time_weight = 0.0;
        double sum = 0.0;
        for (const QString &part : t.mid(4).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            const QStringList kv = part.split(QLatin1Char('='));
            bool ok = kv.size() == 2;
            const double w = ok ? kv[1].toDouble(&ok) : 0.0; // QString::toDouble: C locale
            if (!ok || !(w >= 0.0) || !std::isfinite(w)) {
                *error = QStringLiteral("'%1' in objective '%2' is not NAME=WEIGHT with a weight "
                                        "of 0 or more")
                             .arg(part, text);
                return std::nullopt;
            }
            const QString name = kv[0].trimmed();
            if (name == QLatin1String("time"))
                o.time_weight = w;
            else if (name == QLatin1String("power"))
                o.power_weight = w;
            else if (name == QLatin1String("energy"))
                o.energy_weight = w;
            else if (name == QLatin1String("edp"))
                o.edp_weight = w;
            else {
                *error = QStringLiteral("objective '%1': '%2' is not time, power, energy or edp")
                             .arg(text, name);
                return std::nullopt;
            }
            sum += w;
        }
        if (!(sum > 0.0)) {
            *error = QStringLiteral("objective '%1' gives no weight above 0").arg(text);
            return std::nullopt;
        }
    } else {
        *error = QStringLiteral("the objective must be time, power, energy, edp or "
                                "mix:time=W,power=W,energy=W,edp=W, not '%1'")
                     .arg(text);
        return std::nullopt;
    }
    return o;
}

QString PlanObjective::name() const
{
    switch (kind) {
    case Kind::Time:
        return QStringLiteral("time");
    case Kind::Power:
        return QStringLiteral("power");
    case Kind::Energy:
        return QStringLiteral("energy");
    case Kind::Edp:
        return QStringLiteral("edp");
    case Kind::Mix:
        break;
    }
    QStringList parts;
    const std::pair<const char *, double> weights[] = {{"time", time_weight},
                                                       {"power", power_weight},
                                                       {"energy", energy_weight},
                                                       {"edp", edp_weight}};
    for (const auto &[n, w] : weights)
        if (w > 0)
            parts << QStringLiteral("%1=%2").arg(QLatin1String(n)).arg(w);
    return QStringLiteral("mix:") + parts.join(QLatin1Char(','));
}

ClusterPlanner::ClusterPlanner(std::vector<DeviceMeasurement> devices, PlanWork work)
    : m_devices(std::move(devices)), m_work(work)
{
    if (m_devices.empty() || int(m_devices.size()) > kMaxDevices)
        throw core::Error("the planner takes 1 to " + std::to_string(kMaxDevices) +
                          " devices, not " + std::to_string(m_devices.size()));
    if (m_work.batch < 1 || m_work.epochs < 0 || m_work.train_samples < 0 || m_work.local_steps < 1)
        throw core::Error("the planner's work needs a batch of at least 1 and local steps of at "
                          "least 1");
}

void capShares(std::vector<double> &shares, const std::vector<double> &cap)
{
    for (std::size_t round = 0; round <= shares.size(); ++round) {
        double excess = 0.0, open = 0.0;
        for (std::size_t i = 0; i < shares.size(); ++i)
            if (shares[i] > cap[i]) {
                excess += shares[i] - cap[i];
                shares[i] = cap[i];
            }
        for (std::size_t i = 0; i < shares.size(); ++i)
            if (shares[i] < cap[i])
                open += shares[i];
        if (excess <= 1e-12 || open <= 0.0)
            break; // all fit, or nobody has room
        for (std::size_t i = 0; i < shares.size(); ++i)
            if (shares[i] < cap[i])
                shares[i] += excess * shares[i] / open;
    }
}

std::vector<double> settledShares(const std::vector<const DeviceMeasurement *> &devices,
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

std::vector<double> ClusterPlanner::shares(const std::vector<int> &devices) const
{
    std::vector<const DeviceMeasurement *> d;
    for (int i : devices)
        d.push_back(&m_devices[std::size_t(i)]);
    return settledShares(d, m_work.batch);
}

double ClusterPlanner::allreduceSeconds(const std::vector<int> &devices, double bytes) const
{
    const std::size_t n = devices.size();
    if (n < 2 || bytes <= 0)
        return 0.0;
    // gloo's ring: a reduce-scatter and an allgather, 2(n-1) rounds of bytes/n each; a round
    // lasts as long as its slowest hop: rank k sends to rank k+1 through both links while
    // the slower of the two ends sends, receives and adds the chunk, whichever takes longer.
    // (Where the link's rates were not timed - the exchange over the link stood for them - the
    // hop is its half round trip alone: the exchange's figure carries its own round trips,
    // spread over its chunk, so a smaller chunk's round is read slightly short of them.)
    // Overlapped, not added: on the edge lab, a Pi 3B pair on its 100 Mbit/s link trains at
    // the wire's time (the sum predicted 10.9 s for 6.3 s measured). An end's exchange figure
    // is timed over its own link against the coordinator where it could be (the wire, its CPU
    // and the network stack as a round meets them: a Pi 3B's is its wire's, ~83 ns a byte at
    // 100 Mbit/s; a Pi 4B's 13-47 on gigabit, where its link says 8), else on the device over
    // loopback, which misses the path (gigabit groups trained 14-29 % slower than that
    // predicted; docs/evidence/issue-12/exchange, pair-exchange).
    const double chunk = bytes / double(n);
    double round = 0.0;
    for (std::size_t k = 0; k < n; ++k) {
        const auto &from = m_devices[std::size_t(devices[k])];
        const auto &to = m_devices[std::size_t(devices[(k + 1) % n])];
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

PlanCandidate ClusterPlanner::predict(const std::vector<int> &devices, TrainingMode mode) const
{
    PlanCandidate c;
    c.devices = devices;
    std::sort(c.devices.begin(), c.devices.end());
    c.mode = mode;
    const std::size_t n = c.devices.size();
    for (int i : c.devices)
        c.names << m_devices.at(std::size_t(i)).name;
    if (n == 0) {
        c.refused = QStringLiteral("no device");
        return c;
    }

    // Memory: a device that cannot take one sample refuses the job; the others cap their share.
    std::vector<double> cap(n, 1.0);
    for (std::size_t i = 0; i < n; ++i) {
        const auto &d = m_devices[std::size_t(c.devices[i])];
        if (d.max_local_batch == 0) {
            c.refused =
                QStringLiteral("%1 cannot hold one sample of the model in its memory").arg(d.name);
            return c;
        }
        // As the coordinator caps it (fitShares): a worker plans its memory for its part of
        // batch + 1, at most 2 + (batch + 1 - n) x share.
        // A device that takes batch + 1 (the most the worker's search asks for) takes any part.
        if (d.max_local_batch > 0 && d.max_local_batch <= m_work.batch)
            cap[i] = std::min(
                1.0, std::max(1e-3, double(d.max_local_batch - 2) /
                                        std::max(1.0, double(m_work.batch + 1 - std::int64_t(n)))));
    }
    for (int i : c.devices) {
        const DeviceMeasurement &d = m_devices[std::size_t(i)];
        if (n > 1 && !d.link_error.isEmpty()) {
            c.refused =
                QStringLiteral("the link of %1 was not measured: %2").arg(d.name, d.link_error);
            return c;
        }
        // Its pushes and pulls ride the link's rates, alone too: the parameter server is the
        // coordinator's (a plan for async asks for them).
        if (mode == TrainingMode::Async && !d.link_rates_timed) {
            c.refused = QStringLiteral("the link of %1 was not timed for async").arg(d.name);
            return c;
        }
    }
    c.shares = shares(c.devices);
    if (std::accumulate(cap.begin(), cap.end(), 0.0) < 1.0 - 1e-9) {
        c.refused =
            QStringLiteral("together their memory holds less than a batch of %1").arg(m_work.batch);
        return c;
    }
    capShares(c.shares, cap);

    const auto parts = splitByShares(m_work.batch, c.shares);
    // Seconds each device is busy over the whole work: computing, and its network stack's work
    // for what it sends and receives (at busy_watts' utilisation).
    std::vector<double> busy(n, 0.0);
    double epochSeconds = 0.0, epochCompute = 0.0, epochComm = 0.0;
    const double steps = ceilDiv(m_work.train_samples, m_work.batch);
    if (mode == TrainingMode::Async) {
        // Each device: its slice of the data in local batches of batch x share; per push the
        // gradients (and batch-norm statistics, float32) go up, the model (a delta) comes down,
        // at the job's exchange's bytes per value.
        const auto slices = splitByShares(m_work.train_samples, c.shares);
        const double upBytes = m_work.async_value_bytes * double(m_work.gradient_floats) +
                               kFloatBytes * double(m_work.buffer_floats);
        const double downBytes = m_work.async_value_bytes * double(m_work.averaged_floats);
        for (std::size_t i = 0; i < n; ++i) {
            const auto &d = m_devices[std::size_t(c.devices[i])];
            const std::int64_t local =
                std::max<std::int64_t>(1, std::llround(double(m_work.batch) * c.shares[i]));
            const double pushes = ceilDiv(slices[i], local);
            const double compute = d.stepSeconds(local);
            const double comm =
                d.rtt_seconds + (d.up_bytes_per_second > 0 ? upBytes / d.up_bytes_per_second : 0) +
                (d.down_bytes_per_second > 0 ? downBytes / d.down_bytes_per_second : 0);
            const double t = pushes * (compute + comm);
            busy[i] = pushes * (compute + upBytes * d.up_busy_seconds_per_byte +
                                downBytes * d.down_busy_seconds_per_byte);
            if (t > epochSeconds) {
                epochSeconds = t;
                epochCompute = pushes * compute;
                epochComm = pushes * comm;
            }
        }
    } else {
        double stepCompute = 0.0;
        for (std::size_t i = 0; i < n; ++i) {
            const auto &d = m_devices[std::size_t(c.devices[i])];
            const double t = d.stepSeconds(parts[i]) + d.update_seconds;
            busy[i] = steps * t;
            stepCompute = std::max(stepCompute, t);
        }
        double comm = 0.0, reduced = 0.0; // seconds, and bytes allreduced over the epoch
        if (mode == TrainingMode::Sync) {
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
                const auto &d = m_devices[std::size_t(c.devices[i])];
                const double perByte =
                    d.exchange_busy_seconds_per_byte > 0
                        ? d.exchange_busy_seconds_per_byte
                        : d.up_busy_seconds_per_byte + d.down_busy_seconds_per_byte;
                busy[i] += 2.0 * double(n - 1) / double(n) * reduced * perByte;
            }
        epochCompute = steps * stepCompute;
        epochComm = comm;
        epochSeconds = epochCompute + epochComm;
    }
    // The evaluation: the test set split by speed; the epoch's barriers are round trips.
    double eval = 0.0, barrier = 0.0;
    const auto testParts = splitByShares(m_work.test_samples, c.shares);
    for (std::size_t i = 0; i < n; ++i) {
        const auto &d = m_devices[std::size_t(c.devices[i])];
        const double t = double(testParts[i]) * d.eval_per_sample_seconds;
        busy[i] += t;
        eval = std::max(eval, t);
        barrier = std::max(barrier, 2.0 * d.rtt_seconds);
    }
    const double epochs = double(m_work.epochs);
    c.compute_seconds = epochs * (epochCompute + eval);
    c.communication_seconds = epochs * (epochComm + barrier);
    c.seconds = epochs * (epochSeconds + eval + barrier);

    c.watts = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
        const auto &d = m_devices[std::size_t(c.devices[i])];
        if (!d.powerKnown()) {
            c.power_known = false;
            continue;
        }
        const double u = c.seconds > 0 ? std::clamp(epochs * busy[i] / c.seconds, 0.0, 1.0) : 0;
        c.watts += d.idle_watts + (d.busy_watts - d.idle_watts) * u;
    }
    c.joules = c.watts * c.seconds;
    c.edp = c.joules * c.seconds;
    return c;
}

std::vector<PlanCandidate> ClusterPlanner::candidates(const std::vector<TrainingMode> &modes) const
{
    std::vector<PlanCandidate> all;
    const int n = int(m_devices.size());
    for (TrainingMode mode : modes)
        for (unsigned mask = 1; mask < (1u << n); ++mask) {
            std::vector<int> subset;
            for (int i = 0; i < n; ++i)
                if (mask & (1u << i))
                    subset.push_back(i);
            // One device trains alone: every mode is the same run; keep it once, as sync.
            if (subset.size() == 1 && mode != TrainingMode::Sync &&
                std::find(modes.begin(), modes.end(), TrainingMode::Sync) != modes.end())
                continue;
            all.push_back(predict(subset, mode));
        }
    return all;
}

QString ClusterPlanner::unsuitable(const PlanCandidate &c, const PlanObjective &o)
{
    if (!c.refused.isEmpty())
        return c.refused;
    if (needsPower(o) && !c.power_known)
        return QStringLiteral("the power of a device is not known");
    if (o.max_watts > 0 && c.watts > o.max_watts)
        return QStringLiteral("draws %1 W, over the limit of %2 W")
            .arg(c.watts, 0, 'f', 1)
            .arg(o.max_watts, 0, 'f', 1);
    if (o.deadline_seconds > 0 && c.seconds > o.deadline_seconds)
        return QStringLiteral("takes %1 s, past the deadline of %2 s")
            .arg(c.seconds, 0, 'f', 1)
            .arg(o.deadline_seconds, 0, 'f', 1);
    return {};
}

std::vector<PlanCandidate> ClusterPlanner::rank(std::vector<PlanCandidate> all,
                                                const PlanObjective &o)
{
    std::vector<double> key(all.size(), 0.0);
    if (o.kind == PlanObjective::Kind::Mix) {
        // Each figure divided by the best suitable candidate's, so the weights compare alike.
        double best[4] = {0, 0, 0, 0};
        bool any = false;
        for (const auto &c : all) {
            if (!unsuitable(c, o).isEmpty())
                continue;
            const double v[4] = {c.seconds, c.watts, c.joules, c.edp};
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
    std::vector<bool> ok(all.size());
    for (std::size_t i = 0; i < all.size(); ++i)
        ok[i] = unsuitable(all[i], o).isEmpty();
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        if (ok[a] != ok[b])
            return bool(ok[a]);
        if (key[a] != key[b])
            return key[a] < key[b];
        return all[a].seconds < all[b].seconds; // ties (equal power): the faster first
    });
    std::vector<PlanCandidate> ranked;
    ranked.reserve(all.size());
    for (std::size_t i : order)
        ranked.push_back(std::move(all[i]));
    return ranked;
}

} // namespace edgetrain::net

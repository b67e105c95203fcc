#include "net/planner/clusterplanner.h"

#include "net/protocol/cborfield.h"

#include <QCborArray>

#include <algorithm>

namespace edgetrain::net {

namespace {

QStringList qtNames(const std::vector<std::string> &names)
{
    QStringList out;
    for (const std::string &n : names)
        out << QString::fromStdString(n);
    return out;
}

std::vector<core::PlanDevice> planDevices(const std::vector<DeviceMeasurement> &devices)
{
    std::vector<core::PlanDevice> out;
    for (const DeviceMeasurement &d : devices)
        out.push_back(d.planDevice());
    return out;
}

std::vector<core::PlanCandidate> toCore(const std::vector<PlanCandidate> &candidates)
{
    std::vector<core::PlanCandidate> out;
    out.reserve(candidates.size());
    for (const PlanCandidate &c : candidates)
        out.push_back(c.toCore());
    return out;
}

} // namespace

core::PlanDevice DeviceMeasurement::planDevice() const
{
    return {name.toStdString(), *this, link_error.toStdString()};
}

PlanCandidate PlanCandidate::fromCore(const core::PlanCandidate &c)
{
    PlanCandidate out;
    static_cast<core::CandidateFigures &>(out) = c;
    out.devices = c.devices;
    out.names = qtNames(c.names);
    out.mode = trainingMode(c.mode);
    out.refused = QString::fromStdString(c.refused);
    return out;
}

core::PlanCandidate PlanCandidate::toCore() const
{
    core::PlanCandidate out;
    static_cast<core::CandidateFigures &>(out) = *this;
    out.devices = devices;
    for (const QString &n : names)
        out.names.push_back(n.toStdString());
    out.mode = planMode(mode);
    out.refused = refused.toStdString();
    return out;
}

core::PlanMode planMode(TrainingMode mode)
{
    switch (mode) {
    case TrainingMode::Sync:
        return core::PlanMode::Sync;
    case TrainingMode::Async:
        return core::PlanMode::Async;
    case TrainingMode::LocalSgd:
        return core::PlanMode::LocalSgd;
    }
    return core::PlanMode::Sync;
}

TrainingMode trainingMode(core::PlanMode mode)
{
    switch (mode) {
    case core::PlanMode::Sync:
        return TrainingMode::Sync;
    case core::PlanMode::Async:
        return TrainingMode::Async;
    case core::PlanMode::LocalSgd:
        return TrainingMode::LocalSgd;
    }
    return TrainingMode::Sync;
}

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
    std::string why;
    const auto parsed = core::PlanObjective::parse(text.toStdString(), &why);
    if (!parsed) {
        *error = QString::fromStdString(why);
        return std::nullopt;
    }
    return PlanObjective{*parsed};
}

QString PlanObjective::name() const
{
    return QString::fromStdString(core::PlanObjective::name());
}

std::vector<double> settledShares(const std::vector<const DeviceMeasurement *> &devices,
                                  std::int64_t batch)
{
    return core::settledShares(
        std::vector<const core::DeviceCost *>(devices.begin(), devices.end()), batch);
}

ClusterPlanner::ClusterPlanner(std::vector<DeviceMeasurement> devices, PlanWork work)
    : m_devices(std::move(devices)), m_model(planDevices(m_devices), work)
{}

std::vector<PlanCandidate> ClusterPlanner::candidates(const std::vector<TrainingMode> &modes) const
{
    std::vector<core::PlanMode> planModes;
    for (TrainingMode m : modes)
        planModes.push_back(planMode(m));
    std::vector<PlanCandidate> all;
    for (const core::PlanCandidate &c : m_model.candidates(planModes))
        all.push_back(PlanCandidate::fromCore(c));
    return all;
}

PlanCandidate ClusterPlanner::predict(const std::vector<int> &devices, TrainingMode mode) const
{
    return PlanCandidate::fromCore(m_model.predict(devices, planMode(mode)));
}

std::vector<PlanCandidate> ClusterPlanner::rank(std::vector<PlanCandidate> candidates,
                                                const PlanObjective &objective)
{
    std::vector<PlanCandidate> ranked;
    ranked.reserve(candidates.size());
    for (std::size_t i : core::ClusterPlanner::rankOrder(toCore(candidates), objective))
        ranked.push_back(std::move(candidates[i]));
    return ranked;
}

QString ClusterPlanner::unsuitable(const PlanCandidate &c, const PlanObjective &objective)
{
    return QString::fromStdString(core::ClusterPlanner::unsuitable(c.toCore(), objective));
}

double ClusterPlanner::allreduceSeconds(const std::vector<int> &devices, double bytes) const
{
    return m_model.allreduceSeconds(devices, bytes);
}

std::vector<double> ClusterPlanner::shares(const std::vector<int> &devices) const
{
    return m_model.shares(devices);
}

} // namespace edgetrain::net

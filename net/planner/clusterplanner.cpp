#include "net/planner/clusterplanner.h"

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

DeviceMeasurement::ExchangeOver exchangeOver(ExchangeFigures::Over over)
{
    switch (over) {
    case ExchangeFigures::Over::Link:
        return DeviceMeasurement::ExchangeOver::Link;
    case ExchangeFigures::Over::Loopback:
        return DeviceMeasurement::ExchangeOver::Loopback;
    case ExchangeFigures::Over::Unknown:
        break;
    }
    return DeviceMeasurement::ExchangeOver::Unknown;
}

/** The compute line through the profile's two batch sizes, else (an older node) its speed. */
void readCompute(const JobReady &ready, DeviceMeasurement *d)
{
    const ProfileReport &p = ready.profile;
    if (p.large_batch <= 0) {
        const double speed = ready.images_per_second;
        d->step_per_sample_seconds = speed > 0 ? 1.0 / speed : 0.0;
        return;
    }
    const double b1 = double(p.small_batch), b2 = double(p.large_batch);
    const double t1 = p.small_step_seconds, t2 = p.large_step_seconds;
    if (b2 > b1 && t2 >= t1) {
        d->step_per_sample_seconds = (t2 - t1) / (b2 - b1);
        d->step_fixed_seconds = t1 - d->step_per_sample_seconds * b1;
    }
    if (d->step_fixed_seconds < 0.0 || d->step_per_sample_seconds <= 0.0) {
        d->step_fixed_seconds = 0.0;
        d->step_per_sample_seconds = t2 / b2;
    }
}

/** The link the node probed to the coordinator, or why there is none. */
void readLink(const std::optional<LinkFigures> &link, DeviceMeasurement *d)
{
    d->link_rates_timed = false;
    if (!link) {
        d->link_error = QStringLiteral("the node did not probe it");
        return;
    }
    d->link_probe_seconds = std::max(0.0, link->seconds);
    if (!link->error.isEmpty()) {
        d->link_error = link->error;
        return;
    }
    d->rtt_seconds = link->rtt_seconds;
    d->link_rates_timed = link->rates_timed;
    d->up_bytes_per_second = link->up_bytes_per_second;
    d->down_bytes_per_second = link->down_bytes_per_second;
    d->up_busy_seconds_per_byte = std::max(0.0, link->up_busy_seconds_per_byte);
    d->down_busy_seconds_per_byte = std::max(0.0, link->down_busy_seconds_per_byte);
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

DeviceMeasurement measurementFromReady(const QString &name, const JobReady &ready)
{
    DeviceMeasurement d;
    d.name = name;
    readCompute(ready, &d);
    const ProfileReport &p = ready.profile;
    d.update_seconds = p.update_seconds;
    d.eval_per_sample_seconds = p.eval_seconds_per_sample;
    d.max_local_batch = p.max_local_batch;
    d.idle_watts = p.idle_watts;
    d.busy_watts = p.busy_watts;
    d.power_source = p.power_source;
    d.exchange_seconds_per_byte = std::max(0.0, p.exchange.seconds_per_byte);
    d.exchange_busy_seconds_per_byte =
        std::max(0.0, p.exchange.busy_seconds_per_byte.value_or(0.0));
    d.exchange_error = p.exchange.error;
    d.exchange_link_error = p.exchange.link_error;
    d.exchange_over = exchangeOver(p.exchange.over);
    d.profile_seconds = std::max(0.0, p.seconds);
    readLink(p.link, &d);
    return d;
}

DeviceMeasurement measurementFromReady(const QString &name, const QCborMap &ready)
{
    return measurementFromReady(name, JobReady::fromCborLenient(ready));
}

PlanWork workFromReady(const JobSpec &job, const JobReady &ready)
{
    PlanWork w;
    w.train_samples = ready.train_samples;
    w.test_samples = ready.test_samples;
    w.epochs = job.epochs;
    w.batch = job.batch;
    w.gradient_floats = ready.gradient_floats;
    w.averaged_floats = ready.averaged_floats;
    w.buffer_floats = ready.buffer_floats;
    if (w.gradient_floats <= 0) // an older node: its parameter count
        w.gradient_floats = w.averaged_floats = ready.parameters;
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
    std::vector<JobReady> bodies;
    for (const auto &[name, body] : ready) {
        bodies.push_back(JobReady::fromCborLenient(body));
        r.devices.push_back(measurementFromReady(name, bodies.back()));
        r.profiling_seconds = std::max(r.profiling_seconds, r.devices.back().profile_seconds);
        r.link_probe_seconds = std::max(r.link_probe_seconds, r.devices.back().link_probe_seconds);
    }
    if (ready.empty() || int(ready.size()) > ClusterPlanner::kMaxDevices) {
        r.error = QStringLiteral("the planner takes 1 to %1 nodes, not %2")
                      .arg(ClusterPlanner::kMaxDevices)
                      .arg(ready.size());
        return r;
    }
    const ClusterPlanner planner(r.devices, workFromReady(job, bodies.front()));
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

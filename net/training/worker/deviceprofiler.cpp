#include "net/training/worker/deviceprofiler.h"

#include "core/flatstate.h"
#include "core/sgd.h"
#include "net/training/exchangeprobe.h"
#include "net/training/exchangeprobehost.h"
#include "net/training/trainingworker.h"
#include "net/training/worker/epochtally.h"
#include "net/training/worker/linkturn.h"
#include "net/training/worker/phaseclock.h"

#include <QStringList>
#include <QThread>

#include <algorithm>
#include <random>

namespace edgetrain::net::worker {

namespace {

/** Neither timed nor failed. */
bool notTried(const ExchangeFigures &e)
{
    return !e.timed && e.error.isEmpty();
}

} // namespace

DeviceProfiler::DeviceProfiler(const JobSpec &job, const WorkerContext &context, JobLink &link,
                               const LoadedJob &loaded, MemoryGuard &memory)
    : m_job(job), m_context(context), m_link(link), m_loaded(loaded), m_memory(memory),
      m_windows(windowsFor(context)), m_steps(std::max(1, job.profile_steps))
{}

double DeviceProfiler::typicalImagesPerSecond(const ProfileReport &report)
{
    const std::int64_t small = report.small_batch, large = report.large_batch;
    const double smallSeconds = report.small_step_seconds, largeSeconds = report.large_step_seconds;
    const std::int64_t typical = std::min<std::int64_t>(large, 16);
    double typicalSeconds =
        largeSeconds * double(typical) / double(std::max<std::int64_t>(large, 1));
    if (large > small && largeSeconds > smallSeconds) {
        const double perSample = (largeSeconds - smallSeconds) / double(large - small);
        typicalSeconds = smallSeconds + perSample * double(typical - small);
    }
    return double(typical) / std::max(typicalSeconds, 1e-9);
}

DeviceProfiler::Windows DeviceProfiler::windowsFor(const WorkerContext &context)
{
    // Under a CPU quota (an edge-lab device) the kernel lets the node run at full speed for its
    // quota's share of each period and then stops it: a window of a few periods would time the
    // burst, not the device (a window gains up to one period's quota). Each window at least ten
    // periods and 0.2 s, at most 1 s (unknown period: the kernel's default 100 ms).
    Windows w;
    w.quota = context.cpu_quota_cores > 0;
    w.period = context.cpu_period_seconds > 0 ? context.cpu_period_seconds : 0.1;
    w.min = w.quota ? std::clamp(10 * w.period, 0.2, 1.0) : 0.2;
    // The exchange's three windows: ten periods each (at most 1.5 s in all): the best of
    // shorter ones can be a burst.
    w.exchange = w.quota ? std::clamp(30 * w.period, w.min, 1.5) : w.min;
    // Against the coordinator, in the node's turn (the others wait for it): four periods a
    // window. A window can gain one period's quota, but the wire's part of a round is not held
    // by it.
    w.pair = w.quota ? std::clamp(12 * w.period, 0.15, 1.2) : 0.15;
    // The update and evaluation over half the window each (ten periods at least under a quota).
    w.half = w.quota ? std::max(w.min / 2, 10 * w.period) : w.min / 2;
    return w;
}

ProfileReport DeviceProfiler::run()
{
    const auto began = Clock::now();
    ProfileReport report;
    PhaseClock clock(report);
    // What an allreduce of this job's gradients (and a sync step's trailer) costs this device
    // per byte of a ring round. Where the coordinator hosts a rank for it, timed against that
    // rank over the node's real path during its link turn: the wire, the CPU under its quota
    // and the network stack between, together, as a ring round meets them (two ranks on the
    // device itself time only the CPU's part). Else, or if the pair failed, on the device. The
    // figure is per byte: a larger model's is timed on at most ExchangeProbeHost::kMaxFloats,
    // to keep the turn short on a slow link.
    const std::size_t exchangeFloats = m_loaded.flat->gradientSize() + EpochTally::kTrailerFloats;
    LinkTurn turn(m_job, m_context, m_link, clock,
                  std::min(exchangeFloats, ExchangeProbeHost::kMaxFloats), m_windows.pair);

    turn.takeIfFree();
    // Only the planner reads the exchange's figure: a job that is not planned (no link probe)
    // times none. On the device, first, before the profiling model exists (the two ranks'
    // buffers and gloo's are the phase's peak) - if there will be no exchange with the
    // coordinator.
    const bool planned = m_job.link_probe_port > 0;
    if (planned && !m_job.exchange_probe) {
        exchangeOnDevice(report);
        clock.lap("exchange");
    }
    turn.takeIfFree();
    core::Model probe(m_loaded.model->spec(), m_job.seed);
    const std::int64_t maxBatch = m_memory.largestLocalBatch();
    clock.lap("memory");
    turn.takeIfFree();

    const auto [small, large] = batchesFor(maxBatch);
    // Samples drawn across the shard, as an epoch's shuffled order draws them: gathering a
    // batch is part of a step.
    const core::TensorDataset &train = *m_loaded.train;
    m_index.resize(static_cast<std::size_t>(std::max(small, large)));
    std::mt19937_64 pick(m_job.seed);
    std::uniform_int_distribution<std::int64_t> any(0, train.size() - 1);
    for (auto &i : m_index)
        i = any(pick);
    m_labels.resize(m_index.size() * static_cast<std::size_t>(train.labelWidth()));
    const double smallSeconds = timeSteps(probe, small);
    const double largeSeconds = large > small ? timeSteps(probe, large) : smallSeconds;
    clock.lap("steps");
    turn.takeIfFree();

    // What a step does besides, then evaluation (forward only) per sample at the large batch.
    report.update_seconds = timeUpdate(probe);
    core::PassContext eval;
    eval.training = false;
    core::Tensor x(probe.batchShape(large), core::MemoryCategory::Activations);
    train.gather(m_index.data(), large, x.data(), m_labels.data());
    clock.lap("update");
    turn.takeIfFree();
    report.eval_seconds_per_sample = timeRepeated([&] { probe.forward(x, eval); }) / double(large);
    clock.lap("evaluation");

    // The link, if it was never this node's turn: in line behind the other nodes' probes.
    turn.takeInLine();
    // The exchange with the coordinator failed (or the link probe did, before it): on the
    // device after all, beside the profiling model's buffers (if the job's memory limit refuses
    // the two ranks', that is the exchange's error: the planner then knows no bound).
    if (!notTried(turn.exchange()))
        report.exchange = turn.exchange();
    if (planned && notTried(report.exchange)) {
        exchangeOnDevice(report);
        clock.lap("exchange");
    }
    report.exchange.link_error = turn.exchangeError();
    report.link = turn.link();
    report.small_batch = small;
    report.large_batch = large;
    report.small_step_seconds = smallSeconds;
    report.large_step_seconds = largeSeconds;
    report.max_local_batch = maxBatch;
    report.steps = m_steps;
    report.idle_watts = m_context.idle_watts;
    report.busy_watts = m_context.busy_watts;
    report.power_source = m_context.power_source;
    report.seconds = secondsSince(began);

    QStringList said;
    for (const auto &[phase, seconds] : report.phases_seconds)
        said << QStringLiteral("%1 %2 s").arg(phase).arg(seconds, 0, 'f', 3);
    qCInfo(lcWorker).noquote() << QStringLiteral("profiled in %1 s: %2")
                                      .arg(report.seconds, 0, 'f', 3)
                                      .arg(said.join(QStringLiteral(", ")));
    return report;
}

void DeviceProfiler::exchangeOnDevice(ProfileReport &report) const
{
    const std::size_t floats = m_loaded.flat->gradientSize() + EpochTally::kTrailerFloats;
    try {
        // The CPU the two ranks really share: the quota, else this machine's processors (not a
        // device profile's cores, which the power figures use).
        const double cores = m_windows.quota ? m_context.cpu_quota_cores
                                             : double(std::max(1, QThread::idealThreadCount()));
        const ExchangeMeasurement e = measureExchange(floats, cores, m_windows.exchange);
        report.exchange = exchangeFigures(e, ExchangeFigures::Over::Loopback, m_context.busy_cores);
        qCInfo(lcWorker).noquote()
            << QStringLiteral("exchange timed in %1 s: setup %2 s, %3 allreduces in %4 s")
                   .arg(e.seconds, 0, 'f', 3)
                   .arg(e.setup_seconds, 0, 'f', 3)
                   .arg(e.repeats)
                   .arg(e.windows_seconds, 0, 'f', 3);
    } catch (const std::exception &e) { // a CollectiveError, or no thread to be had
        report.exchange = ExchangeFigures{};
        report.exchange.error = QString::fromUtf8(e.what());
        qCWarning(lcWorker).noquote() << "the exchange could not be timed:" << e.what();
    }
}

std::pair<std::int64_t, std::int64_t> DeviceProfiler::batchesFor(std::int64_t maxBatch) const
{
    // Both within what the budget takes: a small batch stepped without a plan where it did not
    // fit would be caught by the job's memory limit. The planner draws a line through the two
    // and reads it at each device's part of the batch, which beside faster devices can be 1 to
    // 3 samples: the points span that range (the intercept of a line through two close points
    // is mostly their noise).
    const std::int64_t samples = m_loaded.train->size();
    std::int64_t small = std::min<std::int64_t>({m_job.batch, 2, samples});
    std::int64_t large = std::min<std::int64_t>(m_job.batch, samples);
    if (maxBatch >= 1) {
        small = std::min(small, maxBatch);
        large = std::min(large, maxBatch);
    }
    return {small, large};
}

double DeviceProfiler::timeSteps(core::Model &probe, std::int64_t b)
{
    // The memory plan training would use; after a warm-up at least the job's steps and at least
    // the window (at most 4 s unless the steps take longer).
    const core::TensorDataset &train = *m_loaded.train;
    core::PassContext ctx;
    ctx.training = true;
    core::Tensor x(probe.batchShape(b), core::MemoryCategory::Activations);
    train.gather(m_index.data(), b, x.data(), m_labels.data());
    std::optional<core::Schedule> stepPlan;
    if (m_memory.budgetBytes() >= 0) {
        const core::MemoryPlan p = m_memory.plan(probe, b);
        if (p.fits && p.schedule.name() != "store-all")
            stepPlan = p.schedule;
    }
    const core::Schedule *plan = stepPlan ? &*stepPlan : nullptr;
    probe.forwardBackward(x, m_labels.data(), ctx, plan); // first touch, caches
    const auto start = Clock::now();
    int rounds = 0;
    while (rounds < m_steps || (secondsSince(start) < m_windows.min && rounds < 1000)) {
        train.gather(m_index.data(), b, x.data(), m_labels.data());
        probe.forwardBackward(x, m_labels.data(), ctx, plan);
        ++rounds;
        if (secondsSince(start) > 4.0 && rounds >= m_steps)
            break;
    }
    return secondsSince(start) / rounds;
}

double DeviceProfiler::timeRepeated(const std::function<void()> &work) const
{
    work(); // first touch
    const auto begin = Clock::now();
    int rounds = 0;
    while (rounds < m_steps || (secondsSince(begin) < m_windows.half && rounds < 100000)) {
        work();
        ++rounds;
    }
    return secondsSince(begin) / rounds;
}

double DeviceProfiler::timeUpdate(core::Model &probe) const
{
    // syncStep's work without the allreduce.
    core::SgdOptions o;
    o.momentum = m_job.momentum;
    o.weight_decay = m_job.weight_decay;
    core::Sgd sgd(probe, o);
    core::FlatState probeFlat(probe, &sgd);
    std::vector<float> exchanged(probeFlat.gradientSize() + EpochTally::kTrailerFloats);
    // The weight alternates between a half and two, so the gradients neither shrink into
    // subnormal floats (slow on x86) nor to zero (fast) over the repetitions.
    float weight = 0.5f;
    return timeRepeated([&] {
        probeFlat.copyGradients(exchanged.data());
        for (std::size_t i = 0; i < probeFlat.gradientSize(); ++i)
            exchanged[i] *= weight;
        weight = 1.0f / weight;
        probeFlat.setGradients(exchanged.data());
        sgd.step(0.0);
    });
}

} // namespace edgetrain::net::worker

#include "net/training/trainingworker.h"

#include "core/bufferpool.h"
#include "core/error.h"
#include "core/fashionmnist.h"
#include "core/flatstate.h"
#include "core/memoryplanner.h"
#include "core/numbertext.h"
#include "core/parallel.h"
#include "core/processmemory.h"
#include "core/sgd.h"
#include "core/trainer.h"
#include "core/weightaverage.h"
#include "net/agent/jobmemorylimit.h"
#include "net/protocol/cborfield.h"
#include "net/protocol/protocol.h"
#include "net/training/collectives.h"
#include "net/training/compressedexchange.h"
#include "net/training/exchangeprobe.h"
#include "net/training/exchangeprobehost.h"
#include "net/training/linkprobe.h"
#include "net/training/remotestore.h"

#include <QCborArray>
#include <QRandomGenerator>
#include <QThread>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <random>

namespace edgetrain::net {

Q_LOGGING_CATEGORY(lcWorker, "edgetrain.worker")

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t)
{
    return std::chrono::duration<double>(Clock::now() - t).count();
}

QByteArray floatBytes(const float *data, std::size_t count)
{
    return QByteArray(reinterpret_cast<const char *>(data), qsizetype(count * sizeof(float)));
}

/** Copies a byte array of floats into `out`; false if the size is not what is expected. */
bool readFloats(const QByteArray &bytes, float *out, std::size_t count)
{
    if (std::size_t(bytes.size()) != count * sizeof(float))
        return false;
    std::memcpy(out, bytes.constData(), std::size_t(bytes.size()));
    return true;
}

} // namespace

QCborMap TrainingStatus::toCbor() const
{
    return QCborMap{{QStringLiteral("active"), active},
                    {QStringLiteral("job"), job},
                    {QStringLiteral("phase"), phase},
                    {QStringLiteral("epoch"), epoch},
                    {QStringLiteral("step"), qint64(step)},
                    {QStringLiteral("steps"), qint64(steps)},
                    {QStringLiteral("loss"), loss},
                    {QStringLiteral("accuracy"), accuracy},
                    {QStringLiteral("images_per_second"), images_per_second},
                    {QStringLiteral("rank"), rank},
                    {QStringLiteral("group_size"), group_size}};
}

TrainingStatus TrainingStatus::fromCbor(const QCborMap &m)
{
    TrainingStatus s;
    s.active = m.value(QStringLiteral("active")).toBool();
    s.job = m.value(QStringLiteral("job")).toString();
    s.phase = m.value(QStringLiteral("phase")).toString();
    s.epoch = int(cborInteger(m.value(QStringLiteral("epoch"))));
    s.step = cborInteger(m.value(QStringLiteral("step")));
    s.steps = cborInteger(m.value(QStringLiteral("steps")));
    s.loss = m.value(QStringLiteral("loss")).toDouble();
    s.accuracy = m.value(QStringLiteral("accuracy")).toDouble();
    s.images_per_second = m.value(QStringLiteral("images_per_second")).toDouble();
    s.rank = int(cborInteger(m.value(QStringLiteral("rank")), -1));
    s.group_size = int(cborInteger(m.value(QStringLiteral("group_size"))));
    return s;
}

namespace {

/** A profile's "exchange": the figure, how it was timed (`over`: "link" or "loopback") and what
 *  timing it took. */
QCborMap exchangeFigures(const ExchangeMeasurement &e, QLatin1String over, double busyCores)
{
    QCborMap m{{QStringLiteral("seconds_per_byte"), e.seconds_per_byte},
               {QStringLiteral("over"), over},
               {QStringLiteral("bytes"), qint64(e.bytes)},
               {QStringLiteral("repeats"), e.repeats},
               {QStringLiteral("seconds"), e.seconds},
               {QStringLiteral("setup_seconds"), e.setup_seconds},
               {QStringLiteral("windows_seconds"), e.windows_seconds}};
    if (e.cpu_seconds_per_byte > 0) // over the link: the CPU a byte each way costs the device
        m.insert(QStringLiteral("busy_seconds_per_byte"), e.cpu_seconds_per_byte / busyCores);
    return m;
}

/** When a profile measures its link: now if no other node is measuring, or in line. */
enum class LinkTurn { IfFree, InLine };

/** The node's link to the coordinator at host:port, measured with timed transfers to its probe
 *  server (measureLink): the figures a profile sends, or an error (not tried again); the
 *  transfers' CPU per byte as a share of `busyCores` (what the device's power figure is for).
 *  LinkTurn::IfFree: nothing if another node's probe is under way (measureLinkIfFree).
 *  `whileServed` runs in the turn after the round trips (the exchange with the coordinator)
 *  and says whether the transfers are still wanted; without them the figures have no rates.
 *
 *  The coordinator serves one probe at a time. A profile asks first, its data loaded and its
 *  CPU idle, whether it is its turn, then between its timings' phases, and else measures after
 *  them, in line (when every node probed after its timings, two that finished them together -
 *  a lab's two Pi 3Bs - waited 0.4-0.7 s behind each other at the end). So one probe at a time
 *  runs beside the other nodes' timings. On an edge lab every
 *  node shares this machine's cores with the probe's transfers: when every node probed first,
 *  all of them in line, the probes ran beside the timings for as long as the line took and
 *  each disturbed the other (the same Pi 4 profiled at 9 and 20 ns a byte for its exchange);
 *  one at a time, the figures stayed within their spread between plans (two or three plans a way,
 *  docs/evidence/issue-12/profiling-turns). Beside the loading of the data (tried 2026-11-27)
 *  the probe measured the node with its own CPU busy: a quota-held device answered the round
 *  trips 3.5-5 ms late and moved 10 MB/s where its link carries 11.8
 *  (docs/evidence/issue-12/pi3-groups). */
std::optional<QCborMap> probeLink(const QString &host, quint16 port, const QByteArray &token,
                                  double busyCores, LinkTurn turn,
                                  const std::function<bool()> &whileServed)
{
    try {
        std::optional<LinkMeasurement> measured;
        if (turn == LinkTurn::IfFree)
            measured = measureLinkIfFree(host, port, token, whileServed);
        else
            measured = measureLink(host, port, token, whileServed);
        if (!measured)
            return std::nullopt;
        const LinkMeasurement &m = *measured;
        QCborMap figures{{QStringLiteral("rtt_seconds"), m.rtt_seconds},
                         {QStringLiteral("seconds"), m.seconds}};
        if (m.rates_timed) { // else the exchange over the link stands for them
            figures.insert(QStringLiteral("up_bytes_per_second"), m.up_bytes_per_second);
            figures.insert(QStringLiteral("down_bytes_per_second"), m.down_bytes_per_second);
            figures.insert(QStringLiteral("up_busy_seconds_per_byte"),
                           m.up_cpu_seconds_per_byte / busyCores);
            figures.insert(QStringLiteral("down_busy_seconds_per_byte"),
                           m.down_cpu_seconds_per_byte / busyCores);
        }
        return figures;
    } catch (const core::Error &e) {
        return QCborMap{{QStringLiteral("error"), QString::fromUtf8(e.what())}};
    }
}

} // namespace

/** The state of one run, and the steps of each mode. */
struct TrainingWorker::Run
{
    TrainingWorker &w;
    const JobSpec &job;
    JobLink &link;
    RemoteStore store;

    std::unique_ptr<core::Model> model;
    std::unique_ptr<core::Sgd> optimizer;
    std::unique_ptr<core::FlatState> flat;
    std::optional<core::WeightAverage> average; // job.average_decay > 0
    std::shared_ptr<const core::TensorDataset> train, test;
    std::unique_ptr<core::BatchOrder> order;
    int orderEpoch = 0;
    core::LrSchedule schedule;

    GroupSpec group;
    bool joined = false; // a group was adopted (a node released before it trains never is)
    std::unique_ptr<CollectiveGroup> collectives;
    std::optional<core::Schedule> checkpointing;

    // Position and the current epoch's sums, global (all ranks) in sync and local-sgd.
    std::int64_t step = 0;
    std::int64_t epochsDone = 0;
    std::int64_t batches = 0;
    std::int64_t totalSteps = 0;
    // `targets`: what accuracy divides by (samples for a classifier, objects for a detector).
    double lossSum = 0.0, correct = 0.0, seen = 0.0, targets = 0.0;
    // This node's own sums: compute speed, and (local-sgd, async) what is not yet shared.
    double computeSeconds = 0.0, computed = 0.0;
    double pendingLoss = 0.0, pendingCorrect = 0.0, pendingSeen = 0.0, pendingTargets = 0.0;
    Clock::time_point epochStart = Clock::now();
    Clock::time_point lastProgress = Clock::now();
    std::vector<float> buffer;
    std::vector<std::int32_t> labels;

    // The memory this job may grow the process by, held from outside the engine (holdMemory).
    std::unique_ptr<JobMemoryLimit> memoryLimit;
    std::string memoryLimitWhy;       // how its limit was set, for the log and the error
    bool memoryLimitByDevice = false; // what the device had left, not the budget, set it
    // Fault injection for the tests of that limit: EDGETRAIN_FAULT_JOB_GROWTH_BYTES in the
    // node's environment makes every training step keep that many more bytes until the job
    // ends, as a plan that under-counts would.
    std::int64_t faultGrowthBytes = 0;
    std::vector<std::vector<char>> faultGrowth;

    Run(TrainingWorker &worker)
        : w(worker), job(worker.m_job), link(*worker.m_link),
          store(*worker.m_link, std::chrono::milliseconds(worker.m_job.collective_timeout_ms))
    {
        const QByteArray fault = qgetenv("EDGETRAIN_FAULT_JOB_GROWTH_BYTES");
        if (!fault.isEmpty())
            faultGrowthBytes = std::max<qint64>(0, fault.toLongLong());
    }

    // ---- setup

    void load()
    {
        w.setStatus([](TrainingStatus &s) { s.phase = QStringLiteral("loading"); });
        const core::ModelSpec spec = core::ModelSpec::fromJson(job.model, "the job's model");
        model = std::make_unique<core::Model>(spec, job.seed);
        core::SgdOptions sgd;
        sgd.momentum = job.momentum;
        sgd.weight_decay = job.weight_decay;
        sgd.nesterov = job.nesterov;
        optimizer = std::make_unique<core::Sgd>(*model, sgd);
        flat = std::make_unique<core::FlatState>(*model, optimizer.get());
        if (job.average_decay > 0)
            average.emplace(job.average_decay);
        schedule = core::LrSchedule::parse(job.schedule.toStdString());
        if (job.dataset == QLatin1String("shipped")) {
            train = w.m_context.train;
            test = w.m_context.test;
            if (!train)
                throw core::Error("shipment '" + job.train_shipment.toStdString() +
                                  "' has not arrived on this node");
        } else {
            const std::string dir = w.m_context.data_dir.empty()
                                        ? core::FashionMnist::kDefaultDirectory
                                        : w.m_context.data_dir;
            train = std::make_shared<core::TensorDataset>(
                core::FashionMnist::load(dir, core::FashionMnist::Split::Train, job.train_limit));
            test = std::make_shared<core::TensorDataset>(
                core::FashionMnist::load(dir, core::FashionMnist::Split::Test, job.test_limit));
        }
        const bool classifier = spec.loss().type == core::LossSpec::Type::SoftmaxCrossEntropy;
        if (train->sampleShape() != model->sampleShape() ||
            (classifier && train->classCount() > model->classCount()))
            throw core::ShapeError(train->description() + " does not fit model '" + spec.name() +
                                   "'");
        if (train->labelWidth() != spec.labelWidth())
            throw core::ShapeError(train->description() + " has labels of " +
                                   std::to_string(train->labelWidth()) +
                                   " values per sample but model '" + spec.name() + "' needs " +
                                   std::to_string(spec.labelWidth()));
        order = std::make_unique<core::BatchOrder>(train->size(), job.batch, job.seed);
        batches = order->batches();
        totalSteps = batches * job.epochs;
        labels.resize(static_cast<std::size_t>(job.batch + 1) *
                      static_cast<std::size_t>(spec.labelWidth()));
        w.setStatus([&](TrainingStatus &s) { s.steps = totalSteps; });
    }

    /** The memory a step may use on this node: the job's budget, else the node's limit (-1:
     *  none). */
    std::int64_t budgetBytes() const
    {
        return job.memory_budget_bytes >= 0 ? job.memory_budget_bytes : w.m_context.memory_limit;
    }

    /** The largest local batch the budget takes (profile(); -1: no budget). */
    std::int64_t maxLocalBatch = -1;
    /** Evaluation's batch: 500, or within the budget what a training step's plan fits
     *  (forward alone needs no more than forward and backward at the same batch). */
    std::int64_t evaluationBatch() const
    {
        constexpr std::int64_t kEvaluationBatch = 500;
        return maxLocalBatch >= 1 ? std::min(kEvaluationBatch, maxLocalBatch) : kEvaluationBatch;
    }

    /** What a job may allocate that no step's plan counts, beyond the budget, in copies of
     *  the parameters at the phase that holds most: async with pipelining (the push, its bf16
     *  encoding, the frame, the reply's delta and the mirror: up to 9); sync and local SGD
     *  hold fewer (the flat buffer, gloo's scratch, a regroup's broadcast, the weights posted
     *  at the end, the local-SGD snapshot, an average), profiling 4 (its own model, the
     *  exchange's buffer; the exchange's timing, before that model exists, 3: its two ranks'
     *  data and gloo's scratch). The fixed
     *  part is for the threads' stacks, the control frames and the kernels' generated code
     *  (what fitProcessBudget measured is inside the budget already). The model's own weights,
     *  gradients and optimizer state were allocated before the limit began. */
    static constexpr std::int64_t kFixedAllowanceBytes = std::int64_t(32) << 20;
    static constexpr std::int64_t kParameterCopies = 10;
    std::int64_t memoryAllowance() const
    {
        return kFixedAllowanceBytes +
               kParameterCopies * model->parameterCount() * std::int64_t(sizeof(float));
    }

    /** What the agent keeps for itself when a job's limit is what the device has left. */
    static constexpr std::int64_t kAgentReserveBytes = std::int64_t(16) << 20;

    /** Holds what the job grows the process by, from here (model and data loaded) on, to its
     *  budget plus memoryAllowance() — or to what the device (its memory cgroup, else the
     *  kernel's MemAvailable) has left less kAgentReserveBytes, if that is less: a plan that
     *  under-counts, or a device too small for it, ends the job with a JobMemoryError on this
     *  node instead of the OOM killer taking the agent. No budget (the job's or the node's): no
     *  limit. */
    void holdMemory()
    {
        const std::int64_t budget = budgetBytes();
        if (budget < 0)
            return;
        std::int64_t limit = budget + memoryAllowance();
        memoryLimitWhy = "its budget " + core::NumberText::bytes(budget) + " + " +
                         core::NumberText::bytes(memoryAllowance()) + " outside the step's plan";
        const std::int64_t available = core::process_memory::availableBytes();
        if (available > 0 && available - kAgentReserveBytes < limit) {
            limit = std::max<std::int64_t>(available - kAgentReserveBytes, 1 << 20);
            memoryLimitByDevice = true;
            memoryLimitWhy = "what this device had left when the job began, less " +
                             core::NumberText::bytes(kAgentReserveBytes) + " for the agent";
        }
        // Free pages the C heap kept from earlier work are handed back first: reused, they
        // would be growth the limit never sees.
        core::process_memory::giveBackFreePages();
        memoryLimit = std::make_unique<JobMemoryLimit>(limit);
        qCInfo(lcWorker).noquote()
            << QStringLiteral("job %1 may grow this process by %2 (%3), held by %4")
                   .arg(job.id,
                        QString::fromStdString(core::NumberText::bytes(memoryLimit->limitBytes())),
                        QString::fromStdString(memoryLimitWhy),
                        QString::fromStdString(memoryLimit->description()));
    }

    void checkMemory() const
    {
        if (memoryLimit && memoryLimit->exceeded())
            throw JobMemoryError(memoryLimit->overrunMessage() + " - " + memoryLimitWhy +
                                 (memoryLimitByDevice
                                      ? ": this device cannot hold the job; a smaller batch or "
                                        "budget, or a device with more memory"
                                      : ": the job takes more here than its plan counted; a "
                                        "smaller batch or a larger budget"));
    }

    /** What a training step grows this process by beyond the engine's tensors, measured once
     *  per job on its model (core::fitProcessBudget): every plan leaves it out of the budget,
     *  so the budget is the process's. */
    std::int64_t processOverhead = -1;

    /** The plan for a batch of `b` within this node's budget, the measured overhead included. */
    core::MemoryPlan memoryPlan(core::Model &m, std::int64_t b)
    {
        const std::int64_t budget = budgetBytes();
        if (processOverhead < 0 && budget >= 0) {
            const core::ProcessBudgetPlan fit = core::fitProcessBudget(*model, job.batch, budget);
            processOverhead = std::max<std::int64_t>(0, fit.measured_overhead_bytes);
            qCInfo(lcWorker).noquote()
                << "a step grows this process by"
                << QString::fromStdString(core::NumberText::bytes(processOverhead))
                << "beyond the engine's tensors: the engine plans within the rest of"
                << QString::fromStdString(core::NumberText::bytes(budget));
        }
        core::MemoryPlanner planner(m, b);
        planner.setProcessOverhead(std::max<std::int64_t>(0, processOverhead));
        return planner.plan(budget);
    }

    /** The largest local batch (at most the job's batch + 1) the model trains within this
     *  node's budget (-1: no budget, 0: not even one sample): the memory planner says it. */
    std::int64_t largestLocalBatch()
    {
        if (budgetBytes() < 0)
            return -1;
        const core::MemoryPlan p = memoryPlan(*model, job.batch + 1);
        return p.fits ? job.batch + 1 : p.max_batch;
    }

    /** What the node tells the coordinator before it joins: its speed (images/s of forward +
     *  backward at a part of 16) and, for the planner, the time per step at a small batch and
     *  at the largest one it could get, an optimizer update, evaluation per sample, the largest
     *  batch its memory takes, its power, and its link (probeLink: as soon as no other node is
     *  measuring its link - first, between the timings, else after them). Timed
     *  on a model of its own with the job's spec and data: profiling must not move the job's
     *  weights or batch-norm statistics. */
    std::pair<double, QCborMap> profile()
    {
        w.setStatus([](TrainingStatus &s) { s.phase = QStringLiteral("calibrating"); });
        const auto began = Clock::now();
        // Where the profile's time goes, phase by phase (the job_ready's "phases_seconds"; a
        // phase that comes more than once, its sum).
        QCborMap phases;
        auto lap = [&, last = began](const char *phase) mutable {
            const QString key = QLatin1String(phase);
            phases.insert(key, phases.value(key).toDouble() + secondsSince(last));
            last = Clock::now();
        };
        // Under a CPU quota (an edge-lab device) the kernel lets the node run at full speed for
        // its quota's share of each period and then stops it: a window of a few periods would
        // time the burst, not the device (a window gains up to one period's quota). Each window
        // at least ten periods and 0.2 s, at most 1 s (the lab's periods are 10-100 ms, 2 ms
        // of the device's CPU each; the kernel's default 100 ms; unknown: that).
        const bool quota = w.m_context.cpu_quota_cores > 0;
        const double period =
            w.m_context.cpu_period_seconds > 0 ? w.m_context.cpu_period_seconds : 0.1;
        const double minSeconds = quota ? std::clamp(10 * period, 0.2, 1.0) : 0.2;
        // The exchange's three windows: ten periods each (at most 1.5 s in all): the best of
        // shorter ones can be a burst (a lab Pi 3B's once timed at a twentieth of its usual
        // figure).
        const double exchangeSeconds =
            quota ? std::clamp(30 * period, minSeconds, 1.5) : minSeconds;
        // Against the coordinator, in the node's turn (the others' wait for it): four periods
        // a window, at least 50 ms, at most 0.4 s. A window can gain one period's quota, but
        // the wire's part of a round is not held by it.
        const double pairSeconds = quota ? std::clamp(12 * period, 0.15, 1.2) : 0.15;
        const std::size_t exchangeFloats = flat->gradientSize() + 5; // a sync step's allreduce
        // (The figure is per byte: a larger model's is timed on at most 1 MB, to keep the turn
        // short on a slow link: the MLP's 2.6 MB held a lab Pi 3B's for 1.3 s, the other's in
        // line behind it.)
        const std::size_t pairFloats = std::min(exchangeFloats, ExchangeProbeHost::kMaxFloats);

        // What an allreduce of this job's gradients (and a sync step's five figures) costs this
        // device per byte of a ring round. Where the coordinator hosts a rank for it (the job's
        // exchange_probe), timed against that rank over the node's real path during its link
        // turn (measurePairExchange): the wire, the CPU under its quota and the network stack
        // between, together, as a ring round meets them. (Two ranks on the device itself time
        // only the CPU's part, over loopback: a lab Pi 4B pair on gigabit trained 1.3-1.4x what
        // that figure and the link's predicted, docs/evidence/issue-12/groups; and the figure
        // scattered up to fivefold between plans.) Else, or if the pair failed, on the device.
        QCborMap exchange;
        QString pairError; // why it could not be timed with the coordinator (the plan says it)
        // Run in the link turn after the round trips; says whether the link's transfers are still
        // wanted: where the exchange was timed over the link, only for a plan with async (the
        // job's link_rates) — sync and local SGD read the exchange's figure for the ring, and its
        // CPU per byte for the device's busy time.
        auto exchangeWithCoordinator = [&]() -> bool {
            if (!job.exchange_probe)
                return true;
            lap("link");
            ExchangeMeasurement e;
            QString error;
            try {
                // The coordinator queues its rank (or says why not) at once; then ours meets it.
                const QString prefix = QStringLiteral("%1%2-%3")
                                           .arg(QLatin1String(ExchangeProbeHost::kPrefix))
                                           .arg(QString::fromStdString(w.m_context.bind_address))
                                           .arg(QRandomGenerator::global()->generate());
                const QCborMap said =
                    link.request(Message::ExchangeProbe,
                                 QCborMap{{QStringLiteral("prefix"), prefix},
                                          {QStringLiteral("floats"), qint64(pairFloats)}},
                                 std::chrono::seconds(5));
                error = said.value(QStringLiteral("error")).toString();
                if (error.isEmpty()) {
                    // Its own store's waits as short as the ranks': the others wait in line.
                    RemoteStore probeStore(link,
                                           std::chrono::milliseconds(job.exchangeProbeTimeoutMs()));
                    GroupOptions o;
                    o.rank = 0;
                    o.hostname = w.m_context.bind_address;
                    o.timeout = std::chrono::milliseconds(job.exchangeProbeTimeoutMs());
                    o.prefix = prefix.toStdString();
                    e = measurePairExchange(probeStore, o, pairFloats, pairSeconds);
                }
            } catch (const std::exception &x) { // the link closed, no answer, the pair failed
                error = QString::fromUtf8(x.what());
            }
            if (!error.isEmpty()) {
                qCWarning(lcWorker).noquote()
                    << "the exchange could not be timed with the coordinator:" << error;
                pairError = error;
                lap("exchange");
                return true; // timed on the device instead, with the link's rates
            }
            exchange = exchangeFigures(e, QLatin1String("link"), w.m_context.busy_cores);
            qCInfo(lcWorker).noquote()
                << QStringLiteral("exchange timed with the coordinator in %1 s: setup %2 s, %3 "
                                  "allreduces in %4 s, %5 ns a byte")
                       .arg(e.seconds, 0, 'f', 3)
                       .arg(e.setup_seconds, 0, 'f', 3)
                       .arg(e.repeats)
                       .arg(e.windows_seconds, 0, 'f', 3)
                       .arg(e.seconds_per_byte * 1e9, 0, 'f', 2);
            lap("exchange");
            return job.link_rates;
        };
        auto exchangeOnDevice = [&] {
            try {
                // The CPU the two ranks really share: the quota, else this machine's processors
                // (not a device profile's cores, which the power figures use).
                const double cores = quota ? w.m_context.cpu_quota_cores
                                           : double(std::max(1, QThread::idealThreadCount()));
                const ExchangeMeasurement e =
                    measureExchange(exchangeFloats, cores, exchangeSeconds);
                exchange = exchangeFigures(e, QLatin1String("loopback"), w.m_context.busy_cores);
                qCInfo(lcWorker).noquote()
                    << QStringLiteral("exchange timed in %1 s: setup %2 s, %3 allreduces in %4 s")
                           .arg(e.seconds, 0, 'f', 3)
                           .arg(e.setup_seconds, 0, 'f', 3)
                           .arg(e.repeats)
                           .arg(e.windows_seconds, 0, 'f', 3);
            } catch (const std::exception &e) { // a CollectiveError, or no thread to be had
                exchange = QCborMap{{QStringLiteral("error"), QString::fromUtf8(e.what())}};
                qCWarning(lcWorker).noquote() << "the exchange could not be timed:" << e.what();
            }
        };

        // The link as soon as no other node is measuring its own: first (this node's CPU is
        // idle: its data is loaded), else between the timings' phases, else after them, in line
        // (probeLink says why), and the exchange with the coordinator in the same turn. Asking
        // costs a connection and a round trip.
        const QString coordinator = QString::fromStdString(w.m_context.coordinator_host);
        std::optional<QCborMap> linkFigures;
        auto probeTheLink = [&](LinkTurn turn) {
            linkFigures = probeLink(coordinator, quint16(job.link_probe_port),
                                    job.link_probe_token.toLatin1(), w.m_context.busy_cores, turn,
                                    exchangeWithCoordinator);
        };
        auto linkIfFree = [&] {
            if (linkFigures || job.link_probe_port <= 0 || !job.link_probe_turns)
                return;
            probeTheLink(LinkTurn::IfFree);
            lap(linkFigures ? "link" : "turn");
        };
        linkIfFree();
        // Only the planner reads the exchange's figure: a job that is not planned (no link probe)
        // times none (it cost a lab Pi 3B 0.7-1.0 s at every start). On the device, first,
        // before the profiling model exists (the two ranks' buffers and gloo's are the phase's
        // peak) — if there will be no exchange with the coordinator.
        const bool planned = job.link_probe_port > 0;
        if (planned && !job.exchange_probe) {
            exchangeOnDevice();
            lap("exchange");
        }
        linkIfFree();
        core::Model probe(model->spec(), job.seed);
        const std::int64_t maxBatch = largestLocalBatch();
        lap("memory");
        linkIfFree();
        maxLocalBatch = maxBatch;
        // Both within what the budget takes: the small batch was stepped without a plan where it
        // did not fit (the frame detector's demo: 12 frames store-all, 90 MiB on a 27 MiB
        // budget — the job's memory limit caught it). The planner draws a line through the two
        // and reads it at each device's part of the batch, which beside faster devices can be 1
        // to 3 samples: the points span that range. Through 16 and 32 samples (the points
        // before), the line put a lab Pi 3B's fixed cost a step at 3-9 ms where this engine's
        // step of 2 samples takes ~2 ms of that device's time: the intercept of a line through
        // two close points is mostly their noise (docs/evidence/issue-12/pi3-groups).
        std::int64_t small = std::min<std::int64_t>({job.batch, 2, train->size()});
        std::int64_t large = std::min<std::int64_t>(job.batch, train->size());
        if (maxBatch >= 1) {
            small = std::min(small, maxBatch);
            large = std::min(large, maxBatch);
        }
        const int steps = std::max(1, job.profile_steps);
        // Samples drawn across the shard, as an epoch's shuffled order draws them: gathering a
        // batch is part of a step.
        std::vector<std::int64_t> index(static_cast<std::size_t>(std::max(small, large)));
        {
            std::mt19937_64 pick(job.seed);
            std::uniform_int_distribution<std::int64_t> any(0, train->size() - 1);
            for (auto &i : index)
                i = any(pick);
        }
        core::PassContext ctx;
        ctx.training = true;
        // Seconds per gather + forward + backward at batch b (the memory plan training would
        // use), after a warm-up: at least `steps` passes and at least minSeconds (at most 4 s
        // unless the steps take longer).
        auto timeSteps = [&](std::int64_t b) {
            core::Tensor x(probe.batchShape(b), core::MemoryCategory::Activations);
            train->gather(index.data(), b, x.data(), labels.data());
            std::optional<core::Schedule> stepPlan;
            if (budgetBytes() >= 0) {
                const core::MemoryPlan p = this->memoryPlan(probe, b);
                if (p.fits && p.schedule.name() != "store-all")
                    stepPlan = p.schedule;
            }
            const core::Schedule *plan = stepPlan ? &*stepPlan : nullptr;
            probe.forwardBackward(x, labels.data(), ctx, plan); // first touch, caches
            const auto start = Clock::now();
            int rounds = 0;
            while (rounds < steps || (secondsSince(start) < minSeconds && rounds < 1000)) {
                train->gather(index.data(), b, x.data(), labels.data());
                probe.forwardBackward(x, labels.data(), ctx, plan);
                ++rounds;
                if (secondsSince(start) > 4.0 && rounds >= steps)
                    break;
            }
            return secondsSince(start) / rounds;
        };
        const double smallSeconds = timeSteps(small);
        const double largeSeconds = large > small ? timeSteps(large) : smallSeconds;
        lap("steps");
        linkIfFree();
        // The same rule for the update and evaluation, over half the window each (ten periods
        // at least under a quota).
        const double halfWindow = quota ? std::max(minSeconds / 2, 10 * period) : minSeconds / 2;
        auto timeRepeated = [&](const std::function<void()> &work) {
            work(); // first touch
            const auto begin = Clock::now();
            int rounds = 0;
            while (rounds < steps || (secondsSince(begin) < halfWindow && rounds < 100000)) {
                work();
                ++rounds;
            }
            return secondsSince(begin) / rounds;
        };
        // What a step does besides: the gradients out to the exchange's buffer, weighted by
        // the rank's part, back, and an optimizer update (syncStep's work without the
        // allreduce); then evaluation (forward only) per sample at the large batch.
        core::SgdOptions o;
        o.momentum = job.momentum;
        o.weight_decay = job.weight_decay;
        core::Sgd sgd(probe, o);
        core::FlatState probeFlat(probe, &sgd);
        std::vector<float> exchanged(probeFlat.gradientSize() + 5);
        // The weight alternates between a half and two, so the gradients neither shrink into
        // subnormal floats (slow on x86) nor to zero (fast) over the repetitions.
        float weight = 0.5f;
        const double update = timeRepeated([&] {
            probeFlat.copyGradients(exchanged.data());
            for (std::size_t i = 0; i < probeFlat.gradientSize(); ++i)
                exchanged[i] *= weight;
            weight = 1.0f / weight;
            probeFlat.setGradients(exchanged.data());
            sgd.step(0.0);
        });
        core::PassContext eval;
        eval.training = false;
        core::Tensor x(probe.batchShape(large), core::MemoryCategory::Activations);
        train->gather(index.data(), large, x.data(), labels.data());
        lap("update");
        linkIfFree();
        const double evalPerSample = timeRepeated([&] { probe.forward(x, eval); }) / double(large);
        lap("evaluation");

        // The link, if it was never this node's turn: in line behind the other nodes' probes.
        // (A probe that failed is not tried again: its error goes to the coordinator.)
        if (!linkFigures && job.link_probe_port > 0) {
            probeTheLink(LinkTurn::InLine);
            lap("link");
        }
        // The exchange with the coordinator failed (or the link probe did, before it): on the
        // device after all, beside the profiling model's buffers (if the job's memory limit
        // refuses the two ranks', that is the exchange's error: the planner then knows no bound).
        if (planned && exchange.isEmpty()) {
            exchangeOnDevice();
            lap("exchange");
        }
        QCborMap p{{QStringLiteral("batches"), QCborArray{qint64(small), qint64(large)}},
                   {QStringLiteral("step_seconds"), QCborArray{smallSeconds, largeSeconds}},
                   {QStringLiteral("update_seconds"), update},
                   {QStringLiteral("eval_seconds_per_sample"), evalPerSample},
                   {QStringLiteral("max_local_batch"), qint64(maxBatch)},
                   {QStringLiteral("steps"), steps},
                   {QStringLiteral("seconds"), secondsSince(began)},
                   {QStringLiteral("idle_watts"), w.m_context.idle_watts},
                   {QStringLiteral("busy_watts"), w.m_context.busy_watts},
                   {QStringLiteral("power_source"), w.m_context.power_source}};
        p.insert(QStringLiteral("phases_seconds"), phases);
        QStringList said;
        for (auto it = phases.cbegin(); it != phases.cend(); ++it)
            said << QStringLiteral("%1 %2 s")
                        .arg(it.key().toString())
                        .arg(it.value().toDouble(), 0, 'f', 3);
        qCInfo(lcWorker).noquote() << QStringLiteral("profiled in %1 s: %2")
                                          .arg(secondsSince(began), 0, 'f', 3)
                                          .arg(said.join(QStringLiteral(", ")));
        if (linkFigures)
            p.insert(QStringLiteral("link"), *linkFigures);
        if (!pairError.isEmpty())
            exchange.insert(QStringLiteral("link_error"), pairError);
        p.insert(QStringLiteral("exchange"), exchange);
        // The speed the coordinator splits the first epoch by: at a part of 16 (the batch if
        // smaller), read off the line (as the points were before).
        const std::int64_t typical = std::min<std::int64_t>(large, 16);
        double typicalSeconds =
            largeSeconds * double(typical) / double(std::max<std::int64_t>(large, 1));
        if (large > small && largeSeconds > smallSeconds) {
            const double perSample = (largeSeconds - smallSeconds) / double(large - small);
            typicalSeconds = smallSeconds + perSample * double(typical - small);
        }
        return {double(typical) / std::max(typicalSeconds, 1e-9), p};
    }

    void plan(std::int64_t localBatch)
    {
        const std::int64_t budget = budgetBytes();
        checkpointing.reset();
        if (budget < 0) {
            // No budget for this job: the pool's limit is the node's again, not what an earlier
            // job's budget made it (core::fitProcessBudget sets it).
            core::BufferPool::instance().setLimit(w.m_context.memory_limit);
            return;
        }
        if (localBatch < 1)
            return;
        const core::MemoryPlan p = memoryPlan(*model, localBatch);
        if (!p.fits)
            throw core::Error("a batch of " + std::to_string(localBatch) + " does not fit the " +
                              core::NumberText::bytes(budget) +
                              " this node may use (the smallest budget that fits is " +
                              core::NumberText::bytes(p.min_budget_bytes) + ")");
        if (p.schedule.name() != "store-all")
            checkpointing = p.schedule;
        qCInfo(lcWorker).noquote() << "memory plan for a local batch of" << localBatch << ":"
                                   << QString::fromStdString(p.schedule.name());
    }

    void adoptGroup(const QCborMap &map)
    {
        QString error;
        const auto g = GroupSpec::fromCbor(map, &error);
        if (!g)
            throw core::FormatError("the coordinator sent " + error.toStdString());
        group = *g;
        joined = true;
        w.setStatus([&](TrainingStatus &s) {
            s.rank = group.rank;
            s.group_size = group.size;
        });
        // The largest part of a global batch this rank will get (the last batch may be one larger).
        plan(splitByShares(job.batch + 1, group.shares)[std::size_t(group.rank)]);
    }

    void seekEpoch(int epoch)
    {
        if (orderEpoch > epoch) {
            order = std::make_unique<core::BatchOrder>(train->size(), job.batch, job.seed);
            orderEpoch = 0;
        }
        while (orderEpoch < epoch) {
            order->nextEpoch();
            ++orderEpoch;
        }
    }

    // ---- groups

    /** Builds the gloo group and makes every rank's state the most advanced one among them. */
    void formGroup()
    {
        w.setStatus([](TrainingStatus &s) { s.phase = QStringLiteral("regrouping"); });
        collectives.reset();
        GroupOptions o;
        o.rank = group.rank;
        o.size = group.size;
        o.hostname = w.m_context.bind_address;
        o.timeout = std::chrono::milliseconds(job.collective_timeout_ms);
        o.prefix = group.prefix().toStdString();
        collectives = std::make_unique<CollectiveGroup>(store, o);
        restoreSnapshot();

        std::vector<float> steps(static_cast<std::size_t>(group.size), 0.0f);
        steps[std::size_t(group.rank)] = float(step + 1);
        collectives->allreduceSum(steps.data(), steps.size());
        const int root = int(std::max_element(steps.begin(), steps.end()) - steps.begin());
        constexpr std::size_t header = 6;
        std::vector<float> state(header + flat->fullSize());
        if (group.rank == root) {
            const float h[header] = {float(step),    float(epochsDone), float(lossSum),
                                     float(correct), float(seen),       float(targets)};
            std::copy(h, h + header, state.begin());
            flat->copyFull(state.data() + header);
        }
        collectives->broadcast(state.data(), state.size(), root);
        if (group.rank != root) {
            step = std::int64_t(state[0]);
            epochsDone = std::int64_t(state[1]);
            lossSum = state[2];
            correct = state[3];
            seen = state[4];
            targets = state[5];
            flat->setFull(state.data() + header);
            pendingLoss = pendingCorrect = pendingSeen = pendingTargets = 0.0;
        }
        qCInfo(lcWorker).noquote()
            << QStringLiteral("group %1: rank %2 of %3, continuing at step %4 (state from rank %5)")
                   .arg(group.generation)
                   .arg(group.rank)
                   .arg(group.size)
                   .arg(step)
                   .arg(root);
        takeSnapshot();
        w.setStatus([](TrainingStatus &s) { s.phase = QStringLiteral("training"); });
    }

    /** Follows the coordinator's answer until a group stands; false when told to stop. */
    bool regroup(QCborMap reply)
    {
        for (;;) {
            if (reply.value(Action::Field).toString() == Action::Stop)
                return false;
            try {
                adoptGroup(reply.value(QStringLiteral("group")).toMap());
                formGroup();
                return true;
            } catch (const CollectiveError &e) {
                qCWarning(lcWorker).noquote() << "forming the group failed:" << e.what();
                reply = link.request(
                    Message::CollectiveFailed,
                    QCborMap{{QStringLiteral("step"), qint64(step)},
                             {QStringLiteral("message"), QString::fromUtf8(e.what())}});
            }
        }
    }

    // ---- steps

    /** Forward and backward on this rank's samples; returns the batch's mean loss. */
    core::StepResult compute(const std::int64_t *indices, std::int64_t count)
    {
        const auto start = Clock::now();
        core::Tensor x(model->batchShape(count), core::MemoryCategory::Activations);
        train->gather(indices, count, x.data(), labels.data());
        core::PassContext ctx;
        ctx.training = true;
        ctx.seed = job.seed;
        ctx.step = std::uint64_t(step);
        const core::StepResult r = model->forwardBackward(
            x, labels.data(), ctx, checkpointing ? &*checkpointing : nullptr);
        if (faultGrowthBytes > 0)
            faultGrowth.emplace_back(std::size_t(faultGrowthBytes), char(1));
        checkMemory();
        computeSeconds += secondsSince(start);
        computed += double(count);
        return r;
    }

    double rate() const { return schedule.rate(job.lr, step, totalSteps, batches); }

    struct Part
    {
        std::int64_t total, offset, count;
    };
    /** This rank's slice of global batch b: where it starts in the batch and how many. */
    Part part(std::int64_t b) const
    {
        const std::int64_t total = order->count(b);
        const auto parts = splitByShares(total, group.shares);
        return {total, std::accumulate(parts.begin(), parts.begin() + group.rank, std::int64_t(0)),
                parts[std::size_t(group.rank)]};
    }

    /** sync: one global batch, split by shares; weighted gradients summed in one allreduce.
     *  Returns true when the ranks agreed to stop. */
    bool syncStep(std::int64_t b)
    {
        const auto [total, offset, mine] = part(b);
        const std::size_t g = flat->gradientSize();
        buffer.assign(g + 5, 0.0f);
        if (mine > 0) {
            const core::StepResult r = compute(order->indices(b) + offset, mine);
            flat->copyGradients(buffer.data());
            const float weight = float(double(mine) / double(total));
            for (std::size_t i = 0; i < g; ++i)
                buffer[i] *= weight;
            buffer[g] = float(r.loss * double(mine));
            buffer[g + 1] = float(r.correct);
            buffer[g + 2] = float(mine);
            buffer[g + 3] = float(r.count);
        }
        link.throwIfClosed(); // abandoned: leave the group, never vote it into stopping
        buffer[g + 4] = link.stopRequested() ? 1.0f : 0.0f;
        collectives->allreduceSum(buffer.data(), buffer.size());
        flat->setGradients(buffer.data());
        optimizer->step(rate());
        if (average)
            average->update(*model);
        lossSum += buffer[g];
        correct += buffer[g + 1];
        seen += buffer[g + 2];
        targets += buffer[g + 3];
        report(buffer[g] / std::max(buffer[g + 2], 1.0f),
               buffer[g + 1] / std::max(buffer[g + 3], 1.0f));
        return buffer[g + 4] > 0.0f;
    }

    /** local-sgd: a step on this rank's part of the batch; every local_steps steps (and at the
     *  end of an epoch) the models are averaged. Returns true when the ranks agreed to stop. */
    bool localStep(std::int64_t b)
    {
        const auto [total, offset, mine] = part(b);
        if (mine > 0) {
            const core::StepResult r = compute(order->indices(b) + offset, mine);
            optimizer->step(rate());
            if (average)
                average->update(*model);
            pendingLoss += r.loss * double(mine);
            pendingCorrect += double(r.correct);
            pendingSeen += double(mine);
            pendingTargets += double(r.count);
            report(r.loss, double(r.correct) / double(std::max<std::int64_t>(r.count, 1)));
        }
        const bool lastOfEpoch = b + 1 == batches;
        averaged = false;
        if ((step + 1) % job.local_steps != 0 && !lastOfEpoch)
            return false;
        const std::size_t n = flat->averagedSize();
        buffer.assign(n + 5, 0.0f);
        flat->copyAveraged(buffer.data());
        const auto weight = float(group.shares[std::size_t(group.rank)]);
        for (std::size_t i = 0; i < n; ++i)
            buffer[i] *= weight;
        buffer[n] = float(pendingLoss);
        buffer[n + 1] = float(pendingCorrect);
        buffer[n + 2] = float(pendingSeen);
        buffer[n + 3] = float(pendingTargets);
        link.throwIfClosed();
        buffer[n + 4] = link.stopRequested() ? 1.0f : 0.0f;
        collectives->allreduceSum(buffer.data(), buffer.size());
        flat->setAveraged(buffer.data());
        lossSum += buffer[n];
        correct += buffer[n + 1];
        seen += buffer[n + 2];
        targets += buffer[n + 3];
        pendingLoss = pendingCorrect = pendingSeen = pendingTargets = 0.0;
        averaged = true;
        return buffer[n + 4] > 0.0f;
    }

    /** sync: batch-norm statistics were computed on each rank's part; average them. */
    void averageBuffers()
    {
        const std::size_t n = flat->bufferSize();
        if (n == 0 || group.size == 1)
            return;
        buffer.assign(n, 0.0f);
        flat->copyBuffers(buffer.data());
        const auto weight = float(group.shares[std::size_t(group.rank)]);
        for (float &x : buffer)
            x *= weight;
        collectives->allreduceSum(buffer.data(), n);
        flat->setBuffers(buffer.data());
    }

    /** The end of an epoch with a weight average: each rank's average (weights and batch-norm
     *  statistics), weighted by the rank's share, summed, so every rank evaluates and sends
     *  the same one. A rank that joined late started its average later; this evens it out. */
    void averageTheAverages()
    {
        if (!average || group.size == 1 || average->updates() == 0)
            return;
        const std::size_t n = flat->averagedSize();
        buffer.assign(n, 0.0f);
        average->swap(*model);
        flat->copyAveraged(buffer.data());
        const auto weight = float(group.shares[std::size_t(group.rank)]);
        for (float &x : buffer)
            x *= weight;
        try {
            collectives->allreduceSum(buffer.data(), n);
        } catch (...) {
            average->swap(*model);
            throw;
        }
        flat->setAveraged(buffer.data());
        average->swap(*model);
    }

    /** Runs f with the weight average (when there is one) in the model's place. */
    template <typename F> auto withAverage(F &&f)
    {
        struct Swap
        {
            std::optional<core::WeightAverage> &a;
            core::Model &m;
            bool on;
            ~Swap()
            {
                if (on)
                    a->swap(m);
            }
        } swapped{average, *model, average && average->updates() > 0};
        if (swapped.on)
            average->swap(*model);
        return f();
    }

    void report(double loss, double accuracy)
    {
        const double speed = computeSeconds > 0 ? computed / computeSeconds : 0.0;
        w.setStatus([&](TrainingStatus &s) {
            s.step = step + 1;
            s.epoch = int(step / std::max<std::int64_t>(batches, 1)) + 1;
            s.loss = loss;
            s.accuracy = accuracy;
            s.images_per_second = speed;
        });
        if (Clock::now() - lastProgress > std::chrono::milliseconds(500)) {
            lastProgress = Clock::now();
            link.post(Message::Progress, w.status().toCbor());
        }
    }

    // ---- epochs

    /** The end of an epoch: report, evaluate the part of the test set we are given. Returns the
     *  coordinator's last answer (continue, stop, or a new group). */
    QCborMap finishEpoch(int epoch, bool global, const QCborMap &extra = {})
    {
        const double wall = secondsSince(epochStart);
        // Every epoch's end reaches the training charts, however short the epoch was.
        lastProgress = Clock::now();
        link.post(Message::Progress, w.status().toCbor());
        QCborMap done{{QStringLiteral("epoch"), epoch},
                      {QStringLiteral("loss_sum"), global ? lossSum : pendingLoss},
                      {QStringLiteral("correct"), global ? correct : pendingCorrect},
                      {QStringLiteral("seen"), global ? seen : pendingSeen},
                      {QStringLiteral("targets"), global ? targets : pendingTargets},
                      {QStringLiteral("global"), global},
                      {QStringLiteral("seconds"), wall},
                      {QStringLiteral("compute_images_per_second"),
                       computeSeconds > 0 ? computed / computeSeconds : 0.0}};
        for (auto it = extra.begin(); it != extra.end(); ++it)
            done.insert(it.key(), it.value());
        const QCborMap reply = link.request(Message::EpochDone, done);
        const QString action = reply.value(Action::Field).toString();
        if (action == Action::Stop || action == Action::Regroup || action == Action::More)
            return reply; // someone was lost at the barrier: regroup, or train its part, first
        if (reply.contains(QStringLiteral("weights")) &&
            !readFloats(reply.value(QStringLiteral("weights")).toByteArray(),
                        scratch(flat->averagedSize()), flat->averagedSize()))
            throw core::FormatError("the parameter server's weights have the wrong size");
        if (reply.contains(QStringLiteral("weights")))
            flat->setAveraged(buffer.data());
        // The part of the test set the coordinator names, evaluated and reported; again while it
        // answers with another (Action::Evaluate: a part a node lost while evaluating left).
        QCborMap answer = reply;
        do {
            const std::int64_t begin = cborInteger(answer.value(QStringLiteral("test_begin")));
            const std::int64_t end = cborInteger(answer.value(QStringLiteral("test_end")));
            core::EvalResult ev;
            if (test && begin >= 0 && end > begin && end <= test->size()) {
                w.setStatus([](TrainingStatus &s) { s.phase = QStringLiteral("evaluating"); });
                ev = withAverage([&] {
                    return core::Trainer::evaluate(*model, core::RangeView(*test, begin, end),
                                                   evaluationBatch(), link.stopFlag());
                });
                checkMemory();
                w.setStatus([](TrainingStatus &s) { s.phase = QStringLiteral("training"); });
            }
            answer = link.request(Message::EpochEval,
                                  QCborMap{{QStringLiteral("epoch"), epoch},
                                           {QStringLiteral("loss_sum"), ev.loss * double(ev.count)},
                                           {QStringLiteral("correct"),
                                            qint64(std::llround(ev.accuracy * double(ev.count)))},
                                           {QStringLiteral("count"), qint64(ev.count)}});
        } while (answer.value(Action::Field).toString() == Action::Evaluate);
        if (answer.contains(QStringLiteral("send_weights"))) // a new best (keep-best runs)
            withAverage([&] {
                postWeights(Message::BestWeights,
                            cborInteger(answer.value(QStringLiteral("send_weights"))));
            });
        return answer;
    }

    /** The synchronised model (FlatState's averaged layout) as `type` messages of at most
     *  4 MiB each: "weights" at the end of a run, "best_weights" of an epoch when asked. */
    void postWeights(const QString &type, qint64 epoch = 0)
    {
        std::vector<float> state(flat->averagedSize());
        flat->copyAveraged(state.data());
        const QByteArray bytes = floatBytes(state.data(), state.size());
        constexpr qsizetype chunk = 4 << 20;
        const int total = std::max(1, int((bytes.size() + chunk - 1) / chunk));
        for (int i = 0; i < total; ++i)
            link.post(type, QCborMap{{QStringLiteral("index"), i},
                                     {QStringLiteral("total"), total},
                                     {QStringLiteral("epoch"), epoch},
                                     {QStringLiteral("data"), bytes.mid(i * chunk, chunk)}});
    }

    float *scratch(std::size_t n)
    {
        buffer.resize(n);
        return buffer.data();
    }

    void startEpochCounters()
    {
        lossSum = correct = seen = targets = 0.0;
        pendingLoss = pendingCorrect = pendingSeen = pendingTargets = 0.0;
        computeSeconds = computed = 0.0;
        epochStart = Clock::now();
    }

    /** sync and local-sgd. Returns whether the run was cancelled. */
    bool runCollective(const QCborMap &ready)
    {
        startEpochCounters();
        if (!regroup(ready))
            return true;
        for (;;) {
            if (step >= totalSteps && epochsDone >= job.epochs)
                return false;
            if (step > epochsDone * batches && step % batches == 0) {
                // every batch of this epoch is done: the barrier, then the evaluation
                const QCborMap reply = finishEpoch(int(step / batches), true);
                const QString action = reply.value(Action::Field).toString();
                if (action == Action::Stop)
                    return true;
                if (action == Action::Finish) // the coordinator's patience ran out: the end
                    return false;
                if (action == Action::Regroup) { // someone was lost at the barrier
                    if (!regroup(reply))
                        return true;
                    continue;
                }
                epochsDone = step / batches;
                startEpochCounters();
                takeSnapshot();
                const QCborValue next = reply.value(QStringLiteral("next_group"));
                if (next.isMap() && !regroup(QCborMap{{QStringLiteral("group"), next}}))
                    return true;
                continue;
            }
            seekEpoch(int(step / batches) + 1);
            const std::int64_t b = step % batches;
            bool stop = false;
            try {
                stop = job.mode == TrainingMode::Sync ? syncStep(b) : localStep(b);
                if (job.mode == TrainingMode::Sync && b + 1 == batches)
                    averageBuffers();
                if (b + 1 == batches)
                    averageTheAverages();
            } catch (const CollectiveError &e) {
                qCWarning(lcWorker).noquote() << "step" << step << "failed:" << e.what();
                const QCborMap reply = link.request(
                    Message::CollectiveFailed,
                    QCborMap{{QStringLiteral("step"), qint64(step)},
                             {QStringLiteral("message"), QString::fromUtf8(e.what())}});
                if (!regroup(reply))
                    return true;
                continue;
            }
            ++step;
            if (job.mode == TrainingMode::LocalSgd && averaged)
                takeSnapshot();
            if (stop)
                return true;
        }
    }

    // local-sgd: the state as of the last average, which a regroup goes back to (the local
    // steps since then exist on one node only; sync mode's state is always synchronised).
    std::vector<float> snapshot;
    std::int64_t snapshotStep = 0, snapshotEpochs = 0;
    double snapshotSums[4] = {0, 0, 0, 0};
    bool averaged = false;

    void takeSnapshot()
    {
        if (job.mode != TrainingMode::LocalSgd)
            return;
        snapshot.resize(flat->fullSize());
        flat->copyFull(snapshot.data());
        snapshotStep = step;
        snapshotEpochs = epochsDone;
        snapshotSums[0] = lossSum;
        snapshotSums[1] = correct;
        snapshotSums[2] = seen;
        snapshotSums[3] = targets;
    }

    void restoreSnapshot()
    {
        if (job.mode != TrainingMode::LocalSgd || snapshot.empty())
            return;
        flat->setFull(snapshot.data());
        step = snapshotStep;
        epochsDone = snapshotEpochs;
        lossSum = snapshotSums[0];
        correct = snapshotSums[1];
        seen = snapshotSums[2];
        targets = snapshotSums[3];
        pendingLoss = pendingCorrect = pendingSeen = pendingTargets = 0.0;
    }

    /** async: pull, compute, push; the parameter server answers with fresh weights, in
     *  bfloat16 deltas when the job's exchange is "bf16" (CompressedExchange). */
    bool runAsync(QCborMap ready)
    {
        if (ready.value(Action::Field).toString() == Action::Stop)
            return true;
        adoptGroup(ready.value(QStringLiteral("group")).toMap());
        int epoch = int(cborInteger(ready.value(QStringLiteral("epoch")), 1));
        const std::size_t g = flat->gradientSize(), nb = flat->bufferSize(),
                          na = flat->averagedSize();
        const bool compressed = job.exchange == QLatin1String("bf16");
        // The weights as the parameter server's mirror of this node has them: a delta applies
        // to these, not to the model, whose batch-norm buffers each forward pass moves.
        std::vector<float> held(na);
        CompressedExchange gradients;
        auto adopt = [&](const QCborMap &reply) {
            const bool isDelta = reply.contains(QStringLiteral("delta_bf16"));
            const bool ok =
                isDelta
                    ? CompressedExchange::addDecoded(
                          reply.value(QStringLiteral("delta_bf16")).toByteArray(), held.data(), na)
                    : readFloats(reply.value(QStringLiteral("weights")).toByteArray(), held.data(),
                                 na);
            if (!ok)
                throw core::FormatError("the parameter server's weights have the wrong size");
            flat->setAveraged(held.data());
            return cborInteger(reply.value(QStringLiteral("version")));
        };
        w.setStatus([](TrainingStatus &s) { s.phase = QStringLiteral("training"); });
        while (epoch <= job.epochs) {
            seekEpoch(epoch);
            startEpochCounters();
            step = std::int64_t(epoch - 1) * batches;
            const auto parts = splitByShares(train->size(), group.shares);
            const std::int64_t offset =
                std::accumulate(parts.begin(), parts.begin() + group.rank, std::int64_t(0));
            const std::int64_t mine = parts[std::size_t(group.rank)];
            const std::int64_t localBatch = std::max<std::int64_t>(
                1, std::llround(double(job.batch) * group.shares[std::size_t(group.rank)]));
            QCborMap reply = link.request(Message::PsPull, {});
            if (reply.value(Action::Field).toString() == Action::Stop)
                return true;
            qint64 version = adopt(reply);
            gradients.reset(); // what the last epoch's pushes left belongs to older weights
            const std::int64_t *indices = order->indices(0) + offset;
            std::vector<float> push(g + nb);
            // Pipelined: the push in flight while the next batch is computed; its reply is
            // adopted before the next push goes (whose gradients are then one version staler,
            // and say so: they carry the version they were computed on).
            qint64 inFlight = -1;
            auto landInFlight = [&] {
                if (inFlight < 0)
                    return true;
                const QCborMap answer = link.wait(inFlight, JobLink::kForever, Message::PsPush);
                inFlight = -1;
                if (answer.value(Action::Field).toString() == Action::Stop)
                    return false;
                version = adopt(answer);
                return true;
            };
            // Trains `n` samples of the epoch's order from `from` on; false: the job was stopped.
            // `makeup`: a lost node's samples, after this node's own (the epoch's last steps).
            auto trainRange = [&](const std::int64_t *from, std::int64_t n, bool makeup) {
                for (std::int64_t first = 0; first < n; first += localBatch) {
                    const std::int64_t count = std::min(localBatch, n - first);
                    const core::StepResult r = compute(from + first, count);
                    flat->copyGradients(push.data());
                    flat->copyBuffers(push.data() + g);
                    pendingLoss += r.loss * double(count);
                    pendingCorrect += double(r.correct);
                    pendingSeen += double(count);
                    pendingTargets += double(r.count);
                    // the step this batch stands for, in units of global batches (for the schedule)
                    step = std::int64_t(epoch - 1) * batches +
                           (makeup ? batches - 1
                                   : std::min(batches - 1,
                                              first * batches / std::max<std::int64_t>(n, 1)));
                    QCborMap body{{QStringLiteral("version"), version},
                                  {QStringLiteral("lr"), rate()},
                                  {QStringLiteral("count"), qint64(count)}};
                    if (compressed) {
                        body.insert(QStringLiteral("gradient_bf16"),
                                    gradients.encodeWithFeedback(push.data(), g));
                        body.insert(QStringLiteral("buffers"), floatBytes(push.data() + g, nb));
                    } else {
                        body.insert(QStringLiteral("gradient"),
                                    floatBytes(push.data(), push.size()));
                    }
                    if (job.pipelined) {
                        if (!landInFlight())
                            return false;
                        inFlight = link.send(Message::PsPush, body);
                    } else {
                        reply = link.request(Message::PsPush, body);
                        if (reply.value(Action::Field).toString() == Action::Stop)
                            return false;
                        version = adopt(reply);
                    }
                    report(r.loss, double(r.correct) / double(std::max<std::int64_t>(r.count, 1)));
                }
                return landInFlight();
            };
            if (!trainRange(indices, mine, false))
                return true;
            step = std::int64_t(epoch) * batches;
            // What this node holds, for the server to check against its mirror of it.
            const auto endEpoch = [&] {
                return finishEpoch(epoch, false,
                                   QCborMap{{QStringLiteral("held_fingerprint"),
                                             CompressedExchange::fingerprint(held.data(), na)}});
            };
            reply = endEpoch();
            // A node lost mid-epoch left samples of this epoch untrained: this node trains the
            // ranges it is given, then ends the epoch again (its counts include them).
            while (reply.value(Action::Field).toString() == Action::More) {
                for (const QCborValue &range : reply.value(QStringLiteral("ranges")).toArray()) {
                    const std::int64_t first = cborInteger(range.toArray().at(0), -1);
                    const std::int64_t count = cborInteger(range.toArray().at(1), -1);
                    if (first < 0 || count <= 0 || first > train->size() - count)
                        throw core::FormatError(
                            "the coordinator asked for samples " + std::to_string(first) + "+" +
                            std::to_string(count) + " of " + std::to_string(train->size()));
                    if (!trainRange(order->indices(0) + first, count, true))
                        return true;
                }
                step = std::int64_t(epoch) * batches;
                reply = endEpoch();
            }
            if (reply.value(Action::Field).toString() == Action::Stop)
                return true;
            if (reply.value(Action::Field).toString() == Action::Finish)
                return false;
            const QCborValue next = reply.value(QStringLiteral("next_group"));
            if (next.isMap())
                adoptGroup(next.toMap());
            ++epoch;
        }
        return false;
    }
};

TrainingWorker::TrainingWorker(JobSpec job, std::shared_ptr<JobLink> link, WorkerContext context)
    : m_job(std::move(job)), m_link(std::move(link)), m_context(std::move(context))
{
    m_status.active = true;
    m_status.job = m_job.id;
    m_status.phase = QStringLiteral("queued");
}

TrainingWorker::~TrainingWorker() = default;

TrainingStatus TrainingWorker::status() const
{
    std::lock_guard lock(m_statusMutex);
    return m_status;
}

void TrainingWorker::setStatus(const std::function<void(TrainingStatus &)> &update)
{
    std::lock_guard lock(m_statusMutex);
    update(m_status);
}

void TrainingWorker::run()
{
    // OpenMP's thread count is a per-thread setting: this thread takes the node's --threads
    // (oneDNN and Eigen read it from here), not the runtime's default of every core.
    core::setThreadCount(core::threadCount());
    Run run(*this);
    const auto finish = [this](const QString &phase) {
        setStatus([&](TrainingStatus &s) {
            s.active = false;
            s.phase = phase;
        });
    };
    try {
        run.load();
        run.holdMemory();
        const auto [speed, profile] = run.profile();
        run.checkMemory();
        qCInfo(lcWorker).noquote()
            << QStringLiteral("job %1 (%2): %3 training samples, %4 img/s measured")
                   .arg(m_job.id, modeName(m_job.mode))
                   .arg(run.train->size())
                   .arg(speed, 0, 'f', 0);
        if (m_link->stopRequested())
            throw LinkError("stopped before the job started");
        const QCborMap ready = m_link->request(
            Message::JobReady,
            QCborMap{{QStringLiteral("images_per_second"), speed},
                     {QStringLiteral("train_samples"), qint64(run.train->size())},
                     {QStringLiteral("test_samples"), qint64(run.test ? run.test->size() : 0)},
                     {QStringLiteral("parameters"), qint64(run.model->parameterCount())},
                     {QStringLiteral("gradient_floats"), qint64(run.flat->gradientSize())},
                     {QStringLiteral("averaged_floats"), qint64(run.flat->averagedSize())},
                     {QStringLiteral("buffer_floats"), qint64(run.flat->bufferSize())},
                     // async: it trains a lost node's rest of an epoch when asked (Action::More)
                     {QStringLiteral("takes_more"), true},
                     // it evaluates a part of the test set a lost node left (Action::Evaluate)
                     {QStringLiteral("evaluates_more"), true},
                     {QStringLiteral("profile"), profile}});
        const bool cancelled =
            m_job.mode == TrainingMode::Async ? run.runAsync(ready) : run.runCollective(ready);
        // The final weights: from every rank of the collective modes (all hold them, and the
        // coordinator keeps rank 0's, or another's if rank 0 is lost before its last chunk);
        // in async mode the coordinator's parameter server has them already.
        if (m_job.mode != TrainingMode::Async && run.joined)
            run.withAverage([&] { run.postWeights(Message::Weights); });
        // Inactive before the last message: once the coordinator has it, it may send the next
        // job at once, and the node must not find this one still running (it joins this
        // thread instead, which only has its teardown left).
        finish(cancelled ? QStringLiteral("stopped") : QStringLiteral("done"));
        m_link->post(Message::JobDone, QCborMap{{QStringLiteral("cancelled"), cancelled},
                                                {QStringLiteral("steps"), qint64(run.step)},
                                                {QStringLiteral("rank"), run.group.rank},
                                                {QStringLiteral("fingerprint"),
                                                 QString::fromStdString(run.flat->fingerprint())}});
        qCInfo(lcWorker).noquote()
            << "job" << m_job.id << (cancelled ? "stopped" : "finished") << "at step" << run.step;
    } catch (const LinkError &e) {
        qCWarning(lcWorker).noquote() << "job" << m_job.id << "abandoned:" << e.what();
        finish(QStringLiteral("abandoned"));
    } catch (const CollectiveError &e) {
        qCWarning(lcWorker).noquote() << "job" << m_job.id << "failed:" << e.what();
        finish(QStringLiteral("failed"));
        m_link->post(Message::JobFailed,
                     QCborMap{{QStringLiteral("message"), QString::fromUtf8(e.what())}});
    } catch (const std::exception &e) {
        qCWarning(lcWorker).noquote() << "job" << m_job.id << "failed:" << e.what();
        finish(QStringLiteral("failed"));
        m_link->post(Message::JobFailed,
                     QCborMap{{QStringLiteral("message"), QString::fromUtf8(e.what())}});
    }
    if (run.memoryLimit)
        qCInfo(lcWorker).noquote()
            << "job" << m_job.id << "grew this process by"
            << QString::fromStdString(core::NumberText::bytes(run.memoryLimit->peakGrowthBytes()))
            << "at most, of its limit of"
            << QString::fromStdString(core::NumberText::bytes(run.memoryLimit->limitBytes()));
}

} // namespace edgetrain::net

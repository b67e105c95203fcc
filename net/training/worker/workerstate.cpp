#include "net/training/worker/workerstate.h"

#include "core/error.h"
#include "net/protocol/protocol.h"

#include <algorithm>

namespace edgetrain::net::worker {

WorkerState::WorkerState(const JobSpec &jobSpec, JobLink &jobLink,
                         const WorkerContext &workerContext, StatusUpdate statusUpdate,
                         std::function<TrainingStatus()> statusRead)
    : job(jobSpec), link(jobLink), context(workerContext), setStatus(std::move(statusUpdate)),
      status(std::move(statusRead))
{}

void WorkerState::load()
{
    setPhase(TrainingPhase::Loading);
    loaded = JobLoader::load(job, context);
    memory.emplace(job, *loaded.model, context.memory_limit);
    order = std::make_unique<core::BatchOrder>(loaded.train->size(), job.batch, job.seed);
    batches = order->batches();
    totalSteps = batches * job.epochs;
    labels.resize(static_cast<std::size_t>(job.batch + 1) *
                  static_cast<std::size_t>(loaded.train->labelWidth()));
    setStatus([&](TrainingStatus &s) { s.steps = totalSteps; });
}

void WorkerState::setPhase(TrainingPhase phase)
{
    setStatus([&](TrainingStatus &s) { s.phase = phase; });
}

TrainingReply WorkerState::ask(const QString &type, const QCborMap &body)
{
    QString error;
    const std::optional<TrainingReply> reply =
        TrainingReply::fromCbor(link.request(type, body), &error);
    if (!reply)
        throw core::FormatError("the coordinator's answer to " + type.toStdString() +
                                " does not read: " + error.toStdString());
    return *reply;
}

core::StepResult WorkerState::compute(const std::int64_t *indices, std::int64_t count)
{
    const auto start = Clock::now();
    core::Model &model = *loaded.model;
    core::Tensor x(model.batchShape(count), core::MemoryCategory::Activations);
    loaded.train->gather(indices, count, x.data(), labels.data());
    core::PassContext ctx;
    ctx.training = true;
    ctx.seed = job.seed;
    ctx.step = std::uint64_t(step);
    const core::StepResult r = model.forwardBackward(x, labels.data(), ctx, memory->stepSchedule());
    memory->afterStep();
    computeSeconds += secondsSince(start);
    computed += double(count);
    return r;
}

double WorkerState::rate() const
{
    return loaded.schedule.rate(job.lr, step, totalSteps, batches);
}

void WorkerState::seekEpoch(int epoch)
{
    if (orderEpoch > epoch) {
        order = std::make_unique<core::BatchOrder>(loaded.train->size(), job.batch, job.seed);
        orderEpoch = 0;
    }
    while (orderEpoch < epoch) {
        order->nextEpoch();
        ++orderEpoch;
    }
}

void WorkerState::report(double loss, double accuracy)
{
    const double speed = computeSpeed();
    setStatus([&](TrainingStatus &s) {
        s.step = step + 1;
        s.epoch = int(step / std::max<std::int64_t>(batches, 1)) + 1;
        s.loss = loss;
        s.accuracy = accuracy;
        s.images_per_second = speed;
    });
    if (Clock::now() - lastProgress > std::chrono::milliseconds(500))
        postProgress();
}

void WorkerState::postProgress()
{
    lastProgress = Clock::now();
    link.post(Message::Progress, status().toCbor());
}

double WorkerState::computeSpeed() const
{
    return computeSeconds > 0 ? computed / computeSeconds : 0.0;
}

void WorkerState::startEpochCounters()
{
    tally = pending = EpochTally{};
    computeSeconds = computed = 0.0;
    epochStart = Clock::now();
}

} // namespace edgetrain::net::worker

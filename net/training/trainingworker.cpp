#include "net/training/trainingworker.h"

#include "core/numbertext.h"
#include "core/parallel.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"
#include "net/training/collectives.h"
#include "net/training/worker/asyncmode.h"
#include "net/training/worker/deviceprofiler.h"
#include "net/training/worker/epochend.h"
#include "net/training/worker/groupsession.h"
#include "net/training/worker/localsgdmode.h"
#include "net/training/worker/syncmode.h"
#include "net/training/worker/workerstate.h"

namespace edgetrain::net {

Q_LOGGING_CATEGORY(lcWorker, "edgetrain.worker")

namespace {

/** What the node tells the coordinator it is ready with: the data's and the model's sizes, its
 *  speed and its profile. */
JobReady readyWith(const worker::WorkerState &state, const ProfileReport &profile)
{
    const core::FlatState &flat = *state.loaded.flat;
    JobReady ready;
    ready.images_per_second = worker::DeviceProfiler::typicalImagesPerSecond(profile);
    ready.train_samples = state.loaded.train->size();
    ready.test_samples = state.loaded.test ? state.loaded.test->size() : 0;
    ready.parameters = state.loaded.model->parameterCount();
    ready.gradient_floats = std::int64_t(flat.gradientSize());
    ready.averaged_floats = std::int64_t(flat.averagedSize());
    ready.buffer_floats = std::int64_t(flat.bufferSize());
    ready.takes_more = true;     // async: it trains a lost node's rest of an epoch when asked
    ready.evaluates_more = true; // it evaluates a part of the test set a lost node left
    ready.profile = profile;
    return ready;
}

/** Trains in the job's mode from the coordinator's answer to job_ready; true if cancelled. */
bool train(const JobSpec &job, worker::WorkerState &state, worker::GroupSession &session,
           worker::EpochEnd &epochEnd, const TrainingReply &ready)
{
    switch (job.mode) {
    case TrainingMode::Async:
        return worker::AsyncMode(state, session, epochEnd).run(ready);
    case TrainingMode::LocalSgd:
        return worker::LocalSgdMode(state, session, epochEnd).run(ready);
    case TrainingMode::Sync:
        break;
    }
    return worker::SyncMode(state, session, epochEnd).run(ready);
}

} // namespace

TrainingWorker::TrainingWorker(JobSpec job, std::shared_ptr<JobLink> link, WorkerContext context)
    : m_job(std::move(job)), m_link(std::move(link)), m_context(std::move(context))
{
    m_status.active = true;
    m_status.job = m_job.id;
    m_status.phase = TrainingPhase::Queued;
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
    worker::WorkerState state(
        m_job, *m_link, m_context,
        [this](const std::function<void(TrainingStatus &)> &update) { setStatus(update); },
        [this] { return status(); });
    worker::GroupSession session(state, m_job.mode == TrainingMode::LocalSgd);
    worker::EpochEnd epochEnd(state);
    const auto finish = [this](TrainingPhase phase) {
        setStatus([&](TrainingStatus &s) {
            s.active = false;
            s.phase = phase;
        });
    };
    try {
        state.load();
        state.memory->hold();
        state.setPhase(TrainingPhase::Calibrating);
        const ProfileReport profile =
            worker::DeviceProfiler(m_job, m_context, *m_link, state.loaded, *state.memory).run();
        state.memory->check();
        qCInfo(lcWorker).noquote()
            << QStringLiteral("job %1 (%2): %3 training samples, %4 img/s measured")
                   .arg(m_job.id, modeName(m_job.mode))
                   .arg(state.loaded.train->size())
                   .arg(worker::DeviceProfiler::typicalImagesPerSecond(profile), 0, 'f', 0);
        if (m_link->stopRequested())
            throw LinkError("stopped before the job started");
        const TrainingReply ready =
            state.ask(Message::JobReady, readyWith(state, profile).toCbor());
        const bool cancelled = train(m_job, state, session, epochEnd, ready);
        // The final weights: from every rank of the collective modes (all hold them, and the
        // coordinator keeps rank 0's, or another's if rank 0 is lost before its last chunk);
        // in async mode the coordinator's parameter server has them already.
        if (m_job.mode != TrainingMode::Async && session.joined())
            state.withAverage([&] { epochEnd.postWeights(Message::Weights); });
        // Inactive before the last message: once the coordinator has it, it may send the next
        // job at once, and the node must not find this one still running (it joins this
        // thread instead, which only has its teardown left).
        finish(cancelled ? TrainingPhase::Stopped : TrainingPhase::Done);
        JobDone done;
        done.cancelled = cancelled;
        done.steps = state.step;
        done.rank = session.group().rank;
        done.fingerprint = QString::fromStdString(state.loaded.flat->fingerprint());
        m_link->post(Message::JobDone, done.toCbor());
        qCInfo(lcWorker).noquote()
            << "job" << m_job.id << (cancelled ? "stopped" : "finished") << "at step" << state.step;
    } catch (const LinkError &e) {
        qCWarning(lcWorker).noquote() << "job" << m_job.id << "abandoned:" << e.what();
        finish(TrainingPhase::Abandoned);
    } catch (const std::exception &e) { // a CollectiveError among them
        qCWarning(lcWorker).noquote() << "job" << m_job.id << "failed:" << e.what();
        finish(TrainingPhase::Failed);
        m_link->post(Message::JobFailed, Failure{QString::fromUtf8(e.what())}.toCbor());
    }
    if (const JobMemoryLimit *limit = state.memory ? state.memory->limit() : nullptr)
        qCInfo(lcWorker).noquote()
            << "job" << m_job.id << "grew this process by"
            << QString::fromStdString(core::NumberText::bytes(limit->peakGrowthBytes()))
            << "at most, of its limit of"
            << QString::fromStdString(core::NumberText::bytes(limit->limitBytes()));
}

} // namespace edgetrain::net

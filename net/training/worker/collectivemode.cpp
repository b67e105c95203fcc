#include "net/training/worker/collectivemode.h"

#include "net/training/worker/epochend.h"
#include "net/training/worker/groupsession.h"
#include "net/training/worker/workerstate.h"

#include <numeric>

namespace edgetrain::net::worker {

CollectiveMode::CollectiveMode(WorkerState &state, GroupSession &session, EpochEnd &epochEnd)
    : m_state(state), m_session(session), m_epochEnd(epochEnd)
{}

CollectiveMode::~CollectiveMode() = default;

bool CollectiveMode::run(const TrainingReply &ready)
{
    WorkerState &s = m_state;
    s.startEpochCounters();
    if (!m_session.regroup(ready))
        return true;
    for (;;) {
        if (s.step >= s.totalSteps && s.epochsDone >= s.job.epochs)
            return false;
        if (s.step > s.epochsDone * s.batches && s.step % s.batches == 0) {
            const Barrier barrier = closeEpoch();
            if (barrier == Barrier::Cancelled)
                return true;
            if (barrier == Barrier::Finished)
                return false;
            continue;
        }
        s.seekEpoch(int(s.step / s.batches) + 1);
        const std::int64_t b = s.step % s.batches;
        bool stop = false;
        try {
            stop = step(b);
            if (b + 1 == s.batches)
                averageTheAverages();
        } catch (const CollectiveError &e) {
            qCWarning(lcWorker).noquote() << "step" << s.step << "failed:" << e.what();
            if (!m_session.recover(e))
                return true;
            continue;
        }
        ++s.step;
        stepDone();
        if (stop)
            return true;
    }
}

CollectiveMode::Barrier CollectiveMode::closeEpoch()
{
    WorkerState &s = m_state;
    const TrainingReply reply = m_epochEnd.finish(int(s.step / s.batches), s.tally, true);
    if (reply.action == ReplyAction::Stop)
        return Barrier::Cancelled;
    if (reply.action == ReplyAction::Finish) // the coordinator's patience ran out: the end
        return Barrier::Finished;
    if (reply.action == ReplyAction::Regroup) // someone was lost at the barrier
        return m_session.regroup(reply) ? Barrier::Continue : Barrier::Cancelled;
    s.epochsDone = s.step / s.batches;
    s.startEpochCounters();
    m_session.markSynchronised();
    return m_session.regroupNext(reply) ? Barrier::Continue : Barrier::Cancelled;
}

CollectiveMode::Part CollectiveMode::part(std::int64_t b) const
{
    const std::int64_t total = m_state.order->count(b);
    const GroupSpec &group = m_session.group();
    const auto parts = splitByShares(total, group.shares);
    return {total, std::accumulate(parts.begin(), parts.begin() + group.rank, std::int64_t(0)),
            parts[std::size_t(group.rank)]};
}

void CollectiveMode::weightByShare(std::size_t n)
{
    const auto weight = float(m_session.share());
    for (std::size_t i = 0; i < n; ++i)
        m_state.buffer[i] *= weight;
}

void CollectiveMode::averageTheAverages()
{
    auto &average = m_state.loaded.average;
    if (!average || m_session.group().size == 1 || average->updates() == 0)
        return;
    core::FlatState &flat = *m_state.loaded.flat;
    core::Model &model = *m_state.loaded.model;
    const std::size_t n = flat.averagedSize();
    m_state.buffer.assign(n, 0.0f);
    average->swap(model);
    flat.copyAveraged(m_state.buffer.data());
    weightByShare(n);
    try {
        m_session.collectives().allreduceSum(m_state.buffer.data(), n);
    } catch (...) {
        average->swap(model);
        throw;
    }
    flat.setAveraged(m_state.buffer.data());
    average->swap(model);
}

} // namespace edgetrain::net::worker

#include "net/training/worker/groupsession.h"

#include "core/error.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"
#include "net/training/worker/workerstate.h"

#include <algorithm>

namespace edgetrain::net::worker {

namespace {

/** What the most advanced rank broadcasts besides its model: its position and the epoch's sums. */
constexpr std::size_t kPositionFloats = 2 + EpochTally::kFloats;

} // namespace

GroupSession::GroupSession(WorkerState &state, bool keepsSnapshots)
    : m_state(state),
      m_store(state.link, std::chrono::milliseconds(state.job.collective_timeout_ms))
{
    if (keepsSnapshots)
        m_snapshot.emplace();
}

GroupSession::~GroupSession() = default;

void GroupSession::adoptSpec(const GroupSpec &group)
{
    m_group = group;
    m_joined = true;
    m_state.setStatus([&](TrainingStatus &s) {
        s.rank = m_group.rank;
        s.group_size = m_group.size;
    });
    // The largest part of a global batch this rank will get (the last batch may be one larger).
    m_state.memory->planSteps(
        splitByShares(m_state.job.batch + 1, m_group.shares)[std::size_t(m_group.rank)]);
}

void GroupSession::adopt(const TrainingReply &reply)
{
    if (!reply.group)
        throw core::FormatError("the coordinator sent " + actionName(reply.action).toStdString() +
                                " without a group");
    adoptSpec(*reply.group);
}

void GroupSession::adoptNext(const TrainingReply &reply)
{
    if (reply.next_group)
        adoptSpec(*reply.next_group);
}

bool GroupSession::regroup(TrainingReply reply)
{
    for (;;) {
        if (reply.action == ReplyAction::Stop)
            return false;
        try {
            adopt(reply);
            form();
            return true;
        } catch (const CollectiveError &e) {
            qCWarning(lcWorker).noquote() << "forming the group failed:" << e.what();
            reply = reportFailure(e);
        }
    }
}

bool GroupSession::regroupNext(const TrainingReply &reply)
{
    if (!reply.next_group)
        return true;
    TrainingReply next;
    next.action = ReplyAction::Regroup;
    next.group = reply.next_group;
    return regroup(next);
}

bool GroupSession::recover(const CollectiveError &error)
{
    return regroup(reportFailure(error));
}

TrainingReply GroupSession::reportFailure(const CollectiveError &error)
{
    CollectiveFailed failed;
    failed.step = m_state.step;
    failed.message = QString::fromUtf8(error.what());
    return m_state.ask(Message::CollectiveFailed, failed.toCbor());
}

void GroupSession::markSynchronised()
{
    if (m_snapshot)
        m_snapshot->take(m_state);
}

void GroupSession::form()
{
    m_state.setPhase(TrainingPhase::Regrouping);
    m_collectives.reset();
    GroupOptions o;
    o.rank = m_group.rank;
    o.size = m_group.size;
    o.hostname = m_state.context.bind_address;
    o.timeout = std::chrono::milliseconds(m_state.job.collective_timeout_ms);
    o.prefix = m_group.prefix().toStdString();
    m_collectives = std::make_unique<CollectiveGroup>(m_store, o);
    if (m_snapshot)
        m_snapshot->restore(m_state);

    // The rank with the most completed steps (the first of them) is the root.
    std::vector<float> steps(static_cast<std::size_t>(m_group.size), 0.0f);
    steps[std::size_t(m_group.rank)] = float(m_state.step + 1);
    m_collectives->allreduceSum(steps.data(), steps.size());
    const int root = int(std::max_element(steps.begin(), steps.end()) - steps.begin());
    core::FlatState &flat = *m_state.loaded.flat;
    std::vector<float> state(kPositionFloats + flat.fullSize());
    if (m_group.rank == root) {
        state[0] = float(m_state.step);
        state[1] = float(m_state.epochsDone);
        m_state.tally.pack(state.data() + 2);
        flat.copyFull(state.data() + kPositionFloats);
    }
    m_collectives->broadcast(state.data(), state.size(), root);
    if (m_group.rank != root) {
        m_state.step = std::int64_t(state[0]);
        m_state.epochsDone = std::int64_t(state[1]);
        m_state.tally = EpochTally::unpack(state.data() + 2);
        flat.setFull(state.data() + kPositionFloats);
        m_state.pending = EpochTally{};
    }
    qCInfo(lcWorker).noquote()
        << QStringLiteral("group %1: rank %2 of %3, continuing at step %4 (state from rank %5)")
               .arg(m_group.generation)
               .arg(m_group.rank)
               .arg(m_group.size)
               .arg(m_state.step)
               .arg(root);
    markSynchronised();
    m_state.setPhase(TrainingPhase::Training);
}

} // namespace edgetrain::net::worker

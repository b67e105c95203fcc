#pragma once

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/training/collectives.h"
#include "net/training/job.h"
#include "net/training/remotestore.h"
#include "net/training/worker/localsgdsnapshot.h"

#include <cstdint>
#include <memory>
#include <optional>

namespace edgetrain::net::worker {

struct WorkerState;

/**
 * This node's place in the training group: the group the coordinator names (rank, size, each
 * rank's share of a batch), the gloo group built for it through the coordinator's rendezvous
 * store, and, when a collective fails (a peer died), the way back: ask the coordinator for the
 * new group, build it, and make every rank's state the most advanced one among them (the rank
 * with the most completed steps broadcasts its weights, optimizer state and position). In
 * local-sgd mode that state is the one as of the last average (LocalSgdSnapshot).
 */
class GroupSession
{
public:
    /** `keepsSnapshots`: local-sgd (markSynchronised() snapshots the state). */
    GroupSession(WorkerState &state, bool keepsSnapshots);
    ~GroupSession();

    const GroupSpec &group() const { return m_group; }
    /** A group was adopted (a node released before it trains never is). */
    bool joined() const { return m_joined; }
    /** The gloo group (after regroup() returned true). */
    CollectiveGroup &collectives() { return *m_collectives; }
    /** This rank's share of a batch. */
    double share() const { return m_group.shares[std::size_t(m_group.rank)]; }

    /** async: adopts the group the coordinator's answer names (no gloo group), and plans this
     *  rank's steps. Throws core::FormatError if the answer names none. */
    void adopt(const TrainingReply &reply);
    /** async: adopts the answer's next group, if it names one. */
    void adoptNext(const TrainingReply &reply);

    /** sync, local-sgd: adopts the answer's group and forms it; while forming fails, tells the
     *  coordinator and follows its next answer. False when told to stop. */
    bool regroup(TrainingReply reply);
    /** Regroups to the answer's next group, if it names one; false when told to stop. */
    bool regroupNext(const TrainingReply &reply);
    /** A collective failed at the current step: tells the coordinator and regroups with its
     *  answer; false when told to stop. */
    bool recover(const CollectiveError &error);

    /** The ranks' states are the same here (local-sgd: the state a regroup goes back to). */
    void markSynchronised();

private:
    void adoptSpec(const GroupSpec &group);
    /** Builds the gloo group and makes every rank's state the most advanced one among them. */
    void form();
    TrainingReply reportFailure(const CollectiveError &error);

    WorkerState &m_state;
    RemoteStore m_store;
    GroupSpec m_group;
    bool m_joined = false;
    std::unique_ptr<CollectiveGroup> m_collectives;
    std::optional<LocalSgdSnapshot> m_snapshot;
};

} // namespace edgetrain::net::worker

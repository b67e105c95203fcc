#pragma once

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/training/worker/epochtally.h"

#include <QString>

namespace edgetrain::net::worker {

struct WorkerState;

/**
 * An epoch's end with the coordinator, in every mode: the epoch's sums to its barrier
 * (epoch_done), the weights it may answer with, the part of the test set it names evaluated
 * and reported (again while it names another: a part a node lost while evaluating left), and
 * the weights of a new best epoch when asked (keep-best runs). Also the synchronised model at
 * the end of a run.
 */
class EpochEnd
{
public:
    explicit EpochEnd(WorkerState &state) : m_state(state) {}

    /** Ends epoch `epoch` (1-based) with `sums`: the group's (`global`, sync and local-sgd) or
     *  this node's (async, whose `heldFingerprint` says which weights it holds, for the server
     *  to check against its mirror). Returns the coordinator's last answer: continue, stop,
     *  finish, a new group, or (async) more samples to train first. Throws core::FormatError if
     *  it sent weights of the wrong size. */
    TrainingReply finish(int epoch, const EpochTally &sums, bool global,
                         const QString &heldFingerprint = {});

    /** The synchronised model (FlatState's averaged layout) as `type` messages of at most
     *  WeightsChunk::kMaxBytes each: "weights" at the end of a run, "best_weights" of an epoch
     *  when asked. */
    void postWeights(const QString &type, std::int64_t epoch = 0);

private:
    /** Evaluates the parts of the test set the coordinator names; its last answer. */
    TrainingReply evaluate(int epoch, TrainingReply answer);

    WorkerState &m_state;
};

} // namespace edgetrain::net::worker

#pragma once

#include "net/protocol/messages/coordinatorreplies.h"

#include <cstdint>

namespace edgetrain::net::worker {

struct WorkerState;
class GroupSession;
class EpochEnd;

/**
 * What sync and local-sgd share: every global batch split across the ranks by their shares,
 * epochs that end at a barrier with the coordinator, and a regroup when a collective fails (or
 * someone was lost at the barrier). A mode supplies the step.
 */
class CollectiveMode
{
public:
    CollectiveMode(WorkerState &state, GroupSession &session, EpochEnd &epochEnd);
    virtual ~CollectiveMode();
    CollectiveMode(const CollectiveMode &) = delete;
    CollectiveMode &operator=(const CollectiveMode &) = delete;

    /** Trains from the coordinator's answer to job_ready to the end; true if cancelled. */
    bool run(const TrainingReply &ready);

protected:
    /** One step on global batch `b` of the current epoch; true when the ranks agreed to stop.
     *  Throws CollectiveError when a collective fails. */
    virtual bool step(std::int64_t b) = 0;
    /** After the step was counted. */
    virtual void stepDone() {}

    /** This rank's slice of global batch b: the batch's size, where the slice starts in it and
     *  how many samples it holds. */
    struct Part
    {
        std::int64_t total, offset, count;
    };
    Part part(std::int64_t b) const;
    /** Scales the first `n` floats of the buffer by this rank's share (summed over the ranks:
     *  their weighted average). */
    void weightByShare(std::size_t n);

    WorkerState &m_state;
    GroupSession &m_session;

private:
    enum class Barrier { Continue, Cancelled, Finished };
    /** Every batch of the epoch is done: the barrier, then the evaluation. */
    Barrier closeEpoch();
    /** The end of an epoch with a weight average: each rank's average (weights and batch-norm
     *  statistics), weighted by the rank's share, summed, so every rank evaluates and sends the
     *  same one. A rank that joined late started its average later; this evens it out. */
    void averageTheAverages();

    EpochEnd &m_epochEnd;
};

} // namespace edgetrain::net::worker

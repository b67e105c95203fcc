#pragma once

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/compressedexchange.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain::net::worker {

struct WorkerState;
class GroupSession;
class EpochEnd;

/**
 * async: the epoch's samples are split by share; each rank pulls the parameter server's
 * weights, pushes gradients and gets fresh weights back (the coordinator holds the replies of a
 * rank that runs more than `staleness` pushes ahead), in bfloat16 deltas when the job's
 * exchange is "bf16" (CompressedExchange). With the job's `pipelined`, one push is in flight
 * while the next batch is computed.
 */
class AsyncMode
{
public:
    AsyncMode(WorkerState &state, GroupSession &session, EpochEnd &epochEnd);

    /** Trains from the coordinator's answer to job_ready to the end; true if cancelled. */
    bool run(const TrainingReply &ready);

private:
    enum class Outcome { Continue, Cancelled, Finished };
    Outcome trainEpoch();
    /** Reads the parameter server's answer; false: stop. The weights (or a delta to what this
     *  node holds) go into the model and their version is kept. Throws core::FormatError if the
     *  answer does not read or the weights have the wrong size. */
    bool adopt(const QCborMap &answer);
    /** Trains `n` samples of the epoch's order from `from` on; false: the job was stopped.
     *  `makeup`: a lost node's samples, after this node's own (the epoch's last steps). */
    bool trainRange(const std::int64_t *from, std::int64_t n, bool makeup);
    /** The push of the gradients (and batch-norm buffers) in `m_push` from `count` samples. */
    GradientPush pushOf(std::int64_t count);
    /** Sends a push and adopts its reply (pipelined: the previous push's); false: stopped. */
    bool push(const GradientPush &gradients);
    /** Adopts the reply to the push in flight, if one is; false: stopped. */
    bool landInFlight();
    /** Ends the epoch, training the samples a lost node left first when asked: the
     *  coordinator's last answer, or none if the job was stopped meanwhile. */
    std::optional<TrainingReply> endEpoch();

    WorkerState &m_state;
    GroupSession &m_session;
    EpochEnd &m_epochEnd;
    std::size_t m_gradientFloats, m_bufferFloats, m_averagedFloats;
    bool m_compressed;
    // The weights as the parameter server's mirror of this node has them: a delta applies to
    // these, not to the model, whose batch-norm buffers each forward pass moves.
    std::vector<float> m_held;
    std::vector<float> m_push;
    CompressedExchange m_gradients;
    int m_epoch = 1;
    std::int64_t m_localBatch = 1;
    std::int64_t m_version = 0;
    qint64 m_inFlight = -1; // the push whose reply is still to come (-1: none)
};

} // namespace edgetrain::net::worker

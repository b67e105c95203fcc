#pragma once

#include "net/training/coordinator/member.h"

#include <QByteArray>
#include <QCborMap>

#include <map>
#include <memory>
#include <vector>

namespace edgetrain::net {

struct ClusterResult;
struct EpochDone;
struct GradientPush;
struct JobSpec;
class ParameterServer;

/**
 * Async mode's parameter server as the workers reach it through the coordinator: it answers their
 * pulls and pushes (a version and either a bfloat16 delta against the worker's mirror or the full
 * weights), holds a push whose worker runs more than the staleness bound ahead until the slowest
 * catches up, and checks at each epoch's end that a worker holds what the server's mirror of it
 * says. The server itself (net/training/parameterserver.h) keeps the weights and the optimizer.
 * Members are passed in; a held push is answered through the member's link. Runs on the thread
 * that owns it.
 */
class ParameterServerEndpoint
{
public:
    /** A parameter server for `job`'s model, seed and optimizer. Throws what reading the job's
     *  model throws. */
    explicit ParameterServerEndpoint(const JobSpec &job);
    ~ParameterServerEndpoint();
    ParameterServerEndpoint(const ParameterServerEndpoint &) = delete;
    ParameterServerEndpoint &operator=(const ParameterServerEndpoint &) = delete;

    /** What a push did. */
    struct PushOutcome
    {
        bool malformed = false;   // not applied: the worker is out of the run (already told)
        std::int64_t samples = 0; // applied: the samples its gradient was computed on
    };
    /** A ps_pull: answered now with the weights. */
    void pull(Member &m, qint64 request);
    /** A ps_push: applied and answered now with the new weights, or held (the member waits with
     *  it) until the others catch up, or refused with a stop when malformed. */
    PushOutcome push(Member &m, qint64 request, const GradientPush &push);
    /** Answers the held pushes of `members` whose worker may go on now. */
    void releaseHeld(const std::vector<Member *> &members);

    /** The member trains in the group from now on (its clock counts). */
    void join(int id);
    /** The member is out (lost, failed, done): nobody waits for its clock any more. */
    void leave(int id);
    /** Whether the member's clock holds the others back (false at the epoch's barrier). */
    void setRunning(int id, bool running);
    /** A new epoch: every clock from zero. */
    void resetClocks();

    /** The member is at the epoch's barrier (it holds nobody back); its epoch_done says what it
     *  holds, checked against the server's mirror of it (a mismatch is logged: the deltas would
     *  have put them apart, which they never should). */
    void epochDone(const Member &m, const EpochDone &done);
    /** Epoch ends checked against the mirror, and how many of them differed. */
    std::int64_t mirrorChecks() const { return m_mirrorChecks; }
    std::int64_t mirrorMismatches() const { return m_mirrorMismatches; }

    /** The run's end: the server's weights (the result's: its average, if it keeps one) and its
     *  counts in `result`. */
    void report(ClusterResult &result);
    /** The weights a run's result, its evaluation and its best epoch use, as message bytes. */
    QByteArray resultBytes();
    ParameterServer &server() { return *m_ps; }

private:
    QCborMap weightsReply(int id, bool compressed);

    std::unique_ptr<ParameterServer> m_ps;
    std::map<int, bool> m_heldCompressed; // held pushes: whether the reply is a delta
    std::int64_t m_mirrorChecks = 0, m_mirrorMismatches = 0;
};

} // namespace edgetrain::net

#pragma once

#include "net/protocol/messages/workermessages.h"
#include "net/protocol/nodeid.h"
#include "net/training/coordinator/memberlink.h"

#include <QByteArray>
#include <QCborMap>

#include <cstdint>
#include <memory>
#include <vector>

namespace edgetrain::net {

/** Chunks of a model a node sends (weights, best_weights), put back together in order. */
struct WeightChunks
{
    QByteArray bytes;
    bool whole = false; // the last chunk came

    /** Adds one message's chunk; the first chunk (index 0) starts over. */
    void add(const WeightsChunk &chunk);
};

/**
 * One node of a run as the coordinator sees it: who it is, how to reach it, where it is in the
 * run, and the one request its job waits on (a node's training thread asks one thing at a time:
 * to start, to regroup, the end of an epoch, of an evaluation, a held push). What each part of
 * the coordinator keeps about a member it keeps itself, under the member's id.
 */
struct Member
{
    enum class State { Starting, Ready, Training, Done, Failed, Lost };
    /** What the node's job waits for an answer to. */
    enum class Waits { Nothing, Start, Regroup, EpochEnd, Evaluation, Push };

    int id = 0; // stable over reconnects (the parameter server's worker id)
    NodeId node;
    std::unique_ptr<MemberLink> link; // none while lost
    bool connecting = false;
    State state = State::Starting;
    int rank = -1;
    double speed = 0.0; // images/s, from its profile and then the epochs it trained
    JobReady ready;
    QCborMap readyBody;    // its job_ready as it came: the selection and the planner read it whole
    EpochDone epoch;       // the epoch it ended last, until the epoch's figures are summed
    bool released = false; // not chosen to train: told to stop before the group formed
    /** sync and local SGD: the final weights as it sent them (every rank of the last group does;
     *  they are the same model). */
    WeightChunks weights;

    QString label() const { return node.label(); }
    bool waits(Waits what) const { return m_waits == what && m_request >= 0; }
    Waits waiting() const { return m_request >= 0 ? m_waits : Waits::Nothing; }
    /** Its job now waits on `request` for `what`. */
    void wait(Waits what, qint64 request);
    /** Answers the request it waits on with `body` if that is for `what` (true), else nothing. */
    bool answer(Waits what, const QCborMap &body);
    /** Answers whatever it waits on. */
    void answerAny(const QCborMap &body);
    /** Nothing to answer any more (the job was sent again, the node was lost). */
    void forgetRequest();

private:
    Waits m_waits = Waits::Nothing;
    qint64 m_request = -1;
};

/** The reply that ends a node's job. */
QCborMap stopReply();

/** The final weights of a sync or local SGD run (every rank of the last group sends them): the
 *  lowest rank's that came whole; none if nobody's did. */
std::vector<float> lastGroupWeights(const std::vector<std::unique_ptr<Member>> &members);

} // namespace edgetrain::net

#include "net/training/coordinator/member.h"

#include "net/protocol/messages/coordinatorreplies.h"

#include <cstring>

namespace edgetrain::net {

void WeightChunks::add(const WeightsChunk &chunk)
{
    if (chunk.index == 0)
        bytes.clear();
    bytes.append(chunk.data);
    whole = chunk.index + 1 == chunk.total;
}

void Member::wait(Waits what, qint64 request)
{
    m_waits = what;
    m_request = request;
}

bool Member::answer(Waits what, const QCborMap &body)
{
    if (!waits(what))
        return false;
    answerAny(body);
    return true;
}

void Member::answerAny(const QCborMap &body)
{
    const qint64 request = m_request;
    forgetRequest();
    if (link && request >= 0)
        link->reply(request, body);
}

void Member::forgetRequest()
{
    m_waits = Waits::Nothing;
    m_request = -1;
}

QCborMap stopReply()
{
    TrainingReply stop;
    stop.action = ReplyAction::Stop;
    return stop.toCbor();
}

std::vector<float> lastGroupWeights(const std::vector<std::unique_ptr<Member>> &members)
{
    // Every rank of the last group sent the final weights: rank 0's, or, if that node was
    // lost before they all came (a partition at the very end), the lowest rank's that did.
    const Member *from = nullptr;
    for (const auto &m : members)
        if (m->weights.whole && !m->weights.bytes.isEmpty() &&
            m->weights.bytes.size() % qsizetype(sizeof(float)) == 0 &&
            (!from || (m->rank >= 0 && (from->rank < 0 || m->rank < from->rank))))
            from = m.get();
    std::vector<float> weights;
    if (from) {
        weights.resize(std::size_t(from->weights.bytes.size()) / sizeof(float));
        std::memcpy(weights.data(), from->weights.bytes.constData(),
                    std::size_t(from->weights.bytes.size()));
    }
    return weights;
}

} // namespace edgetrain::net

#include "net/training/coordinator/member.h"

#include "net/protocol/cborfield.h"
#include "net/protocol/protocol.h"

#include <cstring>

namespace edgetrain::net {

ReadyReport ReadyReport::fromCbor(const QCborMap &body)
{
    ReadyReport r;
    r.images_per_second = body.value(QStringLiteral("images_per_second")).toDouble();
    r.train_samples = cborInteger(body.value(QStringLiteral("train_samples")));
    r.test_samples = cborInteger(body.value(QStringLiteral("test_samples")));
    const QCborMap profile = body.value(QLatin1String("profile")).toMap();
    r.max_local_batch = cborInteger(profile.value(QLatin1String("max_local_batch")), -1);
    r.timed_steps = profile.contains(QLatin1String("step_seconds"));
    r.takes_more = body.value(QStringLiteral("takes_more")).toBool();
    r.evaluates_more = body.value(QStringLiteral("evaluates_more")).toBool();
    r.body = body;
    return r;
}

EpochReport EpochReport::fromCbor(const QCborMap &body)
{
    EpochReport r;
    r.seconds = body.value(QStringLiteral("seconds")).toDouble();
    r.global = body.value(QStringLiteral("global")).toBool();
    r.loss_sum = body.value(QStringLiteral("loss_sum")).toDouble();
    r.correct = body.value(QStringLiteral("correct")).toDouble();
    r.seen = body.value(QStringLiteral("seen")).toDouble();
    r.targets = body.value(QStringLiteral("targets")).toDouble();
    r.compute_images_per_second =
        body.value(QStringLiteral("compute_images_per_second")).toDouble();
    return r;
}

void WeightChunks::add(const QCborMap &body)
{
    const qint64 index = cborInteger(body.value(QStringLiteral("index")));
    if (index == 0)
        bytes.clear();
    bytes.append(body.value(QStringLiteral("data")).toByteArray());
    whole = index + 1 == cborInteger(body.value(QStringLiteral("total")));
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
    return QCborMap{{Action::Field, Action::Stop}};
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

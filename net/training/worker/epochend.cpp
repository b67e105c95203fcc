#include "net/training/worker/epochend.h"

#include "core/error.h"
#include "core/trainer.h"
#include "net/protocol/cborfield.h"
#include "net/protocol/protocol.h"
#include "net/training/worker/workerstate.h"

#include <cmath>
#include <cstring>

namespace edgetrain::net::worker {

QCborMap EpochEnd::finish(int epoch, const EpochTally &sums, bool global,
                          const QString &heldFingerprint)
{
    // Every epoch's end reaches the training charts, however short the epoch was.
    const double wall = secondsSince(m_state.epochStart);
    m_state.postProgress();
    QCborMap done{{QStringLiteral("epoch"), epoch},
                  {QStringLiteral("loss_sum"), sums.loss_sum},
                  {QStringLiteral("correct"), sums.correct},
                  {QStringLiteral("seen"), sums.seen},
                  {QStringLiteral("targets"), sums.targets},
                  {QStringLiteral("global"), global},
                  {QStringLiteral("seconds"), wall},
                  {QStringLiteral("compute_images_per_second"), m_state.computeSpeed()}};
    if (!heldFingerprint.isEmpty())
        done.insert(QStringLiteral("held_fingerprint"), heldFingerprint);
    const QCborMap reply = m_state.link.request(Message::EpochDone, done);
    const QString action = reply.value(Action::Field).toString();
    if (action == Action::Stop || action == Action::Regroup || action == Action::More)
        return reply; // someone was lost at the barrier: regroup, or train its part, first
    if (reply.contains(QStringLiteral("weights"))) {
        const QByteArray weights = reply.value(QStringLiteral("weights")).toByteArray();
        core::FlatState &flat = *m_state.loaded.flat;
        if (std::size_t(weights.size()) != flat.averagedSize() * sizeof(float))
            throw core::FormatError("the parameter server's weights have the wrong size");
        m_state.buffer.resize(flat.averagedSize());
        std::memcpy(m_state.buffer.data(), weights.constData(), std::size_t(weights.size()));
        flat.setAveraged(m_state.buffer.data());
    }
    const QCborMap answer = evaluate(epoch, reply);
    if (answer.contains(QStringLiteral("send_weights"))) // a new best (keep-best runs)
        m_state.withAverage([&] {
            postWeights(Message::BestWeights,
                        cborInteger(answer.value(QStringLiteral("send_weights"))));
        });
    return answer;
}

QCborMap EpochEnd::evaluate(int epoch, QCborMap answer)
{
    const auto &test = m_state.loaded.test;
    do {
        const std::int64_t begin = cborInteger(answer.value(QStringLiteral("test_begin")));
        const std::int64_t end = cborInteger(answer.value(QStringLiteral("test_end")));
        core::EvalResult ev;
        if (test && begin >= 0 && end > begin && end <= test->size()) {
            m_state.setPhase(QStringLiteral("evaluating"));
            ev = m_state.withAverage([&] {
                return core::Trainer::evaluate(
                    *m_state.loaded.model, core::RangeView(*test, begin, end),
                    m_state.memory->evaluationBatch(), m_state.link.stopFlag());
            });
            m_state.memory->check();
            m_state.setPhase(QStringLiteral("training"));
        }
        answer = m_state.link.request(
            Message::EpochEval, QCborMap{{QStringLiteral("epoch"), epoch},
                                         {QStringLiteral("loss_sum"), ev.loss * double(ev.count)},
                                         {QStringLiteral("correct"),
                                          qint64(std::llround(ev.accuracy * double(ev.count)))},
                                         {QStringLiteral("count"), qint64(ev.count)}});
    } while (answer.value(Action::Field).toString() == Action::Evaluate);
    return answer;
}

void EpochEnd::postWeights(const QString &type, qint64 epoch)
{
    core::FlatState &flat = *m_state.loaded.flat;
    std::vector<float> state(flat.averagedSize());
    flat.copyAveraged(state.data());
    const QByteArray bytes(reinterpret_cast<const char *>(state.data()),
                           qsizetype(state.size() * sizeof(float)));
    constexpr qsizetype chunk = 4 << 20;
    const int total = std::max(1, int((bytes.size() + chunk - 1) / chunk));
    for (int i = 0; i < total; ++i)
        m_state.link.post(type, QCborMap{{QStringLiteral("index"), i},
                                         {QStringLiteral("total"), total},
                                         {QStringLiteral("epoch"), epoch},
                                         {QStringLiteral("data"), bytes.mid(i * chunk, chunk)}});
}

} // namespace edgetrain::net::worker

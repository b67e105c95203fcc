#include "net/training/worker/epochend.h"

#include "core/error.h"
#include "core/trainer.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"
#include "net/training/worker/workerstate.h"

#include <cmath>
#include <cstring>

namespace edgetrain::net::worker {

TrainingReply EpochEnd::finish(int epoch, const EpochTally &sums, bool global,
                               const QString &heldFingerprint)
{
    EpochDone done;
    done.epoch = epoch;
    done.loss_sum = sums.loss_sum;
    done.correct = sums.correct;
    done.seen = sums.seen;
    done.targets = sums.targets;
    done.global = global;
    done.seconds = secondsSince(m_state.epochStart);
    done.compute_images_per_second = m_state.computeSpeed();
    done.held_fingerprint = heldFingerprint;
    // Every epoch's end reaches the training charts, however short the epoch was.
    m_state.postProgress();
    const TrainingReply reply = m_state.ask(Message::EpochDone, done.toCbor());
    if (reply.action == ReplyAction::Stop || reply.action == ReplyAction::Regroup ||
        reply.action == ReplyAction::More)
        return reply;    // someone was lost at the barrier: regroup, or train its part, first
    if (reply.weights) { // async: the parameter server's, to evaluate
        core::FlatState &flat = *m_state.loaded.flat;
        if (std::size_t(reply.weights->size()) != flat.averagedSize() * sizeof(float))
            throw core::FormatError("the parameter server's weights have the wrong size");
        m_state.buffer.resize(flat.averagedSize());
        std::memcpy(m_state.buffer.data(), reply.weights->constData(),
                    std::size_t(reply.weights->size()));
        flat.setAveraged(m_state.buffer.data());
    }
    const TrainingReply answer = evaluate(epoch, reply);
    if (answer.send_weights) // a new best (keep-best runs)
        m_state.withAverage([&] { postWeights(Message::BestWeights, *answer.send_weights); });
    return answer;
}

TrainingReply EpochEnd::evaluate(int epoch, TrainingReply answer)
{
    const auto &test = m_state.loaded.test;
    do {
        const auto [begin, end] =
            answer.test_part.value_or(std::pair<std::int64_t, std::int64_t>());
        core::EvalResult ev;
        if (test && begin >= 0 && end > begin && end <= test->size()) {
            m_state.setPhase(TrainingPhase::Evaluating);
            ev = m_state.withAverage([&] {
                return core::Trainer::evaluate(
                    *m_state.loaded.model, core::RangeView(*test, begin, end),
                    m_state.memory->evaluationBatch(), m_state.link.stopFlag());
            });
            m_state.memory->check();
            m_state.setPhase(TrainingPhase::Training);
        }
        EpochEval evaluated;
        evaluated.epoch = epoch;
        evaluated.loss_sum = ev.loss * double(ev.count);
        evaluated.correct = std::llround(ev.accuracy * double(ev.count));
        evaluated.count = ev.count;
        answer = m_state.ask(Message::EpochEval, evaluated.toCbor());
    } while (answer.action == ReplyAction::Evaluate);
    return answer;
}

void EpochEnd::postWeights(const QString &type, std::int64_t epoch)
{
    core::FlatState &flat = *m_state.loaded.flat;
    std::vector<float> state(flat.averagedSize());
    flat.copyAveraged(state.data());
    const QByteArray bytes(reinterpret_cast<const char *>(state.data()),
                           qsizetype(state.size() * sizeof(float)));
    constexpr qsizetype chunk = WeightsChunk::kMaxBytes;
    WeightsChunk part;
    part.total = std::max(1, int((bytes.size() + chunk - 1) / chunk));
    part.epoch = epoch;
    for (part.index = 0; part.index < part.total; ++part.index) {
        part.data = bytes.mid(part.index * chunk, chunk);
        m_state.link.post(type, part.toCbor());
    }
}

} // namespace edgetrain::net::worker

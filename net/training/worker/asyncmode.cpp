#include "net/training/worker/asyncmode.h"

#include "core/error.h"
#include "net/protocol/protocol.h"
#include "net/training/worker/epochend.h"
#include "net/training/worker/groupsession.h"
#include "net/training/worker/workerstate.h"

#include <cmath>
#include <cstring>
#include <numeric>

namespace edgetrain::net::worker {

namespace {

QByteArray floatBytes(const float *data, std::size_t count)
{
    return QByteArray(reinterpret_cast<const char *>(data), qsizetype(count * sizeof(float)));
}

/** Copies a byte array of floats into `out`; false if the size is not what is expected. */
bool readFloats(const QByteArray &bytes, float *out, std::size_t count)
{
    if (std::size_t(bytes.size()) != count * sizeof(float))
        return false;
    std::memcpy(out, bytes.constData(), std::size_t(bytes.size()));
    return true;
}

} // namespace

AsyncMode::AsyncMode(WorkerState &state, GroupSession &session, EpochEnd &epochEnd)
    : m_state(state), m_session(session), m_epochEnd(epochEnd),
      m_gradientFloats(state.loaded.flat->gradientSize()),
      m_bufferFloats(state.loaded.flat->bufferSize()),
      m_averagedFloats(state.loaded.flat->averagedSize()),
      m_compressed(state.job.exchange == QLatin1String("bf16")), m_held(m_averagedFloats),
      m_push(m_gradientFloats + m_bufferFloats)
{}

bool AsyncMode::run(const TrainingReply &ready)
{
    if (ready.action == ReplyAction::Stop)
        return true;
    m_session.adopt(ready);
    m_epoch = ready.epoch.value_or(1);
    m_state.setPhase(TrainingPhase::Training);
    while (m_epoch <= m_state.job.epochs) {
        const Outcome outcome = trainEpoch();
        if (outcome == Outcome::Cancelled)
            return true;
        if (outcome == Outcome::Finished)
            return false;
        ++m_epoch;
    }
    return false;
}

AsyncMode::Outcome AsyncMode::trainEpoch()
{
    WorkerState &s = m_state;
    s.seekEpoch(m_epoch);
    s.startEpochCounters();
    s.step = std::int64_t(m_epoch - 1) * s.batches;
    const GroupSpec &group = m_session.group();
    const auto parts = splitByShares(s.loaded.train->size(), group.shares);
    const std::int64_t offset =
        std::accumulate(parts.begin(), parts.begin() + group.rank, std::int64_t(0));
    const std::int64_t mine = parts[std::size_t(group.rank)];
    m_localBatch = std::max<std::int64_t>(1, std::llround(double(s.job.batch) * m_session.share()));
    if (!adopt(s.link.request(Message::PsPull, {})))
        return Outcome::Cancelled;
    m_gradients.reset(); // what the last epoch's pushes left belongs to older weights
    if (!trainRange(s.order->indices(0) + offset, mine, false))
        return Outcome::Cancelled;
    const std::optional<TrainingReply> reply = endEpoch();
    if (!reply || reply->action == ReplyAction::Stop)
        return Outcome::Cancelled;
    if (reply->action == ReplyAction::Finish)
        return Outcome::Finished;
    m_session.adoptNext(*reply);
    return Outcome::Continue;
}

std::optional<TrainingReply> AsyncMode::endEpoch()
{
    WorkerState &s = m_state;
    // What this node holds goes with its sums, for the server to check against its mirror.
    const auto end = [&] {
        s.step = std::int64_t(m_epoch) * s.batches;
        return m_epochEnd.finish(m_epoch, s.pending, false,
                                 CompressedExchange::fingerprint(m_held.data(), m_held.size()));
    };
    TrainingReply reply = end();
    // A node lost mid-epoch left samples of this epoch untrained: this node trains the ranges
    // it is given, then ends the epoch again (its counts include them).
    while (reply.action == ReplyAction::More) {
        for (const auto &[first, count] : reply.ranges) {
            const std::int64_t samples = s.loaded.train->size();
            if (first < 0 || count <= 0 || first > samples - count)
                throw core::FormatError("the coordinator asked for samples " +
                                        std::to_string(first) + "+" + std::to_string(count) +
                                        " of " + std::to_string(samples));
            if (!trainRange(s.order->indices(0) + first, count, true))
                return std::nullopt;
        }
        reply = end();
    }
    return reply;
}

bool AsyncMode::adopt(const QCborMap &answer)
{
    QString error;
    const std::optional<WeightsReply> reply = WeightsReply::fromCbor(answer, &error);
    if (!reply)
        throw core::FormatError("the parameter server's answer does not read: " +
                                error.toStdString());
    if (reply->stop)
        return false;
    const bool ok = reply->delta ? CompressedExchange::addDecoded(reply->weights, m_held.data(),
                                                                  m_averagedFloats)
                                 : readFloats(reply->weights, m_held.data(), m_averagedFloats);
    if (!ok)
        throw core::FormatError("the parameter server's weights have the wrong size");
    m_state.loaded.flat->setAveraged(m_held.data());
    m_version = reply->version;
    return true;
}

bool AsyncMode::trainRange(const std::int64_t *from, std::int64_t n, bool makeup)
{
    WorkerState &s = m_state;
    core::FlatState &flat = *s.loaded.flat;
    for (std::int64_t first = 0; first < n; first += m_localBatch) {
        const std::int64_t count = std::min(m_localBatch, n - first);
        const core::StepResult r = s.compute(from + first, count);
        flat.copyGradients(m_push.data());
        flat.copyBuffers(m_push.data() + m_gradientFloats);
        s.pending += EpochTally::of(r, count);
        // The step this batch stands for, in units of global batches (for the schedule).
        s.step =
            std::int64_t(m_epoch - 1) * s.batches +
            (makeup ? s.batches - 1
                    : std::min(s.batches - 1, first * s.batches / std::max<std::int64_t>(n, 1)));
        if (!push(pushOf(count)))
            return false;
        s.report(r.loss, double(r.correct) / double(std::max<std::int64_t>(r.count, 1)));
    }
    return landInFlight();
}

GradientPush AsyncMode::pushOf(std::int64_t count)
{
    // The gradients carry the version they were computed on (pipelined: one staler).
    GradientPush p;
    p.version = m_version;
    p.lr = m_state.rate();
    p.count = count;
    p.compressed = m_compressed;
    if (m_compressed) {
        p.gradient_bf16 = m_gradients.encodeWithFeedback(m_push.data(), m_gradientFloats);
        p.buffers = floatBytes(m_push.data() + m_gradientFloats, m_bufferFloats);
    } else {
        p.gradient = floatBytes(m_push.data(), m_push.size());
    }
    return p;
}

bool AsyncMode::push(const GradientPush &gradients)
{
    if (m_state.job.pipelined) {
        // The previous push's reply is adopted before the next push goes.
        if (!landInFlight())
            return false;
        m_inFlight = m_state.link.send(Message::PsPush, gradients.toCbor());
        return true;
    }
    return adopt(m_state.link.request(Message::PsPush, gradients.toCbor()));
}

bool AsyncMode::landInFlight()
{
    if (m_inFlight < 0)
        return true;
    const QCborMap answer = m_state.link.wait(m_inFlight, JobLink::kForever, Message::PsPush);
    m_inFlight = -1;
    return adopt(answer);
}

} // namespace edgetrain::net::worker

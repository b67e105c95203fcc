#include "net/training/worker/asyncmode.h"

#include "core/error.h"
#include "net/protocol/cborfield.h"
#include "net/protocol/protocol.h"
#include "net/training/worker/epochend.h"
#include "net/training/worker/groupsession.h"
#include "net/training/worker/workerstate.h"

#include <QCborArray>

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

bool says(const QCborMap &reply, const QString &action)
{
    return reply.value(Action::Field).toString() == action;
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

bool AsyncMode::run(const QCborMap &ready)
{
    if (says(ready, Action::Stop))
        return true;
    m_session.adopt(ready);
    m_epoch = int(cborInteger(ready.value(QStringLiteral("epoch")), 1));
    m_state.setPhase(QStringLiteral("training"));
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
    const QCborMap pulled = s.link.request(Message::PsPull, {});
    if (says(pulled, Action::Stop))
        return Outcome::Cancelled;
    m_version = adopt(pulled);
    m_gradients.reset(); // what the last epoch's pushes left belongs to older weights
    if (!trainRange(s.order->indices(0) + offset, mine, false))
        return Outcome::Cancelled;
    const std::optional<QCborMap> ended = endEpoch();
    if (!ended)
        return Outcome::Cancelled;
    const QCborMap &reply = *ended;
    if (says(reply, Action::Stop))
        return Outcome::Cancelled;
    if (says(reply, Action::Finish))
        return Outcome::Finished;
    m_session.adoptNext(reply);
    return Outcome::Continue;
}

std::optional<QCborMap> AsyncMode::endEpoch()
{
    WorkerState &s = m_state;
    // What this node holds goes with its sums, for the server to check against its mirror.
    const auto end = [&] {
        s.step = std::int64_t(m_epoch) * s.batches;
        return m_epochEnd.finish(m_epoch, s.pending, false,
                                 CompressedExchange::fingerprint(m_held.data(), m_held.size()));
    };
    QCborMap reply = end();
    // A node lost mid-epoch left samples of this epoch untrained: this node trains the ranges
    // it is given, then ends the epoch again (its counts include them).
    while (says(reply, Action::More)) {
        for (const QCborValue &range : reply.value(QStringLiteral("ranges")).toArray()) {
            const std::int64_t first = cborInteger(range.toArray().at(0), -1);
            const std::int64_t count = cborInteger(range.toArray().at(1), -1);
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

qint64 AsyncMode::adopt(const QCborMap &reply)
{
    const bool isDelta = reply.contains(QStringLiteral("delta_bf16"));
    const bool ok = isDelta ? CompressedExchange::addDecoded(
                                  reply.value(QStringLiteral("delta_bf16")).toByteArray(),
                                  m_held.data(), m_averagedFloats)
                            : readFloats(reply.value(QStringLiteral("weights")).toByteArray(),
                                         m_held.data(), m_averagedFloats);
    if (!ok)
        throw core::FormatError("the parameter server's weights have the wrong size");
    m_state.loaded.flat->setAveraged(m_held.data());
    return cborInteger(reply.value(QStringLiteral("version")));
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
        if (!push(pushBody(count)))
            return false;
        s.report(r.loss, double(r.correct) / double(std::max<std::int64_t>(r.count, 1)));
    }
    return landInFlight();
}

QCborMap AsyncMode::pushBody(std::int64_t count)
{
    // The gradients carry the version they were computed on (pipelined: one staler).
    QCborMap body{{QStringLiteral("version"), m_version},
                  {QStringLiteral("lr"), m_state.rate()},
                  {QStringLiteral("count"), qint64(count)}};
    if (m_compressed) {
        body.insert(QStringLiteral("gradient_bf16"),
                    m_gradients.encodeWithFeedback(m_push.data(), m_gradientFloats));
        body.insert(QStringLiteral("buffers"),
                    floatBytes(m_push.data() + m_gradientFloats, m_bufferFloats));
    } else {
        body.insert(QStringLiteral("gradient"), floatBytes(m_push.data(), m_push.size()));
    }
    return body;
}

bool AsyncMode::push(const QCborMap &body)
{
    if (m_state.job.pipelined) {
        // The previous push's reply is adopted before the next push goes.
        if (!landInFlight())
            return false;
        m_inFlight = m_state.link.send(Message::PsPush, body);
        return true;
    }
    const QCborMap reply = m_state.link.request(Message::PsPush, body);
    if (says(reply, Action::Stop))
        return false;
    m_version = adopt(reply);
    return true;
}

bool AsyncMode::landInFlight()
{
    if (m_inFlight < 0)
        return true;
    const QCborMap answer = m_state.link.wait(m_inFlight, JobLink::kForever, Message::PsPush);
    m_inFlight = -1;
    if (says(answer, Action::Stop))
        return false;
    m_version = adopt(answer);
    return true;
}

} // namespace edgetrain::net::worker

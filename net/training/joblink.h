#pragma once

#include "core/error.h"

#include <QCborMap>
#include <QString>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>

namespace edgetrain::net {

/** The coordinator is gone (connection closed) or did not answer in time. */
class LinkError : public core::Error
{
public:
    using core::Error::Error;
};

/**
 * The thread-safe line between a node's training worker (its own thread, blocking calls) and the
 * coordinator's session (the event loop's thread). The worker makes requests and waits for the
 * matching reply; the session delivers replies as frames arrive. Requests carry an id and
 * replies name it (RequestId), so any number can be outstanding.
 */
class JobLink
{
public:
    /** Sends a frame to the coordinator; called from the worker thread, must queue the send to
     *  the session's thread (e.g. QMetaObject::invokeMethod with a queued connection). */
    using Sender = std::function<void(const QString &type, const QCborMap &body)>;
    static constexpr std::chrono::milliseconds kForever = std::chrono::milliseconds::max();

    explicit JobLink(Sender sender) : m_sender(std::move(sender)) {}

    // -- worker thread
    /** Sends and blocks for the reply; throws LinkError on timeout or when the link closes. */
    QCborMap request(const QString &type, QCborMap body,
                     std::chrono::milliseconds timeout = kForever);
    /** request() in two halves, so the worker can compute while a reply travels: send() returns
     *  the request's id, wait() blocks for its reply (once per id; `type` names it in errors). */
    qint64 send(const QString &type, QCborMap body);
    QCborMap wait(qint64 id, std::chrono::milliseconds timeout = kForever,
                  const QString &type = QStringLiteral("request"));
    void post(const QString &type, const QCborMap &body);
    /** The coordinator asked the job to stop (or the session closed). */
    bool stopRequested() const { return m_stop.load(std::memory_order_relaxed); }
    /** The session closed (close()): the job is abandoned, not stopped — it must leave its
     *  group rather than vote the others into stopping (a node thawed after a freeze, whose
     *  coordinator has a new session with it, must not end the survivors' run). */
    bool closed() const { return m_closedFlag.load(std::memory_order_acquire); }
    /** Throws LinkError with the reason the link closed, if it did. */
    void throwIfClosed();
    const std::atomic<bool> *stopFlag() const { return &m_stop; }

    // -- session thread
    /** A "reply" frame's body; false if nobody waits for it (late or bogus). */
    bool deliver(const QCborMap &reply);
    void requestStop() { m_stop = true; }
    /** Wakes every waiting request with LinkError(reason); later requests fail at once. */
    void close(const QString &reason);

private:
    Sender m_sender;
    std::mutex m_mutex;
    std::condition_variable m_cv;
    std::map<qint64, std::optional<QCborMap>> m_waiting;
    qint64 m_nextId = 1;
    QString m_closed;
    std::atomic<bool> m_stop{false};
    std::atomic<bool> m_closedFlag{false};
};

} // namespace edgetrain::net

#include "net/training/joblink.h"

#include "net/protocol/messages/requestid.h"

namespace edgetrain::net {

QCborMap JobLink::request(const QString &type, QCborMap body, std::chrono::milliseconds timeout)
{
    return wait(send(type, std::move(body)), timeout, type);
}

qint64 JobLink::send(const QString &type, QCborMap body)
{
    std::unique_lock lock(m_mutex);
    if (!m_closed.isEmpty())
        throw LinkError(m_closed.toStdString());
    const qint64 id = m_nextId++;
    m_waiting[id];
    RequestId::set(body, id);
    lock.unlock();
    m_sender(type, body);
    return id;
}

QCborMap JobLink::wait(qint64 id, std::chrono::milliseconds timeout, const QString &type)
{
    std::unique_lock lock(m_mutex);
    if (m_waiting.find(id) == m_waiting.end())
        throw LinkError("no request " + std::to_string(id) + " is waiting for its reply");
    auto answered = [&] { return m_waiting[id].has_value() || !m_closed.isEmpty(); };
    if (timeout == kForever)
        m_cv.wait(lock, answered);
    else if (!m_cv.wait_for(lock, timeout, answered)) {
        m_waiting.erase(id);
        throw LinkError("the coordinator did not answer '" + type.toStdString() + "' within " +
                        std::to_string(timeout.count()) + " ms");
    }
    std::optional<QCborMap> reply = std::move(m_waiting[id]);
    m_waiting.erase(id);
    if (!reply)
        throw LinkError(m_closed.toStdString());
    return *reply;
}

void JobLink::post(const QString &type, const QCborMap &body)
{
    {
        std::lock_guard lock(m_mutex);
        if (!m_closed.isEmpty())
            return;
    }
    m_sender(type, body);
}

bool JobLink::deliver(const QCborMap &reply)
{
    const qint64 id = RequestId::replyTo(reply);
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_waiting.find(id);
        if (it == m_waiting.end() || it->second)
            return false;
        it->second = reply;
    }
    m_cv.notify_all();
    return true;
}

void JobLink::close(const QString &reason)
{
    {
        std::lock_guard lock(m_mutex);
        if (m_closed.isEmpty())
            m_closed =
                reason.isEmpty() ? QStringLiteral("the link to the coordinator closed") : reason;
    }
    m_closedFlag = true;
    m_stop = true;
    m_cv.notify_all();
}

void JobLink::throwIfClosed()
{
    if (!closed())
        return;
    std::lock_guard lock(m_mutex);
    throw LinkError(m_closed.toStdString());
}

} // namespace edgetrain::net

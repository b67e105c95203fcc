#include "net/training/remotestore.h"

#include "net/protocol/protocol.h"

#include <QCborArray>
#include <gloo/common/error.h>

namespace edgetrain::net {

QCborMap RemoteStore::call(const QString &type, const QCborMap &body,
                           std::chrono::milliseconds timeout)
{
    try {
        // The coordinator answers a get or wait when the keys exist, or with an error when its
        // own deadline passes; ours is a little later so its message is the one that arrives.
        QCborMap withDeadline = body;
        withDeadline.insert(QStringLiteral("timeout_ms"), qint64(timeout.count()));
        const QCborMap reply =
            m_link.request(type, withDeadline, timeout + std::chrono::seconds(2));
        const QString error = reply.value(QStringLiteral("error")).toString();
        if (!error.isEmpty())
            throw gloo::IoException("rendezvous: " + error.toStdString());
        return reply;
    } catch (const LinkError &e) {
        throw gloo::IoException(std::string("rendezvous: ") + e.what());
    }
}

void RemoteStore::set(const std::string &key, const std::vector<char> &data)
{
    call(Message::StoreSet,
         QCborMap{{QStringLiteral("key"), QString::fromStdString(key)},
                  {QStringLiteral("value"), QByteArray(data.data(), qsizetype(data.size()))}},
         m_timeout);
}

std::vector<char> RemoteStore::get(const std::string &key)
{
    const QCborMap reply =
        call(Message::StoreGet, QCborMap{{QStringLiteral("key"), QString::fromStdString(key)}},
             m_timeout);
    const QByteArray value = reply.value(QStringLiteral("value")).toByteArray();
    return std::vector<char>(value.begin(), value.end());
}

void RemoteStore::wait(const std::vector<std::string> &keys,
                       const std::chrono::milliseconds &timeout)
{
    QCborArray list;
    for (const auto &k : keys)
        list.append(QString::fromStdString(k));
    call(Message::StoreWait, QCborMap{{QStringLiteral("keys"), list}}, timeout);
}

} // namespace edgetrain::net

#include "net/training/remotestore.h"

#include <gloo/common/error.h>

namespace edgetrain::net {

StoreReply RemoteStore::call(StoreRequest request, std::chrono::milliseconds timeout)
{
    try {
        // The coordinator answers a get or wait when the keys exist, or with an error when its
        // own deadline passes; ours is a little later so its message is the one that arrives.
        request.timeout_ms = qint64(timeout.count());
        const StoreReply reply = StoreReply::fromCbor(m_link.request(
            request.messageType(), request.toCbor(), timeout + std::chrono::seconds(2)));
        if (!reply.error.isEmpty())
            throw gloo::IoException("rendezvous: " + reply.error.toStdString());
        return reply;
    } catch (const LinkError &e) {
        throw gloo::IoException(std::string("rendezvous: ") + e.what());
    }
}

void RemoteStore::set(const std::string &key, const std::vector<char> &data)
{
    StoreRequest r;
    r.kind = StoreRequest::Kind::Set;
    r.keys = QStringList{QString::fromStdString(key)};
    r.value = QByteArray(data.data(), qsizetype(data.size()));
    call(r, m_timeout);
}

std::vector<char> RemoteStore::get(const std::string &key)
{
    StoreRequest r;
    r.kind = StoreRequest::Kind::Get;
    r.keys = QStringList{QString::fromStdString(key)};
    const QByteArray value = call(r, m_timeout).value.value_or(QByteArray());
    return std::vector<char>(value.begin(), value.end());
}

void RemoteStore::wait(const std::vector<std::string> &keys,
                       const std::chrono::milliseconds &timeout)
{
    StoreRequest r;
    r.kind = StoreRequest::Kind::Wait;
    for (const auto &k : keys)
        r.keys << QString::fromStdString(k);
    call(r, timeout);
}

} // namespace edgetrain::net

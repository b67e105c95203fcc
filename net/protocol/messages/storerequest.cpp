#include "net/protocol/messages/storerequest.h"

#include "net/protocol/cborfield.h"
#include "net/protocol/messages/requestid.h"
#include "net/protocol/protocol.h"

#include <QCborArray>

#include <algorithm>

namespace edgetrain::net {

namespace {

/** A key: text, not empty, at most kMaxKeyChars; false and `error` otherwise. */
bool readKey(const QCborValue &v, QString *key, QString *error)
{
    if (!v.isString()) {
        *error = QStringLiteral("store request: a key is not text");
        return false;
    }
    *key = v.toString();
    if (key->isEmpty() || key->size() > StoreRequest::kMaxKeyChars) {
        *error = QStringLiteral("store request: a key of %1 characters (1 to %2)")
                     .arg(key->size())
                     .arg(StoreRequest::kMaxKeyChars);
        return false;
    }
    return true;
}

} // namespace

std::optional<StoreRequest> StoreRequest::fromCbor(const QString &type, const QCborMap &body,
                                                   QString *error, qint64 *requestId)
{
    StoreRequest r;
    r.request = RequestId::of(body);
    if (requestId)
        *requestId = r.request;
    if (type == Message::StoreSet)
        r.kind = Kind::Set;
    else if (type == Message::StoreGet)
        r.kind = Kind::Get;
    else if (type == Message::StoreWait)
        r.kind = Kind::Wait;
    else {
        *error = QStringLiteral("store request: unknown type '%1'").arg(type.left(64));
        return std::nullopt;
    }
    if (r.kind == Kind::Wait) {
        const QCborValue keys = body.value(QStringLiteral("keys"));
        if (!keys.isArray()) {
            *error = QStringLiteral("store request: 'keys' is not a list");
            return std::nullopt;
        }
        const QCborArray list = keys.toArray();
        if (list.size() > kMaxKeys) {
            *error = QStringLiteral("store request: %1 keys (at most %2)")
                         .arg(list.size())
                         .arg(kMaxKeys);
            return std::nullopt;
        }
        for (const QCborValue &k : list) {
            QString key;
            if (!readKey(k, &key, error))
                return std::nullopt;
            r.keys << key;
        }
    } else {
        QString key;
        if (!readKey(body.value(QStringLiteral("key")), &key, error))
            return std::nullopt;
        r.keys << key;
    }
    if (r.kind == Kind::Set) {
        const QCborValue value = body.value(QStringLiteral("value"));
        if (!value.isByteArray()) {
            *error = QStringLiteral("store request: 'value' is not bytes");
            return std::nullopt;
        }
        r.value = value.toByteArray();
        if (r.value.size() > kMaxValueBytes) {
            *error = QStringLiteral("store request: a value of %1 bytes (at most %2)")
                         .arg(r.value.size())
                         .arg(kMaxValueBytes);
            return std::nullopt;
        }
    } else {
        r.timeout_ms = std::clamp<qint64>(
            cborInteger(body.value(QStringLiteral("timeout_ms")), 10000), 100, 600000);
    }
    return r;
}

QLatin1String StoreRequest::messageType() const
{
    switch (kind) {
    case Kind::Set:
        return Message::StoreSet;
    case Kind::Get:
        return Message::StoreGet;
    case Kind::Wait:
        return Message::StoreWait;
    }
    return Message::StoreGet;
}

QCborMap StoreRequest::toCbor() const
{
    QCborMap m;
    if (kind == Kind::Wait)
        m.insert(QStringLiteral("keys"), QCborArray::fromStringList(keys));
    else
        m.insert(QStringLiteral("key"), keys.value(0));
    if (kind == Kind::Set)
        m.insert(QStringLiteral("value"), value);
    m.insert(QStringLiteral("timeout_ms"), timeout_ms);
    return m;
}

QCborMap StoreReply::toCbor() const
{
    QCborMap m;
    if (!error.isEmpty())
        m.insert(QStringLiteral("error"), error);
    if (value)
        m.insert(QStringLiteral("value"), *value);
    return m;
}

StoreReply StoreReply::fromCbor(const QCborMap &map)
{
    StoreReply r;
    r.error = map.value(QStringLiteral("error")).toString();
    if (map.contains(QStringLiteral("value")))
        r.value = map.value(QStringLiteral("value")).toByteArray();
    return r;
}

} // namespace edgetrain::net

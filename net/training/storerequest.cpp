#include "net/training/storerequest.h"

#include "net/protocol/cborfield.h"
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
    r.request = cborInteger(body.value(QStringLiteral("request")), -1);
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

} // namespace edgetrain::net

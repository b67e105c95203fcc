#include "net/protocol/messages/requestid.h"

#include "net/protocol/cborfield.h"

namespace edgetrain::net {

void RequestId::set(QCborMap &body, qint64 id)
{
    body.insert(QStringLiteral("request"), id);
}

qint64 RequestId::of(const QCborMap &body)
{
    return cborInteger(body.value(QStringLiteral("request")), -1);
}

void RequestId::setReplyTo(QCborMap &reply, qint64 id)
{
    reply.insert(QStringLiteral("reply_to"), id);
}

qint64 RequestId::replyTo(const QCborMap &reply)
{
    return cborInteger(reply.value(QStringLiteral("reply_to")), -1);
}

} // namespace edgetrain::net

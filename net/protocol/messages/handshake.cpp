#include "net/protocol/messages/handshake.h"

#include "net/protocol/cborfield.h"

namespace edgetrain::net {

QCborMap Hello::toCbor() const
{
    return QCborMap{{QStringLiteral("nonce"), nonce}, {QStringLiteral("protocol"), protocol}};
}

Hello Hello::fromCbor(const QCborMap &map)
{
    return {map.value(QStringLiteral("nonce")).toByteArray(),
            int(cborInteger(map.value(QStringLiteral("protocol"))))};
}

QCborMap Challenge::toCbor() const
{
    return QCborMap{{QStringLiteral("nonce"), nonce}, {QStringLiteral("proof"), proof}};
}

Challenge Challenge::fromCbor(const QCborMap &map)
{
    return {map.value(QStringLiteral("nonce")).toByteArray(),
            map.value(QStringLiteral("proof")).toByteArray()};
}

QCborMap Auth::toCbor() const
{
    return QCborMap{{QStringLiteral("proof"), proof}};
}

Auth Auth::fromCbor(const QCborMap &map)
{
    return {map.value(QStringLiteral("proof")).toByteArray()};
}

QCborMap Refused::toCbor() const
{
    return QCborMap{{QStringLiteral("reason"), reason}};
}

Refused Refused::fromCbor(const QCborMap &map)
{
    return {map.value(QStringLiteral("reason")).toString()};
}

QCborMap ProbeDatagram::toCbor(int padBytes) const
{
    return QCborMap{{QStringLiteral("kind"), QStringLiteral("edgetrain-probe")},
                    {QStringLiteral("protocol"), protocol},
                    {QStringLiteral("pad"), QByteArray(padBytes, '\0')}};
}

bool ProbeDatagram::isProbe(const QCborMap &map)
{
    return map.value(QStringLiteral("kind")).toString() == QLatin1String("edgetrain-probe");
}

} // namespace edgetrain::net

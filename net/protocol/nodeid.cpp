#include "net/protocol/nodeid.h"

namespace edgetrain::net {

QString hostPort(const QString &host, quint16 port)
{
    const bool v6 = host.contains(QLatin1Char(':')) && !host.startsWith(QLatin1Char('['));
    return (v6 ? QLatin1Char('[') + host + QLatin1Char(']') : host) + QLatin1Char(':') +
           QString::number(port);
}

QString NodeId::address() const
{
    return hostPort(host, port);
}

QString NodeId::label() const
{
    if (isNone())
        return QString();
    return QStringLiteral("%1 (%2)").arg(name, address());
}

} // namespace edgetrain::net

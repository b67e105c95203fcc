#pragma once

#include <QHostAddress>
#include <QString>
#include <QtGlobal>

namespace edgetrain::net {

/** Where nodes listen for discovery by default: the multicast group and its UDP port (the
 *  node's beacons, the app's and the CLI's probes). The one place these are written. */
inline constexpr quint16 kDiscoveryPort = 45454;
inline QHostAddress discoveryGroup()
{
    return QHostAddress(QStringLiteral("239.255.77.77"));
}

} // namespace edgetrain::net

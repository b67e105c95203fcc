#pragma once

#include <QHostAddress>
#include <QString>
#include <QtGlobal>

namespace edgetrain::net {

/** Where nodes listen for discovery by default: the multicast group and its UDP port (the
 *  node's beacons, the app's and the CLI's probes). The one place these are written. */
inline constexpr quint16 kDiscoveryPort = 45454;
/** A probe is padded to at least this many bytes, and a node answers an address it has no
 *  session with only when its answer is no larger than the probe: a spoofed probe cannot make
 *  a node send more than it received (QUIC pads its first packets for the same reason). */
inline constexpr int kProbeBytes = 1200;
inline QHostAddress discoveryGroup()
{
    return QHostAddress(QStringLiteral("239.255.77.77"));
}

} // namespace edgetrain::net

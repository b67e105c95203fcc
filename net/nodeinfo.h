#pragma once

#include <QCborMap>
#include <QHostAddress>
#include <QString>

#include <cstdint>

namespace edgetrain::net {

/** What a node says about itself in beacons, probe answers and the handshake. */
struct NodeInfo
{
    QString id; // stable per process start (random)
    QString name;
    QString version;
    int protocol = 0;
    quint16 control_port = 0;
    int cores = 0;
    std::int64_t ram_bytes = 0;
    QString arch;
    QString cpu_model;
    double load = 0.0;
    /** The device profile it runs as (an edge-lab node or one started with --device-profile;
     *  the facts above are then the profile's), empty otherwise. */
    QString device_profile;
    /** The fingerprint of the cluster key it holds (keyFingerprint in keyfile.h), so that a user
     *  can see which nodes share the app's key before pairing; empty from nodes older than it. */
    QString key_fingerprint;
    QHostAddress address; // filled in by whoever heard it

    QCborMap toCbor() const;
    /** Nothing if the map lacks the required fields (foreign or garbage datagrams). */
    static std::optional<NodeInfo> fromCbor(const QCborMap &map);
};

} // namespace edgetrain::net

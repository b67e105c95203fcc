#pragma once

#include <QCborMap>
#include <QHostAddress>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>

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
    /** The shipment encodings beyond float32 it decodes ("palette8"); empty for nodes from
     *  before them, which the coordinator then sends float32. */
    QStringList shipment_encodings;
    QHostAddress address; // filled in by whoever heard it

    /** What beacons and probe answers carry (kept small: an unpaired prober gets no more bytes
     *  than it sent). */
    QCborMap toCbor() const;
    /** toCbor() and what the node can do (shipment_encodings): the handshake's welcome. */
    QCborMap withCapabilities() const;
    /** Nothing if the map lacks the required fields (foreign or garbage datagrams). */
    static std::optional<NodeInfo> fromCbor(const QCborMap &map);
};

} // namespace edgetrain::net

#include "net/protocol/messages/nodeinfo.h"

#include "net/protocol/cborfield.h"

#include <QCborArray>

#include <optional>

namespace edgetrain::net {

QCborMap NodeInfo::withCapabilities() const
{
    QCborMap m = toCbor();
    if (!shipment_encodings.isEmpty())
        m.insert(QStringLiteral("shipment_encodings"),
                 QCborArray::fromStringList(shipment_encodings));
    return m;
}

QCborMap NodeInfo::toCbor() const
{
    QCborMap m;
    m.insert(QStringLiteral("kind"), QStringLiteral("edgetrain-node"));
    m.insert(QStringLiteral("id"), id);
    m.insert(QStringLiteral("name"), name);
    m.insert(QStringLiteral("version"), version);
    m.insert(QStringLiteral("protocol"), protocol);
    m.insert(QStringLiteral("control_port"), control_port);
    m.insert(QStringLiteral("cores"), cores);
    m.insert(QStringLiteral("ram_bytes"), qint64(ram_bytes));
    m.insert(QStringLiteral("arch"), arch);
    m.insert(QStringLiteral("cpu_model"), cpu_model);
    m.insert(QStringLiteral("load"), load);
    if (!device_profile.isEmpty())
        m.insert(QStringLiteral("device_profile"), device_profile);
    if (!key_fingerprint.isEmpty())
        m.insert(QStringLiteral("key_fingerprint"), key_fingerprint);
    return m;
}

std::optional<NodeInfo> NodeInfo::fromCbor(const QCborMap &m)
{
    if (m.value(QStringLiteral("kind")).toString() != QLatin1String("edgetrain-node") ||
        !m.value(QStringLiteral("id")).isString() ||
        !m.value(QStringLiteral("control_port")).isInteger())
        return std::nullopt;
    const qint64 port = cborInteger(m.value(QStringLiteral("control_port")));
    if (port <= 0 || port > 65535)
        return std::nullopt;
    NodeInfo n;
    n.id = m.value(QStringLiteral("id")).toString().left(64);
    n.name = m.value(QStringLiteral("name")).toString().left(128);
    n.version = m.value(QStringLiteral("version")).toString().left(32);
    n.protocol = int(cborInteger(m.value(QStringLiteral("protocol"))));
    n.control_port = quint16(port);
    n.cores = int(cborInteger(m.value(QStringLiteral("cores"))));
    n.ram_bytes = cborInteger(m.value(QStringLiteral("ram_bytes")));
    n.arch = m.value(QStringLiteral("arch")).toString().left(32);
    n.cpu_model = m.value(QStringLiteral("cpu_model")).toString().left(128);
    n.load = m.value(QStringLiteral("load")).toDouble();
    n.device_profile = m.value(QStringLiteral("device_profile")).toString().left(64);
    n.key_fingerprint = m.value(QStringLiteral("key_fingerprint")).toString().left(64);
    // Only the handshake's welcome carries it (withCapabilities): probe answers stay small.
    for (const QCborValue &e : m.value(QStringLiteral("shipment_encodings")).toArray())
        if (e.isString() && n.shipment_encodings.size() < 8)
            n.shipment_encodings.append(e.toString().left(32));
    return n;
}

} // namespace edgetrain::net

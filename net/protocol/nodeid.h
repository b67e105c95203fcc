#pragma once

#include <QMetaType>
#include <QString>
#include <QtGlobal>

namespace edgetrain::net {

/** Who a node is in a run: its name and where its control port is. Passed as a value from the
 *  coordinator to whoever shows or records it, never packed into a string and parsed back. */
struct NodeId
{
    QString name;
    QString host;
    quint16 port = 0;

    /** host:port, an IPv6 host in brackets ("[fe80::1]:47700"). */
    QString address() const;
    /** "name (address)" for logs and messages; "" for no node (the group's own events). */
    QString label() const;
    bool isNone() const { return name.isEmpty() && host.isEmpty(); }
    friend bool operator==(const NodeId &, const NodeId &) = default;
};

/** host:port with an IPv6 host in brackets. */
QString hostPort(const QString &host, quint16 port);

} // namespace edgetrain::net

Q_DECLARE_METATYPE(edgetrain::net::NodeId)

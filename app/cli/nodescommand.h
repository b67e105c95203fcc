#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli nodes`: the nodes heard on the LAN (multicast probe) or at given addresses. */
class NodesCommand
{
public:
    static int run(const QStringList &arguments);
};

/** `edgetrain-cli monitor`: live metrics of nodes, after proving the cluster key. */
class MonitorCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app

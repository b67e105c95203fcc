#pragma once

#include "net/lab/edgelab.h"

#include <QStringList>

namespace edgetrain::app {

/**
 * `edgetrain-cli lab up|down|status|profiles`: the edge lab (net/lab/edgelab.h).
 *  up --devices pi3:3,pi4:1 [--link 100mbit] [--delay 2ms] [--loss 0] [--out DIR]
 *     [--time-scale X] [--host-gflops X] [--no-emulation]: emulated devices; DIR/cluster.key
 *     and DIR/nodes (one host:port a line) let every other command use them.
 *  down [--out DIR]: removes what `up` made. status [--out DIR]: each node's state.
 *  profiles: the device profiles known (built-in and the user's).
 * Exit status 2 for usage errors (unknown device, bad --link), 1 when the system refuses.
 */
class LabCommand
{
public:
    static int run(const QStringList &arguments);
};

class CliContext;
/** `lab up`'s options but --out (--devices, --link, --delay, --loss, --time-scale,
 *  --host-gflops, --no-emulation): also the study's, which starts a lab of its own. */
void addLabUpOptions(CliContext &cli);
/** Those options read into a lab's options for `devices` (the dir is the caller's); throws
 *  UsageError naming the option. */
net::LabOptions labUpOptions(const CliContext &cli, const QString &devices);

} // namespace edgetrain::app

#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli deploy`: a session's student run by nodes on their own cameras, their
 *  figures shown while it runs (DeploymentRun), every node stopped at the end. */
class DeployCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app

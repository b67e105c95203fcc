#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli train`: trains a model on a dataset on this machine. Returns the exit status. */
class TrainCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app

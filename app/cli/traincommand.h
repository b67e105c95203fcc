#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli train`: trains a model on a dataset on this machine or across nodes.
 *  `edgetrain-cli plan`: the same job's options; profiles the nodes and predicts every cluster of
 *  them without training. Returns the exit status. */
class TrainCommand
{
public:
    enum class Purpose { Train, Plan };
    static int run(const QStringList &arguments, Purpose purpose = Purpose::Train);
};

} // namespace edgetrain::app

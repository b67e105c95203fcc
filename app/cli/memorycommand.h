#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli memory`: memory budget -> checkpointing schedule, predicted and measured. */
class MemoryCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app

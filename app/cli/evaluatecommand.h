#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli evaluate`: test accuracy of saved weights. Returns the exit status. */
class EvaluateCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app

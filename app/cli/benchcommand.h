#pragma once

#include <QStringList>

namespace edgetrain::app {

/** `edgetrain-cli bench`: training-step throughput and memory, or GEMM GFLOP/s. */
class BenchCommand
{
public:
    static int run(const QStringList &arguments);
};

} // namespace edgetrain::app

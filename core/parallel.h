#pragma once

#include <cstdint>

namespace edgetrain::core {

/**
 * The engine's one parallelism setting (`--threads N`). It drives the OpenMP loops in the
 * kernels and the GEMM backend (oneDNN and Eigen both use the same OpenMP runtime). Results are
 * deterministic for a given seed and thread count: loops are statically partitioned and
 * per-thread partial sums are combined in thread order.
 */
void setThreadCount(int threads); // clamps to [1, 256]; call it again on every thread that runs
                                  // the engine (OpenMP keeps the setting per thread)
int threadCount();

/** The contiguous slice [begin, end) of `count` items that worker `worker` of `workers` owns. */
struct Range
{
    std::int64_t begin = 0;
    std::int64_t end = 0;
};
Range staticSlice(std::int64_t count, int worker, int workers);

} // namespace edgetrain::core

#pragma once

#include <cstdint>

namespace edgetrain::core {

/**
 * The engine's one parallelism setting (`--threads N`). It drives the OpenMP loops in the
 * kernels and the GEMM backend (oneDNN and Eigen both use the same OpenMP runtime). Results are
 * deterministic for a given seed and thread count: loops are statically partitioned and
 * per-thread partial sums are combined in thread order.
 *
 * The count belongs to the thread that runs the engine, not to the process: the app plans
 * memory on one thread with 1 worker while it evaluates on another with all cores but one,
 * and neither may see (or size its workspaces by) the other's count. A thread that never set
 * its own count uses the process default.
 */
/** This thread's count, clamped to [1, 256] (and OpenMP's, which is per thread too). */
void setThreadCount(int threads);
/** The count of threads that have not chosen one (set once at start-up: `--threads`); also
 *  sets the calling thread's. */
void setDefaultThreadCount(int threads);
/** The calling thread's count. */
int threadCount();

/** This thread's index inside an OpenMP parallel region (0 outside one, or without OpenMP). */
int workerIndex();

/** The contiguous slice [begin, end) of `count` items that worker `worker` of `workers` owns. */
struct Range
{
    std::int64_t begin = 0;
    std::int64_t end = 0;
};
Range staticSlice(std::int64_t count, int worker, int workers);

} // namespace edgetrain::core

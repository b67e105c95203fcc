#pragma once

#include <time.h>

namespace edgetrain::core {

/** The CPU seconds the kernel has counted for every thread of this process. */
inline double processCpuSeconds()
{
    timespec ts{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

/** The CPU seconds the kernel has counted for the calling thread. */
inline double threadCpuSeconds()
{
    timespec ts{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

} // namespace edgetrain::core

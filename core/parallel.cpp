#include "parallel.h"

#include <algorithm>
#include <omp.h>

namespace edgetrain::core {

namespace {
int g_threads = 1;
}

void setThreadCount(int threads)
{
    g_threads = std::clamp(threads, 1, 256);
    omp_set_num_threads(g_threads);
    omp_set_dynamic(0);
}

int threadCount()
{
    return g_threads;
}

Range staticSlice(std::int64_t count, int worker, int workers)
{
    const std::int64_t base = count / workers;
    const std::int64_t extra = count % workers;
    Range r;
    r.begin = worker * base + std::min<std::int64_t>(worker, extra);
    r.end = r.begin + base + (worker < extra ? 1 : 0);
    return r;
}

} // namespace edgetrain::core

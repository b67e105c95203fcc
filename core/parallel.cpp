#include "parallel.h"

#include <algorithm>
#include <atomic>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace edgetrain::core {

namespace {
std::atomic<int> g_defaultThreads{1};
thread_local int t_threads = 0; // 0: this thread has not chosen; the default applies
} // namespace

namespace {
/** Built without OpenMP (the fuzz preset), the engine has one thread whatever is asked. */
int usable(int threads)
{
#ifdef _OPENMP
    return std::clamp(threads, 1, 256);
#else
    (void)threads;
    return 1;
#endif
}
} // namespace

void setThreadCount(int threads)
{
    t_threads = usable(threads);
#ifdef _OPENMP
    omp_set_num_threads(t_threads);
    omp_set_dynamic(0);
#endif
}

void setDefaultThreadCount(int threads)
{
    g_defaultThreads.store(usable(threads));
    setThreadCount(threads);
}

int workerIndex()
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

int threadCount()
{
    return t_threads ? t_threads : g_defaultThreads.load();
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

#include "processmemory.h"

#include "bufferpool.h"
#include "cgroupmembership.h"
#include "memoryaccountant.h"
#include "random.h"

#include <algorithm>
#include <fstream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <string>
#include <vector>

namespace edgetrain::core {

namespace process_memory {

namespace {

/** A "Field:   123 kB" line of /proc/self/status, in bytes. */
std::int64_t statusBytes(const std::string &field)
{
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.compare(0, field.size(), field) == 0) {
            try {
                return std::stoll(line.substr(field.size())) * 1024;
            } catch (const std::exception &) {
                return -1;
            }
        }
    return -1;
}

/** The first number in a file (a cgroup's limit or usage); -1 if none ("max": no limit). */
std::int64_t numberIn(const std::string &path)
{
    std::ifstream in(path);
    std::string word;
    if (!(in >> word))
        return -1;
    try {
        return std::stoll(word);
    } catch (const std::exception &) {
        return -1;
    }
}

/** A field of a cgroup's memory.stat ("inactive_file 123" lines); -1 if absent. */
std::int64_t statField(const std::string &path, const std::string &field)
{
    std::ifstream in(path);
    std::string name;
    std::int64_t value = 0;
    while (in >> name >> value)
        if (name == field)
            return value;
    return -1;
}

/** What the memory cgroup of this process still allows (-1: no limit found). Its inactive page
 *  cache counts as allowed: the kernel reclaims it before it refuses anything. */
std::int64_t cgroupHeadroom()
{
    const CgroupMembership cgroups = CgroupMembership::ofProcess();
    struct Counters
    {
        std::string limit, usage, stat, inactive;
    };
    std::vector<Counters> where;
    if (const std::string v1 = cgroups.v1Path("memory"); !v1.empty()) {
        const std::string dir = "/sys/fs/cgroup/memory" + v1;
        where.push_back({dir + "/memory.limit_in_bytes", dir + "/memory.usage_in_bytes",
                         dir + "/memory.stat", "total_inactive_file"});
    }
    if (cgroups.has_v2) {
        const std::string dir = "/sys/fs/cgroup" + cgroups.v2;
        where.push_back(
            {dir + "/memory.max", dir + "/memory.current", dir + "/memory.stat", "inactive_file"});
    }
    std::int64_t headroom = -1;
    for (const Counters &c : where) {
        const std::int64_t limit = numberIn(c.limit);
        std::int64_t usage = numberIn(c.usage);
        const std::int64_t cache = statField(c.stat, c.inactive);
        if (usage >= 0 && cache > 0)
            usage = std::max<std::int64_t>(0, usage - cache);
        // v1 says "no limit" with a huge number (PAGE_COUNTER_MAX pages).
        if (limit > 0 && usage >= 0 && limit < (std::int64_t(1) << 60)) {
            const std::int64_t h = std::max<std::int64_t>(0, limit - usage);
            headroom = headroom < 0 ? h : std::min(headroom, h);
        }
    }
    return headroom;
}

} // namespace

std::int64_t availableBytes()
{
    std::int64_t available = -1;
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("MemAvailable:", 0) == 0) {
            try {
                available = std::stoll(line.substr(13)) * 1024;
            } catch (const std::exception &) {
            }
        }
    const std::int64_t cgroup = cgroupHeadroom();
    if (cgroup >= 0)
        available = available < 0 ? cgroup : std::min(available, cgroup);
    return available;
}

std::int64_t residentBytes()
{
    return statusBytes("VmRSS:");
}

std::int64_t peakResidentBytes()
{
    return statusBytes("VmHWM:");
}

std::int64_t fileResidentBytes()
{
    return statusBytes("RssFile:");
}

bool resetPeak()
{
    std::ofstream out("/proc/self/clear_refs");
    out << "5";
    out.flush();
    return bool(out);
}

void giveBackFreePages()
{
#if defined(__GLIBC__)
    ::malloc_trim(0);
#endif
}

} // namespace process_memory

std::int64_t measureStepOverhead(Model &model, std::int64_t batch, const Schedule &schedule,
                                 int steps, std::int64_t since_rss_bytes)
{
    namespace pm = process_memory;
    // The batch-norm statistics the passes update, to put back.
    std::vector<std::vector<float>> tensors;
    std::vector<std::int64_t> counters;
    for (const NamedBuffer &b : model.buffers()) {
        if (b.buffer.tensor)
            tensors.emplace_back(b.buffer.tensor->data(),
                                 b.buffer.tensor->data() + b.buffer.tensor->numel());
        if (b.buffer.counter)
            counters.push_back(*b.buffer.counter);
    }
    pm::giveBackFreePages(); // what the caller freed is not this step's
    const std::int64_t rss0 = pm::residentBytes(), file0 = pm::fileResidentBytes();
    if (rss0 < 0 || file0 < 0 || !pm::resetPeak())
        return -1;
    MemoryAccountant &acc = MemoryAccountant::current();
    const std::int64_t engine0 = acc.currentTotalBytes();
    acc.resetPeaks();
    {
        Tensor x(model.batchShape(batch), MemoryCategory::Activations);
        Rng rng(7);
        for (std::int64_t i = 0; i < x.numel(); ++i)
            x.data()[i] = rng.uniform(-1.0f, 1.0f);
        // Class 0 for a classifier, no objects for a detector: the step costs the same.
        const std::vector<std::int32_t> labels(
            std::size_t(batch) * std::size_t(model.spec().labelWidth()), 0);
        PassContext ctx;
        for (int i = 0; i < steps; ++i) {
            ctx.step = std::uint64_t(i);
            model.forwardBackward(x, labels.data(), ctx, &schedule);
        }
    }
    const std::int64_t hwm = pm::peakResidentBytes();
    const std::int64_t fileGrowth = std::max<std::int64_t>(0, pm::fileResidentBytes() - file0);
    const std::int64_t engine = acc.peakTotalBytes() - engine0;
    std::size_t t = 0, c = 0;
    for (const NamedBuffer &b : model.buffers()) {
        if (b.buffer.tensor)
            std::copy(tensors[t].begin(), tensors[t].end(), b.buffer.tensor->data()), ++t;
        if (b.buffer.counter)
            *b.buffer.counter = counters[c++];
    }
    if (hwm < 0)
        return -1;
    const std::int64_t from = since_rss_bytes >= 0 ? std::min(since_rss_bytes, rss0) : rss0;
    return std::max<std::int64_t>(0, hwm - from - fileGrowth - engine);
}

ProcessBudgetPlan fitProcessBudget(Model &model, std::int64_t batch, std::int64_t budget_bytes)
{
    namespace pm = process_memory;
    ProcessBudgetPlan r;
    MemoryPlanner planner(model, batch);
    r.plan = planner.plan(budget_bytes);
    if (budget_bytes < 0)
        return r;
    BufferPool &pool = BufferPool::instance();
    // First at batch 1 with nothing kept by the pool (cheap; the first pass also compiles the
    // backends' kernels): the code and buffers outside the engine.
    const MemoryPlan small = MemoryPlanner(model, 1).plan(budget_bytes);
    if (!small.fits)
        return r;
    pool.setLimit(0);
    pm::giveBackFreePages();
    const std::int64_t start = pm::residentBytes();
    std::int64_t overhead = measureStepOverhead(model, 1, small.schedule, 2);
    if (overhead < 0) {
        pool.setLimit(budget_bytes);
        return r;
    }
    r.measuring_steps = 2;
    // Then the plan itself at the real batch, the pool keeping blocks within what the engine
    // may hold, counted from before the first: larger kernels and buffers, and the pool's
    // blocks (a kept block up to a quarter larger than the tensor it is reused for).
    for (int round = 0; round < 2; ++round) {
        planner.setProcessOverhead(overhead);
        r.plan = planner.plan(budget_bytes);
        pool.setLimit(std::max<std::int64_t>(0, budget_bytes - overhead));
        if (!r.plan.fits)
            break;
        const std::int64_t total = measureStepOverhead(model, batch, r.plan.schedule, 1, start);
        ++r.measuring_steps;
        if (total <= overhead)
            break;
        overhead = total;
    }
    if (planner.processOverhead() != overhead) {
        planner.setProcessOverhead(overhead);
        r.plan = planner.plan(budget_bytes);
        pool.setLimit(std::max<std::int64_t>(0, budget_bytes - overhead));
    }
    r.measured_overhead_bytes = overhead;
    pm::giveBackFreePages(); // the planners' tables
    return r;
}

} // namespace edgetrain::core

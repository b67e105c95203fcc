#pragma once

#include "core/error.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

namespace edgetrain::net {

/** A job grew the process past its memory limit (JobMemoryLimit): the job's error, not the
 *  agent's. */
class JobMemoryError : public core::Error
{
public:
    using core::Error::Error;
};

/**
 * The memory a node's job may grow the agent's process by, held from outside the engine: its
 * plan says what a step grows the process by, this makes sure an overrun — a plan that
 * under-counted, a kernel's scratch nobody measured, a device with less left than the budget —
 * ends the job with a clear error on that node instead of the kernel's OOM killer taking the
 * agent (and every later job) with it.
 *
 * Cgroup (cgroup v1 memory controller, writable: root, or a delegated hierarchy)
 *   The process moves into a memory cgroup of its own below the one it is in
 *   (edgetrain-job-PID); charges start at zero there, so what the cgroup counts is what the job
 *   grows the process by. A usage threshold at the limit wakes a watcher thread (the kernel's
 *   eventfd notification), which marks the limit exceeded; nothing waits there. The cgroup's
 *   hard limit is a headroom above (max(32 MiB, limit / 4)), so the job can end its step and
 *   unwind, with the OOM killer disabled: a thread that faults a page in past the headroom
 *   waits, the OOM notification wakes the watcher, which lifts the hard limit (the cgroups
 *   above, the device's, decide from there) and marks the limit exceeded. The destructor lifts
 *   the limit, moves the process back and removes the cgroup; a cgroup left by a killed agent
 *   is removed by its next job (or `lab down`). Every thread of the process is in the cgroup
 *   while the job runs (the event loop, gloo's, OpenMP's): their growth counts as the job's.
 * Watchdog (no writable cgroup v1: no root, cgroup v2, a container)
 *   A thread samples the process's RSS every 20 ms and marks the limit exceeded when it grew
 *   past the limit since the job began. It cannot stop one large allocation from reaching the
 *   device's own limit first, but any overrun the sampling sees is the job's error.
 * RLIMIT_AS/RLIMIT_DATA are not used: the job runs on a thread of the agent, and a process
 * limit would fail the agent's own allocations as well as the job's.
 *
 * exceeded() is read by the job's thread after every step and evaluation; the job then throws
 * JobMemoryError(overrunMessage()). Thread-safe: exceeded() and peakGrowthBytes() from any
 * thread; construct and destroy on one.
 */
class JobMemoryLimit
{
public:
    enum class Enforcement { Cgroup, Watchdog };

    /** Starts holding the process's growth from now to `limit_bytes` (> 0). `prefer` Watchdog
     *  skips the cgroup (tests of the fallback). A cgroup that cannot be set up falls back to
     *  the watchdog, and description() says why; throws only what starting a thread throws. */
    explicit JobMemoryLimit(std::int64_t limit_bytes, Enforcement prefer = Enforcement::Cgroup);
    ~JobMemoryLimit();
    JobMemoryLimit(const JobMemoryLimit &) = delete;
    JobMemoryLimit &operator=(const JobMemoryLimit &) = delete;

    Enforcement enforcement() const { return m_enforcement; }
    std::int64_t limitBytes() const { return m_limit_bytes; }
    /** Where the cgroup's hard limit is (the limit + headroom); 0 for the watchdog. */
    std::int64_t hardLimitBytes() const { return m_hard_limit_bytes; }
    bool exceeded() const { return m_exceeded.load(std::memory_order_acquire); }
    /** The most the process grew by since the job began (the cgroup's max usage, or the
     *  largest RSS growth sampled). */
    std::int64_t peakGrowthBytes() const;
    /** How the limit is held, for the node's log: "cgroup v1 memory limit (PATH)", or
     *  "RSS watchdog (why no cgroup)". */
    std::string description() const { return m_description; }
    /** What the job's error says when exceeded(): the limit, the growth, what to change. */
    std::string overrunMessage() const;

private:
    bool enterCgroup(std::string *why);
    void leaveCgroup();
    void closeFiles();
    void watchCgroup();
    void watchRss();

    std::int64_t m_limit_bytes;
    std::int64_t m_hard_limit_bytes = 0;
    Enforcement m_enforcement = Enforcement::Watchdog;
    std::string m_description;
    std::atomic<bool> m_exceeded{false};
    std::atomic<std::int64_t> m_peak_growth_bytes{0};
    std::int64_t m_start_rss_bytes = 0;

    // Cgroup
    std::string m_dir;             // the job's cgroup
    std::string m_home;            // the cgroup the process came from
    int m_limit_fd = -1;           // memory.limit_in_bytes, open for the watcher's writes
    int m_oom_fd = -1;             // memory.oom_control
    int m_usage_fd = -1;           // memory.usage_in_bytes (the threshold's file)
    int m_max_usage_fd = -1;       // memory.max_usage_in_bytes
    int m_threshold_event_fd = -1; // usage crossed the limit
    int m_oom_event_fd = -1;       // a thread waits at the hard limit
    int m_stop_fd = -1;            // wakes the watcher to end
    std::atomic<bool> m_lifted{false};

    std::thread m_watcher;
    std::atomic<bool> m_stop{false};
};

} // namespace edgetrain::net

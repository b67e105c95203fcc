#include "net/agent/jobmemorylimit.h"

#include "core/cgroupmembership.h"
#include "core/numbertext.h"
#include "core/processmemory.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <signal.h>
#include <sstream>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

namespace edgetrain::net {

namespace {

const std::string kMemoryRoot = "/sys/fs/cgroup/memory";
const std::string kPrefix = "edgetrain-job-";
constexpr std::int64_t kMinHeadroomBytes = std::int64_t(32) << 20;
constexpr int kWatchdogPeriodMs = 20;

std::string readText(const std::string &path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

/** Writes `text` to a cgroup file; false with `why` set if the kernel refuses. */
bool writeText(const std::string &path, const std::string &text, std::string *why)
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        *why = "cannot open " + path + ": " + std::strerror(errno);
        return false;
    }
    const ssize_t n = ::write(fd, text.data(), text.size());
    const int error = errno;
    ::close(fd);
    if (n != ssize_t(text.size())) {
        *why = "cannot write '" + text + "' to " + path + ": " + std::strerror(error);
        return false;
    }
    return true;
}

bool processAlive(pid_t pid)
{
    return ::kill(pid, 0) == 0 || errno == EPERM;
}

/** Removes the job cgroups below `home` that agents killed mid-job left (empty by then). */
void removeStaleCgroups(const std::string &home)
{
    DIR *dir = ::opendir(home.c_str());
    if (!dir)
        return;
    while (const dirent *e = ::readdir(dir)) {
        const std::string name = e->d_name;
        if (name.rfind(kPrefix, 0) != 0)
            continue;
        const pid_t pid = pid_t(std::atol(name.c_str() + kPrefix.size()));
        if (pid > 0 && (pid == ::getpid() || !processAlive(pid)))
            ::rmdir((home + "/" + name).c_str()); // fails harmlessly if tasks are still in it
    }
    ::closedir(dir);
}

} // namespace

JobMemoryLimit::JobMemoryLimit(std::int64_t limit_bytes, Enforcement prefer)
    : m_limit_bytes(std::max<std::int64_t>(1, limit_bytes))
{
    m_start_rss_bytes = std::max<std::int64_t>(0, core::process_memory::residentBytes());
    std::string why = "the cgroup was not asked for";
    if (prefer == Enforcement::Cgroup && enterCgroup(&why)) {
        m_enforcement = Enforcement::Cgroup;
        m_description = "cgroup v1 memory limit (" + m_dir + ")";
        return;
    }
    m_enforcement = Enforcement::Watchdog;
    m_hard_limit_bytes = 0;
    m_description = "RSS watchdog (" + why + ")";
    m_stop = false; // a cgroup that failed half-way stopped its watcher
    m_watcher = std::thread([this] { watchRss(); });
}

JobMemoryLimit::~JobMemoryLimit()
{
    // No limit first: a thread of this process may wait at it, and the way out below allocates.
    if (m_limit_fd >= 0) {
        [[maybe_unused]] const auto n = ::pwrite(m_limit_fd, "-1", 2, 0);
    }
    m_stop = true;
    if (m_stop_fd >= 0) {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(m_stop_fd, &one, sizeof one);
    }
    if (m_watcher.joinable())
        m_watcher.join();
    if (m_enforcement == Enforcement::Cgroup)
        leaveCgroup();
    closeFiles();
}

void JobMemoryLimit::closeFiles()
{
    for (int *fd : {&m_limit_fd, &m_oom_fd, &m_usage_fd, &m_max_usage_fd, &m_threshold_event_fd,
                    &m_oom_event_fd, &m_stop_fd})
        if (*fd >= 0) {
            ::close(*fd);
            *fd = -1;
        }
}

bool JobMemoryLimit::enterCgroup(std::string *why)
{
    const std::string own = core::CgroupMembership::ofProcess().v1Path("memory");
    if (own.empty()) {
        *why = "no cgroup v1 memory controller";
        return false;
    }
    m_home = kMemoryRoot + (own == "/" ? std::string() : own);
    if (::access((m_home + "/cgroup.procs").c_str(), W_OK) != 0) {
        *why = "cannot move this process between memory cgroups in " + m_home + ": " +
               std::strerror(errno);
        return false;
    }
    removeStaleCgroups(m_home);
    m_dir = m_home + "/" + kPrefix + std::to_string(::getpid());
    if (::mkdir(m_dir.c_str(), 0755) != 0) {
        *why = "cannot create " + m_dir + ": " + std::strerror(errno);
        return false;
    }
    const auto undo = [&] {
        closeFiles();
        ::rmdir(m_dir.c_str());
        return false;
    };
    m_hard_limit_bytes = m_limit_bytes + std::max(kMinHeadroomBytes, m_limit_bytes / 4);
    if (!writeText(m_dir + "/memory.limit_in_bytes", std::to_string(m_hard_limit_bytes), why) ||
        !writeText(m_dir + "/memory.oom_control", "1", why))
        return undo();
    m_oom_fd = ::open((m_dir + "/memory.oom_control").c_str(), O_RDONLY | O_CLOEXEC);
    m_usage_fd = ::open((m_dir + "/memory.usage_in_bytes").c_str(), O_RDONLY | O_CLOEXEC);
    m_max_usage_fd = ::open((m_dir + "/memory.max_usage_in_bytes").c_str(), O_RDONLY | O_CLOEXEC);
    m_limit_fd = ::open((m_dir + "/memory.limit_in_bytes").c_str(), O_WRONLY | O_CLOEXEC);
    m_threshold_event_fd = ::eventfd(0, EFD_CLOEXEC);
    m_oom_event_fd = ::eventfd(0, EFD_CLOEXEC);
    m_stop_fd = ::eventfd(0, EFD_CLOEXEC);
    if (m_oom_fd < 0 || m_usage_fd < 0 || m_max_usage_fd < 0 || m_limit_fd < 0 ||
        m_threshold_event_fd < 0 || m_oom_event_fd < 0 || m_stop_fd < 0) {
        *why = std::string("cannot open the cgroup's files: ") + std::strerror(errno);
        return undo();
    }
    const std::string control = m_dir + "/cgroup.event_control";
    if (!writeText(control,
                   std::to_string(m_threshold_event_fd) + " " + std::to_string(m_usage_fd) + " " +
                       std::to_string(m_limit_bytes),
                   why) ||
        !writeText(control, std::to_string(m_oom_event_fd) + " " + std::to_string(m_oom_fd), why))
        return undo();
    m_watcher = std::thread([this] { watchCgroup(); });
    if (!writeText(m_dir + "/cgroup.procs", std::to_string(::getpid()), why)) {
        m_stop = true;
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto n = ::write(m_stop_fd, &one, sizeof one);
        m_watcher.join();
        return undo();
    }
    return true;
}

void JobMemoryLimit::watchCgroup()
{
    pollfd fds[3] = {
        {m_threshold_event_fd, POLLIN, 0}, {m_oom_event_fd, POLLIN, 0}, {m_stop_fd, POLLIN, 0}};
    while (!m_stop.load()) {
        if (::poll(fds, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[2].revents != 0)
            break;
        std::uint64_t events = 0;
        if ((fds[0].revents & POLLIN) != 0 &&
            ::read(m_threshold_event_fd, &events, sizeof events) == sizeof events) {
            // The kernel says "crossed", up or down; the peak says whether the limit was
            // reached (usage may be below it again by now).
            char text[32] = {};
            const ssize_t n = ::pread(m_max_usage_fd, text, sizeof text - 1, 0);
            if (n > 0 && std::atoll(text) >= m_limit_bytes)
                m_exceeded.store(true, std::memory_order_release);
        }
        if ((fds[1].revents & POLLIN) != 0 &&
            ::read(m_oom_event_fd, &events, sizeof events) == sizeof events) {
            // A thread waits at the hard limit (the headroom did not hold the job's unwinding):
            // no limit of the job's any more; the device's cgroups decide.
            m_exceeded.store(true, std::memory_order_release);
            m_lifted = true;
            [[maybe_unused]] const auto n = ::pwrite(m_limit_fd, "-1", 2, 0);
        }
    }
}

void JobMemoryLimit::watchRss()
{
    while (!m_stop.load()) {
        const std::int64_t growth = core::process_memory::residentBytes() - m_start_rss_bytes;
        std::int64_t peak = m_peak_growth_bytes.load();
        while (growth > peak && !m_peak_growth_bytes.compare_exchange_weak(peak, growth)) {
        }
        if (growth > m_limit_bytes)
            m_exceeded.store(true, std::memory_order_release);
        std::this_thread::sleep_for(std::chrono::milliseconds(kWatchdogPeriodMs));
    }
}

void JobMemoryLimit::leaveCgroup()
{
    // The limit is lifted already (the destructor), so this may allocate.
    const std::int64_t peak = std::atoll(readText(m_dir + "/memory.max_usage_in_bytes").c_str());
    m_peak_growth_bytes = std::max<std::int64_t>(0, peak);
    std::string why;
    if (!writeText(m_home + "/cgroup.procs", std::to_string(::getpid()), &why)) {
        // Stuck in the job's cgroup: at least never wait in it.
        writeText(m_dir + "/memory.oom_control", "0", &why);
        return;
    }
    ::rmdir(m_dir.c_str());
}

std::int64_t JobMemoryLimit::peakGrowthBytes() const
{
    if (m_enforcement == Enforcement::Cgroup && !m_stop.load()) {
        const std::string text = readText(m_dir + "/memory.max_usage_in_bytes");
        if (!text.empty())
            return std::atoll(text.c_str());
    }
    return m_peak_growth_bytes.load();
}

std::string JobMemoryLimit::overrunMessage() const
{
    return "the job grew this node's process past its memory limit of " +
           core::NumberText::bytes(m_limit_bytes) + " (to " +
           core::NumberText::bytes(peakGrowthBytes()) + "; held by " +
           (m_enforcement == Enforcement::Cgroup ? "a cgroup memory limit"
                                                 : "a watchdog on the process's RSS") +
           (m_lifted.load() ? ", lifted past its headroom to let the job unwind" : "") + ")";
}

} // namespace edgetrain::net

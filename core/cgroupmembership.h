#pragma once

#include <map>
#include <string>
#include <string_view>

namespace edgetrain::core {

/**
 * Where a process sits in the kernel's control groups, as /proc/PID/cgroup lists them: one line
 * per hierarchy, "ID:CONTROLLERS:PATH" — cgroup v1 names its controllers ("7:memory:/a/b",
 * "4:cpu,cpuacct:/a"), the v2 hierarchy none ("0::/a"). Paths are relative to the hierarchy's
 * mount (/sys/fs/cgroup/<controller> for v1 here, /sys/fs/cgroup for v2).
 */
struct CgroupMembership
{
    std::map<std::string, std::string> v1; // controller ("memory", "cpu", ...) -> path
    std::string v2;                        // the v2 hierarchy's path, if has_v2
    bool has_v2 = false;

    /** The v1 path of `controller` ("" where it is not a v1 hierarchy of this process's). */
    std::string v1Path(const std::string &controller) const;

    /** Reads /proc/self/cgroup (pid 0) or /proc/PID/cgroup; empty where unreadable. */
    static CgroupMembership ofProcess(long pid = 0);
    /** Parses that file's text; lines that are not "ID:CONTROLLERS:PATH" are skipped. */
    static CgroupMembership parse(std::string_view text);
};

} // namespace edgetrain::core

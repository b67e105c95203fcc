#include "cgroupmembership.h"

#include <fstream>
#include <sstream>

namespace edgetrain::core {

std::string CgroupMembership::v1Path(const std::string &controller) const
{
    const auto it = v1.find(controller);
    return it == v1.end() ? std::string() : it->second;
}

CgroupMembership CgroupMembership::ofProcess(long pid)
{
    std::ifstream in(pid == 0 ? std::string("/proc/self/cgroup")
                              : "/proc/" + std::to_string(pid) + "/cgroup");
    std::ostringstream text;
    text << in.rdbuf();
    return parse(text.str());
}

CgroupMembership CgroupMembership::parse(std::string_view text)
{
    CgroupMembership m;
    while (!text.empty()) {
        const auto end = text.find('\n');
        const std::string_view line = text.substr(0, end);
        text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
        const auto first = line.find(':');
        const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos || first == 0)
            continue;
        // The path is the rest of the line: it may hold colons of its own.
        const std::string path(line.substr(second + 1));
        if (path.empty() || path.front() != '/')
            continue;
        std::string_view controllers = line.substr(first + 1, second - first - 1);
        if (controllers.empty()) {
            m.v2 = path;
            m.has_v2 = true;
            continue;
        }
        while (!controllers.empty()) {
            const auto comma = controllers.find(',');
            const std::string_view c = controllers.substr(0, comma);
            // "name=systemd" is a named hierarchy without a controller: kept under its name.
            if (!c.empty())
                m.v1[std::string(c)] = path;
            controllers = comma == std::string_view::npos ? std::string_view()
                                                          : controllers.substr(comma + 1);
        }
    }
    return m;
}

} // namespace edgetrain::core

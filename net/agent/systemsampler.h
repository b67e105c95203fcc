#pragma once

#include "core/deviceprofile.h"
#include "net/protocol/messages/systemsample.h"

#include <QString>

#include <cstdint>
#include <map>
#include <optional>

namespace edgetrain::net {

/** Static facts about a device, sent in beacons and at the handshake. */
struct DeviceInfo
{
    int cores = 1;
    std::int64_t ram_bytes = 0;
    QString arch;
    QString cpu_model;
    static DeviceInfo read();
};

/**
 * The CPU and memory limits of the cgroup this process runs in (an edge-lab device, a systemd
 * slice, a container), v1 or v2; none found: zeros and empty paths.
 */
struct CgroupLimits
{
    double cpu_cores = 0.0;          // the CPU quota in cores (0: none)
    double cpu_period_seconds = 0.0; // the quota's period (0: no quota)
    QString cpu_usage_file; // cpuacct.usage (ns) or cpu.stat (usage_usec); empty: the process's
    std::int64_t memory_limit_bytes = 0; // 0: none
    QString memory_usage_file;           // memory.usage_in_bytes or memory.current
    QString memory_stat_file;            // memory.stat (its inactive_file is reclaimable)
    static CgroupLimits read();
};

/**
 * Reads /proc/stat, /proc/self/stat, /proc/self/status, /proc/meminfo, /proc/net/dev,
 * /proc/loadavg and, where present, cpufreq and thermal zones. Rates are differences to the
 * previous sample() call. Unreadable files give zeros, never errors (containers hide some).
 * Inside a cgroup with limits the device is what the cgroup allows: CPU % is of the quota, and
 * memory total/available are the limit and what is left of it. Network counters are those of
 * the process's network namespace (an edge-lab device has its own).
 */
class SystemSampler
{
public:
    /** `sysRoot`: where /sys is (tests give a folder of fake sensor files). */
    explicit SystemSampler(QString sysRoot = QStringLiteral("/sys"));
    SystemSample sample();
    /** The power model used where no sensor measures the device (a device started with
     *  --device-profile), at the CPU's clock where cpufreq shows it. Device::Emulated: the
     *  device is the profile, emulated on this machine (an edge-lab node): this machine's power
     *  sensors, clock and temperature are not the device's, so none is read and the model runs
     *  at the profile's clock; without a CPU quota the device's utilisation is this agent's
     *  own CPU (a share of the machine), not the whole machine's. */
    enum class Device { ThisMachine, Emulated };
    void setPowerModel(const core::DeviceProfile &profile, Device device = Device::ThisMachine)
    {
        m_profile = profile;
        m_emulated = device == Device::Emulated;
    }
    /** The device's power idle and busy with `threads` computing, for the cluster planner: from
     *  the device profile's model (idle: nothing running; busy: the share of the device — or of
     *  its cgroup CPU quota — that `threads` keep busy); `idle_measured` replaces the idle
     *  figure where a sensor measured it. Negative: not known (a sensor and no profile). */
    struct PowerFigures
    {
        double idle_watts = -1.0, busy_watts = -1.0;
        QString source;
        double busy_cores =
            1.0; // the CPU busy_watts is for: the threads, at most the quota or cores
    };
    PowerFigures powerFigures(int threads, int cores, const SystemSample &idle) const;
    const CgroupLimits &cgroup() const { return m_cgroup; }

private:
    struct Counters
    {
        std::uint64_t cpu_busy = 0, cpu_total = 0, agent_ticks = 0, rx = 0, tx = 0;
        std::uint64_t cgroup_cpu_ns = 0;
        std::uint64_t agent_rx = 0, agent_tx = 0; // every TCP socket this process had
        std::int64_t nanoseconds = 0;
    };
    Counters read();
    struct PowerSensor
    {
        QString source;               // "rapl" or "hwmon"
        std::optional<double> joules; // RAPL: energy counted since the sampler started
        std::optional<double> watts;  // hwmon: power now
    };
    /** powercap (RAPL package domains, wrap-around handled) or, failing that, hwmon power
     *  sensors; nothing if neither exists. */
    std::optional<PowerSensor> readPowerSensors();
    /** Sums TCP_INFO's bytes_received / bytes_acked over this process's sockets; a socket
     *  that has closed keeps its last count in the totals. */
    void readSockets(Counters &c);
    QString m_sys;
    std::optional<core::DeviceProfile> m_profile;
    bool m_emulated = false;
    std::optional<double> m_lastSensorJoules;     // RAPL's counter at the previous sample
    std::map<QString, std::uint64_t> m_raplLast;  // per domain: the counter's last value
    std::map<QString, std::uint64_t> m_raplTotal; // per domain: microjoules counted since start
    double m_energy = 0.0;
    CgroupLimits m_cgroup;
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> m_sockets; // inode -> rx, tx
    std::uint64_t m_closedRx = 0, m_closedTx = 0;
    Counters m_last;
};

} // namespace edgetrain::net

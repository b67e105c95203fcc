#pragma once

#include <QCborMap>
#include <QString>

#include <cstdint>
#include <optional>

namespace edgetrain::net {

/** One reading of a device, as the node streams it about once a second. */
struct SystemSample
{
    double cpu_percent = 0.0;       // whole device, 0-100, since the previous sample
    double agent_cpu_percent = 0.0; // this process, as a share of the whole device
    std::int64_t agent_rss_bytes = 0;
    std::int64_t memory_total_bytes = 0;
    std::int64_t memory_available_bytes = 0;
    double net_rx_bytes_per_second = 0.0; // every interface but loopback
    double net_tx_bytes_per_second = 0.0;
    double load1 = 0.0;
    std::optional<double> cpu_mhz;       // where cpufreq is exposed
    std::optional<double> temperature_c; // where a thermal zone exists
    QCborMap training;                   // the job's progress (TrainingStatus), if any

    QCborMap toCbor() const;
    static SystemSample fromCbor(const QCborMap &map);
};

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
 * Reads /proc/stat, /proc/self/stat, /proc/self/status, /proc/meminfo, /proc/net/dev,
 * /proc/loadavg and, where present, cpufreq and thermal zones. Rates are differences to the
 * previous sample() call. Unreadable files give zeros, never errors (containers hide some).
 */
class SystemSampler
{
public:
    SystemSampler();
    SystemSample sample();

private:
    struct Counters
    {
        std::uint64_t cpu_busy = 0, cpu_total = 0, agent_ticks = 0, rx = 0, tx = 0;
        std::int64_t nanoseconds = 0;
    };
    static Counters read();
    Counters m_last;
};

} // namespace edgetrain::net

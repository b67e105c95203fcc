#include "net/agent/systemsampler.h"

#include "core/cgroupmembership.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QSysInfo>
#include <QThread>

#include <algorithm>
#include <cstddef>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

namespace edgetrain::net {

namespace {

QByteArray readFile(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll();
}

std::int64_t meminfoBytes(const QByteArray &meminfo, const char *key)
{
    for (const QByteArray &line : meminfo.split('\n'))
        if (line.startsWith(key))
            return line.mid(qsizetype(qstrlen(key))).trimmed().split(' ').value(0).toLongLong() *
                   1024;
    return 0;
}

qint64 monotonicNanoseconds()
{
    static QElapsedTimer clock = [] {
        QElapsedTimer t;
        t.start();
        return t;
    }();
    return clock.nsecsElapsed();
}

} // namespace

DeviceInfo DeviceInfo::read()
{
    DeviceInfo d;
    d.cores = QThread::idealThreadCount();
    d.ram_bytes = meminfoBytes(readFile(QStringLiteral("/proc/meminfo")), "MemTotal:");
    d.arch = QSysInfo::currentCpuArchitecture();
    for (const QByteArray &line : readFile(QStringLiteral("/proc/cpuinfo")).split('\n'))
        if (line.startsWith("model name") || line.startsWith("Model")) {
            d.cpu_model = QString::fromUtf8(line.mid(line.indexOf(':') + 1).trimmed());
            break;
        }
    return d;
}

CgroupLimits CgroupLimits::read()
{
    CgroupLimits g;
    const QString root = QStringLiteral("/sys/fs/cgroup");
    const core::CgroupMembership cgroups = core::CgroupMembership::ofProcess();
    const QString cpu = QString::fromStdString(cgroups.v1Path("cpu"));
    const QString cpuacct = QString::fromStdString(cgroups.v1Path("cpuacct"));
    const QString memory = QString::fromStdString(cgroups.v1Path("memory"));
    const QString v2 = cgroups.has_v2 ? QString::fromStdString(cgroups.v2) : QString();
    if (!cpu.isEmpty()) {
        const double quota =
            readFile(root + QStringLiteral("/cpu") + cpu + QStringLiteral("/cpu.cfs_quota_us"))
                .trimmed()
                .toDouble();
        const double period =
            readFile(root + QStringLiteral("/cpu") + cpu + QStringLiteral("/cpu.cfs_period_us"))
                .trimmed()
                .toDouble();
        if (quota > 0 && period > 0) {
            g.cpu_cores = quota / period;
            g.cpu_period_seconds = period / 1e6;
            // cpuacct may be a hierarchy of its own, where this process sits elsewhere (or at
            // the root): then the process's own CPU time stands for the cgroup's.
            const QString usage =
                root + QStringLiteral("/cpuacct") + cpuacct + QStringLiteral("/cpuacct.usage");
            if (cpuacct == cpu && QFile::exists(usage))
                g.cpu_usage_file = usage;
        }
    } else if (!v2.isEmpty()) {
        const QList<QByteArray> max =
            readFile(root + v2 + QStringLiteral("/cpu.max")).trimmed().split(' ');
        if (max.size() == 2 && max[0] != "max" && max[1].toDouble() > 0) {
            g.cpu_cores = max[0].toDouble() / max[1].toDouble();
            g.cpu_period_seconds = max[1].toDouble() / 1e6;
            g.cpu_usage_file = root + v2 + QStringLiteral("/cpu.stat");
        }
    }
    const std::int64_t noLimit = std::int64_t(1) << 60; // v1 writes ~2^63 for "none"
    if (!memory.isEmpty()) {
        const QString dir = root + QStringLiteral("/memory") + memory;
        const std::int64_t limit =
            readFile(dir + QStringLiteral("/memory.limit_in_bytes")).trimmed().toLongLong();
        if (limit > 0 && limit < noLimit) {
            g.memory_limit_bytes = limit;
            g.memory_usage_file = dir + QStringLiteral("/memory.usage_in_bytes");
            g.memory_stat_file = dir + QStringLiteral("/memory.stat");
        }
    } else if (!v2.isEmpty()) {
        const QByteArray max = readFile(root + v2 + QStringLiteral("/memory.max")).trimmed();
        if (!max.isEmpty() && max != "max" && max.toLongLong() > 0) {
            g.memory_limit_bytes = max.toLongLong();
            g.memory_usage_file = root + v2 + QStringLiteral("/memory.current");
            g.memory_stat_file = root + v2 + QStringLiteral("/memory.stat");
        }
    }
    return g;
}

SystemSampler::SystemSampler(QString sysRoot)
    : m_sys(std::move(sysRoot)), m_cgroup(CgroupLimits::read()), m_last(read())
{
    if (const auto sensor = readPowerSensors()) // the counters' starting point
        m_lastSensorJoules = sensor->joules;
}

std::optional<SystemSampler::PowerSensor> SystemSampler::readPowerSensors()
{
    // powercap: the package domains (intel-rapl:N; their :N:M children are parts of them).
    const QDir powercap(m_sys + QStringLiteral("/class/powercap"));
    double joules = 0.0;
    bool rapl = false;
    for (const QString &d : powercap.entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::System)) {
        if (d.count(QLatin1Char(':')) != 1)
            continue;
        bool ok = false;
        const std::uint64_t uj = readFile(powercap.filePath(d) + QStringLiteral("/energy_uj"))
                                     .trimmed()
                                     .toULongLong(&ok);
        if (!ok)
            continue;
        const std::uint64_t range =
            readFile(powercap.filePath(d) + QStringLiteral("/max_energy_range_uj"))
                .trimmed()
                .toULongLong();
        // The counter wraps at max_energy_range_uj: count the steps, not the raw value.
        auto it = m_raplLast.find(d);
        std::uint64_t &total = m_raplTotal[d];
        if (it != m_raplLast.end())
            total += uj >= it->second ? uj - it->second : uj + range - it->second;
        m_raplLast[d] = uj;
        joules += double(total) / 1e6;
        rapl = true;
    }
    if (rapl)
        return PowerSensor{QStringLiteral("rapl"), joules, std::nullopt};
    // hwmon sensors that report power (microwatts): a Pi's PMIC, some boards' INA chips.
    const QDir hwmon(m_sys + QStringLiteral("/class/hwmon"));
    double watts = 0.0;
    bool any = false;
    for (const QString &h : hwmon.entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::System))
        for (const QString &f :
             QDir(hwmon.filePath(h)).entryList({QStringLiteral("power*_input")}, QDir::Files)) {
            bool ok = false;
            const double uw =
                readFile(hwmon.filePath(h) + QLatin1Char('/') + f).trimmed().toDouble(&ok);
            if (ok) {
                watts += uw / 1e6;
                any = true;
            }
        }
    if (any)
        return PowerSensor{QStringLiteral("hwmon"), std::nullopt, watts};
    return std::nullopt;
}

void SystemSampler::readSockets(Counters &c)
{
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> now;
    const QDir fds(QStringLiteral("/proc/self/fd"));
    for (const QString &name : fds.entryList(QDir::System | QDir::NoDotAndDotDot)) {
        bool ok = false;
        const int fd = name.toInt(&ok);
        struct stat st
        {};
        if (!ok || ::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode))
            continue;
        struct tcp_info info
        {};
        socklen_t len = sizeof info;
        if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0 ||
            len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof info.tcpi_bytes_received)
            continue; // not TCP, or a kernel without these counters
        now[std::uint64_t(st.st_ino)] = {info.tcpi_bytes_received, info.tcpi_bytes_acked};
    }
    for (const auto &[inode, counts] : m_sockets)
        if (!now.count(inode)) { // closed since: its bytes stay counted
            m_closedRx += counts.first;
            m_closedTx += counts.second;
        }
    m_sockets = std::move(now);
    c.agent_rx = m_closedRx;
    c.agent_tx = m_closedTx;
    for (const auto &[inode, counts] : m_sockets) {
        c.agent_rx += counts.first;
        c.agent_tx += counts.second;
    }
}

SystemSampler::Counters SystemSampler::read()
{
    Counters c;
    c.nanoseconds = monotonicNanoseconds();
    if (!m_cgroup.cpu_usage_file.isEmpty()) {
        const QByteArray usage = readFile(m_cgroup.cpu_usage_file);
        if (m_cgroup.cpu_usage_file.endsWith(QLatin1String("cpu.stat"))) {
            for (const QByteArray &line : usage.split('\n'))
                if (line.startsWith("usage_usec "))
                    c.cgroup_cpu_ns = line.mid(11).trimmed().toULongLong() * 1000;
        } else {
            c.cgroup_cpu_ns = usage.trimmed().toULongLong();
        }
    }
    const QList<QByteArray> cpu =
        readFile(QStringLiteral("/proc/stat")).split('\n').value(0).simplified().split(' ');
    // cpu user nice system idle iowait irq softirq steal
    for (int i = 1; i < cpu.size() && i <= 8; ++i) {
        const std::uint64_t v = cpu[i].toULongLong();
        c.cpu_total += v;
        if (i != 4 && i != 5)
            c.cpu_busy += v;
    }
    // right after the machine's: the sockets' reading below takes a while
    const QByteArray self = readFile(QStringLiteral("/proc/self/stat"));
    const QList<QByteArray> fields = self.mid(self.lastIndexOf(')') + 2).split(' ');
    c.agent_ticks = fields.value(11).toULongLong() + fields.value(12).toULongLong(); // utime, stime
    readSockets(c);
    for (const QByteArray &line : readFile(QStringLiteral("/proc/net/dev")).split('\n')) {
        const int colon = line.indexOf(':');
        if (colon < 0 || line.left(colon).trimmed() == "lo")
            continue;
        const QList<QByteArray> v = line.mid(colon + 1).simplified().split(' ');
        c.rx += v.value(0).toULongLong();
        c.tx += v.value(8).toULongLong();
    }
    return c;
}

SystemSample SystemSampler::sample()
{
    const Counters now = read();
    SystemSample s;
    const double totalTicks = double(now.cpu_total - m_last.cpu_total);
    if (totalTicks > 0) {
        s.cpu_percent = 100.0 * double(now.cpu_busy - m_last.cpu_busy) / totalTicks;
        s.agent_cpu_percent = 100.0 * double(now.agent_ticks - m_last.agent_ticks) / totalTicks;
    }
    const double seconds = double(now.nanoseconds - m_last.nanoseconds) / 1e9;
    if (m_emulated && m_cgroup.cpu_cores <= 0) // the device is this agent, not the machine
        s.cpu_percent = s.agent_cpu_percent;
    if (m_cgroup.cpu_cores > 0 && seconds > 0) { // the device is the quota
        // A usage file unreadable for one sample (0) must not wrap round to a huge figure.
        const bool cgroupUsage = !m_cgroup.cpu_usage_file.isEmpty() && now.cgroup_cpu_ns > 0 &&
                                 m_last.cgroup_cpu_ns > 0 &&
                                 now.cgroup_cpu_ns >= m_last.cgroup_cpu_ns;
        const double busy = cgroupUsage ? double(now.cgroup_cpu_ns - m_last.cgroup_cpu_ns) / 1e9
                                        : double(now.agent_ticks - m_last.agent_ticks) /
                                              double(::sysconf(_SC_CLK_TCK));
        s.cpu_percent = std::clamp(100.0 * busy / seconds / m_cgroup.cpu_cores, 0.0, 100.0);
        s.agent_cpu_percent =
            std::clamp(100.0 * double(now.agent_ticks - m_last.agent_ticks) /
                           double(::sysconf(_SC_CLK_TCK)) / seconds / m_cgroup.cpu_cores,
                       0.0, 100.0);
    }
    // The device's busy time includes this agent's. The two are counted differently (the
    // machine's and the cgroup's by ticks charged to whatever ran when each CPU's timer fired,
    // or by the group's run time; the agent's by its own exact run time), and read a moment
    // apart: over a short or quiet window the device's figure can come out a tick or two
    // below the agent's own (tst_node: a third of 30 ms windows did, 40 % against 60 %).
    // (A whole-machine figure that read nothing has no ticks, so the agent's share is 0 too.)
    s.agent_cpu_percent = std::clamp(s.agent_cpu_percent, 0.0, 100.0);
    s.cpu_percent = std::max(s.cpu_percent, s.agent_cpu_percent);
    if (seconds > 0) {
        s.net_rx_bytes_per_second = double(now.rx - m_last.rx) / seconds;
        s.net_tx_bytes_per_second = double(now.tx - m_last.tx) / seconds;
        s.agent_rx_bytes_per_second = double(now.agent_rx - m_last.agent_rx) / seconds;
        s.agent_tx_bytes_per_second = double(now.agent_tx - m_last.agent_tx) / seconds;
    }
    m_last = now;
    const QByteArray meminfo = readFile(QStringLiteral("/proc/meminfo"));
    s.memory_total_bytes = meminfoBytes(meminfo, "MemTotal:");
    s.memory_available_bytes = meminfoBytes(meminfo, "MemAvailable:");
    if (m_cgroup.memory_limit_bytes > 0) {
        std::int64_t used = readFile(m_cgroup.memory_usage_file).trimmed().toLongLong();
        for (const QByteArray &line : readFile(m_cgroup.memory_stat_file).split('\n'))
            if (line.startsWith("inactive_file ")) { // reclaimable page cache (v1 and v2)
                used -= line.mid(line.indexOf(' ') + 1).trimmed().toLongLong();
                break;
            }
        s.memory_total_bytes = m_cgroup.memory_limit_bytes;
        s.memory_available_bytes = std::clamp<std::int64_t>(m_cgroup.memory_limit_bytes - used, 0,
                                                            m_cgroup.memory_limit_bytes);
    }
    s.agent_rss_bytes = meminfoBytes(readFile(QStringLiteral("/proc/self/status")), "VmRSS:");
    s.load1 = readFile(QStringLiteral("/proc/loadavg")).split(' ').value(0).toDouble();
    if (!m_emulated) { // an emulated device's clock and temperature are not this machine's
        bool ok = false;
        const double khz =
            readFile(m_sys + QStringLiteral("/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"))
                .trimmed()
                .toDouble(&ok);
        if (ok && khz > 0)
            s.cpu_mhz = khz / 1000.0;
        const double milli = readFile(m_sys + QStringLiteral("/class/thermal/thermal_zone0/temp"))
                                 .trimmed()
                                 .toDouble(&ok);
        if (ok)
            s.temperature_c = milli / 1000.0;
    }

    // Power: measured if a sensor exposes it, else the device profile's model at this load and
    // clock.
    if (const auto sensor = m_emulated ? std::nullopt : readPowerSensors()) {
        if (sensor->watts) {
            s.power_watts = sensor->watts;
        } else if (sensor->joules && seconds > 0) { // RAPL: joules since the previous sample
            if (m_lastSensorJoules)
                s.power_watts = (*sensor->joules - *m_lastSensorJoules) / seconds;
            m_lastSensorJoules = sensor->joules;
        }
        s.power_source = sensor->source;
    } else if (m_profile) {
        s.power_watts = m_profile->watts(s.cpu_percent / 100.0, s.cpu_mhz.value_or(0.0));
        s.power_source = QStringLiteral("estimated: ") + QString::fromStdString(m_profile->id);
    }
    if (s.power_watts && seconds > 0)
        m_energy += *s.power_watts * seconds;
    s.energy_joules = m_energy;
    return s;
}

SystemSampler::PowerFigures SystemSampler::powerFigures(int threads, int cores,
                                                        const SystemSample &idle) const
{
    PowerFigures f;
    const double quota = m_cgroup.cpu_cores > 0 ? m_cgroup.cpu_cores : double(std::max(cores, 1));
    const double busy = std::clamp(double(threads) / quota, 0.0, 1.0);
    f.busy_cores = std::max(busy * quota, 1e-3);
    if (m_profile) {
        f.idle_watts = m_profile->watts(0.0);
        f.busy_watts = m_profile->watts(busy);
        f.source = QStringLiteral("estimated: ") + QString::fromStdString(m_profile->id);
    }
    if (idle.powerMeasured() && idle.power_watts) {
        f.idle_watts = *idle.power_watts;
        f.source = idle.power_source;
    }
    return f;
}

} // namespace edgetrain::net

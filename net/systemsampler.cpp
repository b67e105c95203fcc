#include "systemsampler.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QSysInfo>
#include <QThread>

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

QCborMap SystemSample::toCbor() const
{
    QCborMap m;
    m.insert(QStringLiteral("cpu_percent"), cpu_percent);
    m.insert(QStringLiteral("agent_cpu_percent"), agent_cpu_percent);
    m.insert(QStringLiteral("agent_rss_bytes"), qint64(agent_rss_bytes));
    m.insert(QStringLiteral("memory_total_bytes"), qint64(memory_total_bytes));
    m.insert(QStringLiteral("memory_available_bytes"), qint64(memory_available_bytes));
    m.insert(QStringLiteral("net_rx_bytes_per_second"), net_rx_bytes_per_second);
    m.insert(QStringLiteral("net_tx_bytes_per_second"), net_tx_bytes_per_second);
    m.insert(QStringLiteral("load1"), load1);
    if (cpu_mhz)
        m.insert(QStringLiteral("cpu_mhz"), *cpu_mhz);
    if (temperature_c)
        m.insert(QStringLiteral("temperature_c"), *temperature_c);
    if (!training.isEmpty())
        m.insert(QStringLiteral("training"), training);
    return m;
}

SystemSample SystemSample::fromCbor(const QCborMap &m)
{
    SystemSample s;
    s.cpu_percent = m.value(QStringLiteral("cpu_percent")).toDouble();
    s.agent_cpu_percent = m.value(QStringLiteral("agent_cpu_percent")).toDouble();
    s.agent_rss_bytes = m.value(QStringLiteral("agent_rss_bytes")).toInteger();
    s.memory_total_bytes = m.value(QStringLiteral("memory_total_bytes")).toInteger();
    s.memory_available_bytes = m.value(QStringLiteral("memory_available_bytes")).toInteger();
    s.training = m.value(QStringLiteral("training")).toMap();
    s.net_rx_bytes_per_second = m.value(QStringLiteral("net_rx_bytes_per_second")).toDouble();
    s.net_tx_bytes_per_second = m.value(QStringLiteral("net_tx_bytes_per_second")).toDouble();
    s.load1 = m.value(QStringLiteral("load1")).toDouble();
    if (m.contains(QStringLiteral("cpu_mhz")))
        s.cpu_mhz = m.value(QStringLiteral("cpu_mhz")).toDouble();
    if (m.contains(QStringLiteral("temperature_c")))
        s.temperature_c = m.value(QStringLiteral("temperature_c")).toDouble();
    return s;
}

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

SystemSampler::SystemSampler() : m_last(read()) {}

SystemSampler::Counters SystemSampler::read()
{
    Counters c;
    c.nanoseconds = monotonicNanoseconds();
    const QList<QByteArray> cpu =
        readFile(QStringLiteral("/proc/stat")).split('\n').value(0).simplified().split(' ');
    // cpu user nice system idle iowait irq softirq steal
    for (int i = 1; i < cpu.size() && i <= 8; ++i) {
        const std::uint64_t v = cpu[i].toULongLong();
        c.cpu_total += v;
        if (i != 4 && i != 5)
            c.cpu_busy += v;
    }
    const QByteArray self = readFile(QStringLiteral("/proc/self/stat"));
    const QList<QByteArray> fields = self.mid(self.lastIndexOf(')') + 2).split(' ');
    c.agent_ticks = fields.value(11).toULongLong() + fields.value(12).toULongLong(); // utime, stime
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
    if (seconds > 0) {
        s.net_rx_bytes_per_second = double(now.rx - m_last.rx) / seconds;
        s.net_tx_bytes_per_second = double(now.tx - m_last.tx) / seconds;
    }
    m_last = now;
    const QByteArray meminfo = readFile(QStringLiteral("/proc/meminfo"));
    s.memory_total_bytes = meminfoBytes(meminfo, "MemTotal:");
    s.memory_available_bytes = meminfoBytes(meminfo, "MemAvailable:");
    s.agent_rss_bytes = meminfoBytes(readFile(QStringLiteral("/proc/self/status")), "VmRSS:");
    s.load1 = readFile(QStringLiteral("/proc/loadavg")).split(' ').value(0).toDouble();
    bool ok = false;
    const double khz =
        readFile(QStringLiteral("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq"))
            .trimmed()
            .toDouble(&ok);
    if (ok)
        s.cpu_mhz = khz / 1000.0;
    const double milli =
        readFile(QStringLiteral("/sys/class/thermal/thermal_zone0/temp")).trimmed().toDouble(&ok);
    if (ok)
        s.temperature_c = milli / 1000.0;
    return s;
}

} // namespace edgetrain::net

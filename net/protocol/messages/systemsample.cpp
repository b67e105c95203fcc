#include "net/protocol/messages/systemsample.h"

#include "net/protocol/cborfield.h"

namespace edgetrain::net {

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
    m.insert(QStringLiteral("agent_rx_bytes_per_second"), agent_rx_bytes_per_second);
    m.insert(QStringLiteral("agent_tx_bytes_per_second"), agent_tx_bytes_per_second);
    m.insert(QStringLiteral("load1"), load1);
    if (cpu_mhz)
        m.insert(QStringLiteral("cpu_mhz"), *cpu_mhz);
    if (temperature_c)
        m.insert(QStringLiteral("temperature_c"), *temperature_c);
    if (training)
        m.insert(QStringLiteral("training"), training->toCbor());
    if (power_watts) {
        m.insert(QStringLiteral("power_watts"), *power_watts);
        m.insert(QStringLiteral("power_source"), power_source);
    }
    m.insert(QStringLiteral("energy_joules"), energy_joules);
    return m;
}

SystemSample SystemSample::fromCbor(const QCborMap &m)
{
    SystemSample s;
    s.cpu_percent = m.value(QStringLiteral("cpu_percent")).toDouble();
    s.agent_cpu_percent = m.value(QStringLiteral("agent_cpu_percent")).toDouble();
    s.agent_rss_bytes = cborInteger(m.value(QStringLiteral("agent_rss_bytes")));
    s.memory_total_bytes = cborInteger(m.value(QStringLiteral("memory_total_bytes")));
    s.memory_available_bytes = cborInteger(m.value(QStringLiteral("memory_available_bytes")));
    if (const QCborValue training = m.value(QStringLiteral("training")); training.isMap())
        s.training = TrainingStatus::fromCbor(training.toMap());
    s.net_rx_bytes_per_second = m.value(QStringLiteral("net_rx_bytes_per_second")).toDouble();
    s.net_tx_bytes_per_second = m.value(QStringLiteral("net_tx_bytes_per_second")).toDouble();
    // A node from before these counters: its interfaces' figures stand in.
    s.agent_rx_bytes_per_second =
        m.value(QStringLiteral("agent_rx_bytes_per_second")).toDouble(s.net_rx_bytes_per_second);
    s.agent_tx_bytes_per_second =
        m.value(QStringLiteral("agent_tx_bytes_per_second")).toDouble(s.net_tx_bytes_per_second);
    s.load1 = m.value(QStringLiteral("load1")).toDouble();
    if (m.contains(QStringLiteral("cpu_mhz")))
        s.cpu_mhz = m.value(QStringLiteral("cpu_mhz")).toDouble();
    if (m.contains(QStringLiteral("temperature_c")))
        s.temperature_c = m.value(QStringLiteral("temperature_c")).toDouble();
    if (m.contains(QStringLiteral("power_watts"))) {
        s.power_watts = m.value(QStringLiteral("power_watts")).toDouble();
        s.power_source = m.value(QStringLiteral("power_source")).toString().left(64);
    }
    s.energy_joules = m.value(QStringLiteral("energy_joules")).toDouble();
    return s;
}

} // namespace edgetrain::net

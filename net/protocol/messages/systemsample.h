#pragma once

#include "net/protocol/messages/trainingstatus.h"

#include <QCborMap>
#include <QString>

#include <cstdint>
#include <optional>

namespace edgetrain::net {

/** One reading of a device, as the node streams it about once a second ("metrics"; SystemSampler
 *  takes it). Read leniently: a reading is shown, never acted on, so a field of the wrong type
 *  reads as its default. */
struct SystemSample
{
    double cpu_percent = 0.0;       // whole device, 0-100, since the previous sample
    double agent_cpu_percent = 0.0; // this process, as a share of the whole device
    std::int64_t agent_rss_bytes = 0;
    std::int64_t memory_total_bytes = 0;
    std::int64_t memory_available_bytes = 0;
    double net_rx_bytes_per_second = 0.0; // every interface but loopback
    double net_tx_bytes_per_second = 0.0;
    /** This agent's own traffic: the payload its TCP sockets (control channel, gloo's pairs,
     *  shipments) received and sent, loopback included (TCP_INFO of every socket, each sample).
     *  On a machine that runs several nodes (the demo, plain local nodes) this, not the
     *  interfaces, is each node's traffic. What a socket moves between the last sample and its
     *  close is not seen (the agent's connections are long-lived). */
    double agent_rx_bytes_per_second = 0.0;
    double agent_tx_bytes_per_second = 0.0;
    double load1 = 0.0;
    std::optional<double> cpu_mhz;       // where cpufreq is exposed (not on an emulated device)
    std::optional<double> temperature_c; // where a thermal zone exists (the same)
    /** The device's power since the previous sample: measured where the device exposes it
     *  (powercap/RAPL energy counters, hwmon power sensors), else estimated from its device
     *  profile's power model at this CPU utilisation and clock; absent when neither is there. */
    std::optional<double> power_watts;
    QString power_source;       // "rapl", "hwmon" (measured) or "estimated: <profile id>"
    double energy_joules = 0.0; // the agent's running total of power_watts x time since it started
    bool powerMeasured() const
    {
        return power_source == QLatin1String("rapl") || power_source == QLatin1String("hwmon");
    }
    /** The job's progress while the node has one; absent when idle (and from a body whose
     *  "training" is not a map). */
    std::optional<TrainingStatus> training;

    QCborMap toCbor() const;
    static SystemSample fromCbor(const QCborMap &map);
};

} // namespace edgetrain::net

#pragma once

#include "app/session/session.h"
#include "devicechart.h"

namespace edgetrain::ui {

/** The training charts of one run, in a fixed order; one colour per device in all of them. */
struct TrainingCharts
{
    DeviceChart *cpu, *memory, *network, *power, *loss, *accuracy, *speed;
    std::vector<DeviceChart *> all() const
    {
        return {cpu, memory, network, power, loss, accuracy, speed};
    }
    /** The six of the report's training page (its power figures are in its energy table). */
    std::vector<DeviceChart *> reportPage() const
    {
        return {cpu, memory, network, loss, accuracy, speed};
    }
    static TrainingCharts create(QWidget *parent);
    /** CPU, memory (the training process's RSS; the whole device's for a session recorded
     *  before the RSS was, as load() finds, and the chart's title says which), network,
     *  power. */
    void add(const app::MetricRow &row);
    void add(const app::ProgressRow &row);    // loss, accuracy (by epoch), throughput (over time)
    void add(const net::ClusterEpoch &epoch); // the validation loss and accuracy, dashed
    /** The plan's predicted peak of a training step (the engine's tensors), dashed on the
     *  memory chart beside what the devices report; negative: none. */
    void setPlannedMemory(double bytes);
    /** Says on the power chart why it is empty: the devices that report no power and their
     *  architectures (from `session`'s nodes). */
    void explainPower(const app::Session &session);
    void flush();
    void clear();
    /** The order of a run's device colours, live and reopened alike: the training's nodes by
     *  name, then any other device with readings (one released during the run) by name. */
    static QStringList deviceOrder(const app::Session &session);
    /** Gives the devices their colours in deviceOrder(session) in every chart. */
    void orderDevices(const app::Session &session);
    /** Fills the charts from a session's recorded readings (reports, reopened sessions). */
    void load(const app::Session &session);

private:
    void setMemoryMeaning(bool wholeDevice);
    bool m_wholeDevice = false;
    double m_plannedBytes = -1;
    std::map<DeviceChart *, std::vector<QPointF>> m_validation; // loss, accuracy: by epoch
};

} // namespace edgetrain::ui

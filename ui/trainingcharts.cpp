#include "trainingcharts.h"

#include <QObject>

#include <algorithm>
#include <set>

namespace edgetrain::ui {

TrainingCharts TrainingCharts::create(QWidget *parent)
{
    TrainingCharts c;
    c.cpu = new DeviceChart(QStringLiteral("CPU"), QStringLiteral("% of the device"), parent);
    c.cpu->setFixedMax(100);
    c.memory = new DeviceChart(QString(), QString(), parent);
    c.memory->setValues(DeviceChart::Values::Bytes);
    c.setMemoryMeaning(false);
    c.network = new DeviceChart(QStringLiteral("Network: received (solid), sent (dashed)"),
                                QString(), parent);
    c.network->setValues(DeviceChart::Values::BytesPerSecond);
    // measured where a sensor exposes it, else the device profile's estimate (the Train page's
    // device table says which)
    c.power = new DeviceChart(QStringLiteral("Power"), QStringLiteral("W"), parent);
    c.loss = new DeviceChart(QStringLiteral("Training loss, mean of each epoch"),
                             QStringLiteral("loss"), parent);
    c.loss->setXAxis(DeviceChart::XAxis::Epoch);
    c.accuracy = new DeviceChart(QStringLiteral("Training accuracy, mean of each epoch"),
                                 QStringLiteral("%"), parent);
    c.accuracy->setXAxis(DeviceChart::XAxis::Epoch);
    c.accuracy->setFixedMax(100);
    c.speed = new DeviceChart(QStringLiteral("Throughput"), QStringLiteral("images/s"), parent);
    const auto colors = std::make_shared<std::map<QString, int>>();
    for (DeviceChart *chart : c.all())
        chart->sharePalette(colors);
    return c;
}

void TrainingCharts::setMemoryMeaning(bool wholeDevice)
{
    m_wholeDevice = wholeDevice;
    // The node's agent is the training process: its RSS is what the plan's prediction is about.
    memory->setTitle(wholeDevice ? QStringLiteral("Memory in use on the whole device")
                                 : QStringLiteral("Memory of the training process (RSS)"));
}

void TrainingCharts::add(const app::MetricRow &m)
{
    cpu->append(m.node, m.seconds, m.cpuPercent);
    // One chart never mixes the two: a reading without the process's memory (a session from
    // before it was recorded) is left out of a chart of the processes'.
    if (m_wholeDevice)
        memory->append(m.node, m.seconds, m.memoryUsedBytes);
    else if (m.processRssBytes >= 0)
        memory->append(m.node, m.seconds, m.processRssBytes);
    else
        memory->addDevice(m.node);
    network->append(m.node, m.seconds, m.rxBytesPerSecond, 0);
    network->append(m.node, m.seconds, m.txBytesPerSecond, 1);
    if (m.powerWatts >= 0)
        power->append(m.node, m.seconds, m.powerWatts);
    else
        power->addDevice(m.node); // its colour stays its own in the other charts
}

void TrainingCharts::add(const app::ProgressRow &p)
{
    loss->append(p.node, p.epoch, p.loss);
    accuracy->append(p.node, p.epoch, 100 * p.accuracy);
    speed->append(p.node, p.seconds, p.imagesPerSecond);
}

void TrainingCharts::add(const net::ClusterEpoch &e)
{
    const QString name = QStringLiteral("validation");
    if (e.test_accuracy < 0)
        return;
    auto addPoint = [&](DeviceChart *chart, double value) {
        m_validation[chart].emplace_back(e.epoch, value);
        chart->setReference(name, m_validation[chart]);
    };
    addPoint(loss, e.test_loss);
    addPoint(accuracy, 100 * e.test_accuracy);
}

void TrainingCharts::setPlannedMemory(double bytes)
{
    m_plannedBytes = bytes;
    memory->setReference(QStringLiteral("plan: peak of a step"),
                         bytes > 0 ? std::vector<QPointF>{QPointF(0, bytes)}
                                   : std::vector<QPointF>{});
}

void TrainingCharts::explainPower(const app::Session &session)
{
    std::set<QString> silent, reporting;
    for (const app::MetricRow &m : session.training.metrics)
        (m.powerWatts >= 0 ? reporting : silent).insert(m.node);
    QStringList names, arches;
    for (const QString &node : silent) {
        if (reporting.count(node))
            continue;
        names << node;
        for (const app::SessionNode &n : session.nodes)
            if (n.name == node && !n.arch.isEmpty() && !arches.contains(n.arch))
                arches << n.arch;
    }
    if (names.isEmpty()) {
        power->setNote(QString());
        return;
    }
    power->setNote(
        QObject::tr("No power reading from %1: no power sensor, and no power model for %2 "
                    "devices. Add a device profile (%3) to estimate their power.")
            .arg(names.join(QStringLiteral(", ")),
                 arches.isEmpty() ? QObject::tr("these") : arches.join(QStringLiteral(", ")))
            // a word joiner after each hyphen: the option is not split across lines
            .arg(QStringLiteral("edgetrain-node --device-profile")
                     .replace(QLatin1Char('-'), QStringLiteral("-\u2060"))));
}

void TrainingCharts::flush()
{
    for (DeviceChart *c : all())
        c->flush();
}

void TrainingCharts::clear()
{
    for (DeviceChart *c : all())
        c->clear();
    m_validation.clear();
    setMemoryMeaning(false);
    setPlannedMemory(m_plannedBytes);
    power->setNote(QString());
}

QStringList TrainingCharts::deviceOrder(const app::Session &session)
{
    QStringList order = session.training.nodes;
    order.sort(); // the legends in the order of the names
    std::set<QString> others;
    for (const app::MetricRow &m : session.training.metrics)
        others.insert(m.node);
    for (const app::ProgressRow &p : session.training.progress)
        others.insert(p.node);
    for (const QString &name : others)
        if (!order.contains(name))
            order << name;
    return order;
}

void TrainingCharts::orderDevices(const app::Session &session)
{
    const QStringList order = deviceOrder(session);
    for (DeviceChart *c : all())
        c->orderDevices(order);
}

void TrainingCharts::load(const app::Session &session)
{
    m_plannedBytes = -1; // another session's plan is not this one's
    clear();
    // The run's devices first, so each has the same colour in every chart.
    orderDevices(session);
    setMemoryMeaning(std::any_of(session.training.metrics.begin(), session.training.metrics.end(),
                                 [](const app::MetricRow &m) { return m.processRssBytes < 0; }));
    for (const app::MetricRow &m : session.training.metrics) {
        add(m);
        // Sessions from before progress.csv: the training curves from the device readings.
        if (session.training.progress.empty() && m.phase == QLatin1String("training") &&
            m.epoch > 0)
            add(app::ProgressRow{m.seconds, m.node, m.epoch, 0, m.loss, m.accuracy,
                                 m.imagesPerSecond});
    }
    for (const app::ProgressRow &p : session.training.progress)
        add(p);
    for (const net::ClusterEpoch &e : session.training.epochs)
        add(e);
    explainPower(session);
    for (const auto &e : session.training.events) {
        const QString &name = e.node.name;
        if (!name.isEmpty() && (net::takesNodeOut(e.kind) || net::bringsNodeBack(e.kind)))
            for (DeviceChart *c : all())
                c->setLost(name, net::takesNodeOut(e.kind));
    }
    flush();
}

} // namespace edgetrain::ui

#include "trainpage.h"

#include "common.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QListWidget>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace edgetrain::ui {

namespace {
enum Column { Device, State, Phase, Epoch, Loss, Accuracy, Speed, Cpu, Power, Energy, Columns };
}

TrainPage::TrainPage(app::Workflow *workflow, QWidget *parent)
    : QWidget(parent), m_workflow(workflow)
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("6  Train & monitor"),
        tr("The student trains data-parallel on the devices; each line is one device. A device "
           "that drops out is shown dotted and the others carry on from the last synchronised "
           "state."),
        this));
    auto *bar = new QHBoxLayout;
    m_start = new QPushButton(tr("Start training"), this);
    m_stop = new QPushButton(tr("Stop"), this);
    m_start->setDefault(true);
    bar->addWidget(m_start);
    bar->addWidget(m_stop);
    bar->addWidget(new TaskStrip(workflow, app::Task::Training, this), 1);
    layout->addLayout(bar);

    auto *top = new QHBoxLayout;
    m_devices = new QTableWidget(0, Columns, this);
    m_devices->setHorizontalHeaderLabels({tr("Device"), tr("State"), tr("Phase"), tr("Epoch"),
                                          tr("Loss"), tr("Accuracy"), tr("Images/s"), tr("CPU %"),
                                          tr("Power"), tr("Energy")});
    m_devices->horizontalHeaderItem(Power)->setToolTip(
        tr("Measured where the device exposes it (RAPL, hwmon), else estimated from its device "
           "profile at its CPU load (\"est.\")"));
    m_devices->verticalHeader()->hide();
    m_devices->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_devices->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_devices->horizontalHeader()->setSectionResizeMode(Device, QHeaderView::ResizeToContents);
    m_devices->verticalHeader()->setDefaultSectionSize(21);
    m_devices->setMaximumHeight(112);
    top->addWidget(m_devices, 3);
    m_events = new QListWidget(this);
    m_events->setMaximumHeight(112);
    m_events->setWordWrap(true);
    m_events->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_events->setToolTip(tr("What happened to the nodes: lost, regrouped, rebalanced, rejoined"));
    top->addWidget(m_events, 2);
    layout->addLayout(top);

    auto *grid = new QGridLayout;
    m_charts = TrainingCharts::create(this);
    const auto all = m_charts.all();
    for (int i = 0; i < int(all.size()); ++i)
        grid->addWidget(all[std::size_t(i)], i / 3, i % 3);
    layout->addLayout(grid, 1);

    // A burst of readings costs one repaint per chart, and the charts take turns (one every
    // 100 ms) so that no single tick of the GUI thread repaints all six.
    m_flush.setInterval(100);
    connect(&m_flush, &QTimer::timeout, this, [this] {
        const auto charts = m_charts.all();
        charts[m_nextFlush++ % charts.size()]->flush();
    });
    m_flush.start();

    connect(m_start, &QPushButton::clicked, this, [this] {
        m_charts.clear();
        m_latest.clear();
        m_lost.clear();
        m_events->clear();
        m_devices->setRowCount(0);
        m_workflow->startTraining();
    });
    connect(m_stop, &QPushButton::clicked, m_workflow, &app::Workflow::stopTraining);
    connect(m_workflow, &app::Workflow::metricsAdded, this, &TrainPage::onMetrics);
    connect(m_workflow, &app::Workflow::progressAdded, this,
            [this](const app::ProgressRow &p) { m_charts.add(p); });
    connect(m_workflow, &app::Workflow::clusterEvent, this, [this](const net::ClusterEvent &e) {
        const QString name = e.node.name;
        m_events->addItem(QStringLiteral("%1 s  %2 %3: %4")
                              .arg(e.seconds, 0, 'f', 1)
                              .arg(name, net::eventKindName(e.kind), e.message));
        m_events->scrollToBottom();
        if (net::takesNodeOut(e.kind))
            m_lost.insert(name);
        else if (net::bringsNodeBack(e.kind))
            m_lost.erase(name);
        for (DeviceChart *c : m_charts.all())
            c->setLost(name, m_lost.count(name) > 0);
    });
    connect(m_workflow, &app::Workflow::taskStarted, this, &TrainPage::updateButtons);
    connect(m_workflow, &app::Workflow::taskFinished, this, &TrainPage::updateButtons);
    connect(m_workflow, &app::Workflow::sessionChanged, this, &TrainPage::reload);
    reload();
}

void TrainPage::updateButtons()
{
    m_start->setEnabled(m_workflow->busy() == app::Task::None);
    m_stop->setEnabled(m_workflow->isTraining());
}

void TrainPage::reload()
{
    const app::Session &s = m_workflow->session();
    m_charts.load(s);
    m_latest.clear();
    m_lost.clear();
    m_events->clear();
    m_devices->setRowCount(0);
    for (const auto &e : s.training.events)
        m_events->addItem(QStringLiteral("%1 s  %2 %3: %4")
                              .arg(e.seconds, 0, 'f', 1)
                              .arg(e.node.name, net::eventKindName(e.kind), e.message));
    // The same rule as live: lost or failed takes a device out, rejoining brings it back.
    for (const auto &e : s.training.events) {
        const QString &name = e.node.name;
        if (net::takesNodeOut(e.kind))
            m_lost.insert(name);
        else if (net::bringsNodeBack(e.kind))
            m_lost.erase(name);
    }
    for (const app::MetricRow &m : s.training.metrics)
        m_latest[m.node] = m;
    showDevices();
    updateButtons();
}

void TrainPage::onMetrics(const app::MetricRow &m)
{
    m_charts.add(m);
    m_latest[m.node] = m;
    showDevices();
}

void TrainPage::showDevices()
{
    m_devices->setRowCount(int(m_latest.size()));
    int row = 0;
    for (const auto &[name, r] : m_latest) {
        const bool lost = m_lost.count(name) > 0;
        const QString values[Columns] = {
            name,
            lost ? tr("lost") : tr("connected"),
            r.phase,
            QString::number(r.epoch),
            r.epoch > 0 ? QString::number(r.loss, 'f', 4) : QString(),
            r.epoch > 0 ? QString::number(100 * r.accuracy, 'f', 1) + QStringLiteral(" %")
                        : QString(),
            QString::number(r.imagesPerSecond, 'f', 0),
            QString::number(r.cpuPercent, 'f', 0),
            r.powerWatts < 0 ? QString()
                             : QString::number(r.powerWatts, 'f', 1) +
                                   (r.powerMeasured ? tr(" W") : tr(" W est.")),
            r.powerWatts < 0 ? QString() : QString::number(r.energyJoules, 'f', 0) + tr(" J")};
        for (int c = 0; c < Columns; ++c) {
            auto *item = new QTableWidgetItem(values[c]);
            if (c == State && lost)
                item->setForeground(QColor(0xb0, 0x00, 0x20));
            m_devices->setItem(row, c, item);
        }
        ++row;
    }
}

} // namespace edgetrain::ui

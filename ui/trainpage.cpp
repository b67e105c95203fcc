#include "trainpage.h"

#include "app/report/palette.h"
#include "common.h"

#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QListWidget>
#include <QPushButton>
#include <QResizeEvent>
#include <QScrollArea>
#include <QTableWidget>
#include <QVBoxLayout>

namespace edgetrain::ui {

namespace {

enum Column { Device, State, Phase, Epoch, Loss, Accuracy, Speed, Cpu, Power, Energy, Columns };

constexpr int kChartWidth = 480; // the narrowest a chart gets before a row holds one fewer

/** "1:05" since the run started. */
QString clock(double seconds)
{
    const int s = int(std::lround(std::max(0.0, seconds)));
    return QStringLiteral("%1:%2").arg(s / 60).arg(s % 60, 2, 10, QLatin1Char('0'));
}

/** What happened to a node or the group, in words. */
QString eventText(const net::ClusterEvent &e)
{
    const QString who = e.node.name, why = e.message;
    QString what;
    switch (e.kind) {
    case net::ClusterEventKind::Lost:
        what = QObject::tr("%1 dropped out; the others carry on").arg(who);
        break;
    case net::ClusterEventKind::Failed:
        what = QObject::tr("%1 left the run").arg(who);
        break;
    case net::ClusterEventKind::Rejoined:
        what = QObject::tr("%1 is back and trains from the next epoch").arg(who);
        break;
    case net::ClusterEventKind::Regrouped:
        what = QObject::tr("the devices formed a new group");
        break;
    case net::ClusterEventKind::Rebalanced:
        what = QObject::tr("each device's share of a batch now follows its speed");
        break;
    case net::ClusterEventKind::CollectiveFailed:
        what = who.isEmpty() ? QObject::tr("a synchronisation between the devices failed")
                             : QObject::tr("%1 saw a synchronisation fail").arg(who);
        break;
    case net::ClusterEventKind::Reassigned:
        what = QObject::tr("the samples a device had left went to the others");
        break;
    }
    return QStringLiteral("%1  %2%3")
        .arg(clock(e.seconds), what, why.isEmpty() ? QString() : QStringLiteral(": ") + why);
}

/** An epoch's figures, in words. */
QString epochText(const net::ClusterEpoch &e, int epochs)
{
    QString text = QObject::tr("Epoch %1 of %2: loss %3, accuracy %4 %")
                       .arg(e.epoch)
                       .arg(epochs)
                       .arg(e.train_loss, 0, 'f', 3)
                       .arg(100 * e.train_accuracy, 0, 'f', 1);
    if (e.test_accuracy >= 0)
        text += QObject::tr(", validation %1 %").arg(100 * e.test_accuracy, 0, 'f', 1);
    return text + QObject::tr(" (%1 s)").arg(e.seconds, 0, 'f', 1);
}

/** How the run ended, in words; empty while none ran or one runs. */
QString endText(const app::TrainingRecord &t)
{
    const QString epochs =
        counted(qint64(t.epochs.size()), QObject::tr("epoch"), QObject::tr("epochs"));
    const QString kept = t.keptEpoch > 0
                             ? QObject::tr("; kept the weights of epoch %1").arg(t.keptEpoch)
                             : QString();
    switch (t.state) {
    case app::TrainingRecord::State::Finished:
        return QObject::tr("Training finished after %1%2").arg(epochs, kept);
    case app::TrainingRecord::State::Stopped:
        return QObject::tr("Training stopped after %1%2").arg(epochs, kept);
    case app::TrainingRecord::State::Failed:
        return QObject::tr("Training failed: %1").arg(t.error);
    case app::TrainingRecord::State::None:
    case app::TrainingRecord::State::Running:
        break;
    }
    return QString();
}

} // namespace

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
    // Every column as wide as its words, the last taking what is left: no header or state is
    // cut short.
    m_devices->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_devices->horizontalHeader()->setStretchLastSection(true);
    m_devices->verticalHeader()->setDefaultSectionSize(21);
    m_devices->setMaximumHeight(112);
    top->addWidget(m_devices, 3);
    m_events = new QListWidget(this);
    m_events->setMaximumHeight(112);
    m_events->setWordWrap(true);
    m_events->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_events->setToolTip(tr("The run's events: each epoch's figures, devices that drop out or "
                            "rejoin, how the run ended"));
    top->addWidget(m_events, 2);
    layout->addLayout(top);

    // The charts scroll rather than shrink: below a chart's minimum its axes' words are cut.
    auto *scroll = new QScrollArea(this);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    auto *chartArea = new QWidget(scroll);
    m_grid = new QGridLayout(chartArea);
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_charts = TrainingCharts::create(chartArea);
    for (DeviceChart *c : m_charts.all())
        c->setMinimumHeight(250);
    placeCharts(2);
    scroll->setWidget(chartArea);
    layout->addWidget(scroll, 1);

    // A burst of readings costs one repaint per chart, and the charts take turns (one every
    // 100 ms) so that no single tick of the GUI thread repaints all of them.
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
    connect(m_workflow, &app::Workflow::epochFinished, this, [this](const net::ClusterEpoch &e) {
        m_charts.add(e);
        addEvent(epochText(e, m_workflow->session().plan.epochs));
    });
    connect(m_workflow, &app::Workflow::planReady, this, [this](const app::PlanView &v) {
        m_charts.setPlannedMemory(v.error.isEmpty() ? double(v.plan.predicted_peak_bytes) : -1);
    });
    connect(m_workflow, &app::Workflow::clusterEvent, this, [this](const net::ClusterEvent &e) {
        const QString name = e.node.name;
        addEvent(eventText(e));
        // The group's events (regrouped, rebalanced, ...) name no device: no line changes.
        if (name.isEmpty() || !(net::takesNodeOut(e.kind) || net::bringsNodeBack(e.kind)))
            return;
        if (net::takesNodeOut(e.kind))
            m_lost.insert(name);
        else
            m_lost.erase(name);
        for (DeviceChart *c : m_charts.all())
            c->setLost(name, m_lost.count(name) > 0);
    });
    connect(m_workflow, &app::Workflow::taskStarted, this, [this](app::Task task) {
        updateButtons();
        if (task != app::Task::Training)
            return;
        // The devices' colours in the order of their names, as when the run is reopened, not
        // in the order their first readings come.
        m_charts.orderDevices(m_workflow->session());
    });
    // The planner picks the devices that train: their colours as the reopened run gives them.
    connect(m_workflow, &app::Workflow::clusterPlanChanged, this, [this] {
        if (m_workflow->isTraining())
            m_charts.orderDevices(m_workflow->session());
    });
    connect(m_workflow, &app::Workflow::taskFinished, this,
            [this](app::Task task, bool, const QString &message) {
                updateButtons();
                if (task != app::Task::Training)
                    return;
                m_charts.explainPower(m_workflow->session());
                if (!message.isEmpty())
                    addEvent(message);
            });
    connect(m_workflow, &app::Workflow::sessionChanged, this, &TrainPage::reload);
    reload();
}

void TrainPage::placeCharts(int columns)
{
    if (columns == m_columns)
        return;
    m_columns = columns;
    const auto all = m_charts.all();
    for (DeviceChart *c : all)
        m_grid->removeWidget(c);
    for (int i = 0; i < int(all.size()); ++i)
        m_grid->addWidget(all[std::size_t(i)], i / columns, i % columns);
    for (int c = 0; c < 4; ++c)
        m_grid->setColumnStretch(c, c < columns ? 1 : 0);
}

void TrainPage::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    placeCharts(std::clamp(event->size().width() / kChartWidth, 1, 3));
}

void TrainPage::addEvent(const QString &text, bool muted)
{
    // The placeholder goes once something happened.
    if (m_events->count() == 1 && m_events->item(0)->data(Qt::UserRole).toBool())
        m_events->clear();
    auto *item = new QListWidgetItem(text, m_events);
    item->setToolTip(text);
    item->setData(Qt::UserRole, muted);
    if (muted)
        item->setForeground(app::palette::kMutedText);
    m_events->scrollToBottom();
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
    // The epochs and the devices' events in the order they came: an epoch ends its seconds
    // after the one before.
    std::vector<std::pair<double, QString>> events;
    double end = 0;
    for (const net::ClusterEpoch &e : s.training.epochs) {
        end += e.seconds;
        events.emplace_back(end, epochText(e, s.plan.epochs));
    }
    for (const auto &e : s.training.events)
        events.emplace_back(e.seconds, eventText(e));
    std::stable_sort(events.begin(), events.end(),
                     [](const auto &a, const auto &b) { return a.first < b.first; });
    for (const auto &[seconds, text] : events)
        addEvent(text);
    if (const QString ending = endText(s.training); !ending.isEmpty())
        addEvent(ending);
    else if (events.empty())
        addEvent(tr("No run yet. Each epoch's figures, devices that drop out or rejoin, and how "
                    "the run ended will be listed here."),
                 true);
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
    const bool added = !m_latest.count(m.node);
    m_latest[m.node] = m;
    if (added)
        m_charts.explainPower(m_workflow->session());
    showDevices();
}

void TrainPage::showDevices()
{
    m_devices->setRowCount(int(m_latest.size()));
    const QString noPower = tr("This device reports no power: it has no power sensor and its node "
                               "was started without a device profile (--device-profile)");
    bool anyPower = false;
    int row = 0;
    for (const auto &[name, r] : m_latest) {
        const bool lost = m_lost.count(name) > 0, power = r.powerWatts >= 0;
        anyPower = anyPower || power;
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
            !power ? QStringLiteral("–")
                   : QString::number(r.powerWatts, 'f', 1) +
                         (r.powerMeasured ? tr(" W") : tr(" W est.")),
            !power ? QStringLiteral("–") : QString::number(r.energyJoules, 'f', 0) + tr(" J")};
        for (int c = 0; c < Columns; ++c) {
            auto *item = new QTableWidgetItem(values[c]);
            if (c == State && lost)
                item->setForeground(app::palette::kError);
            if ((c == Power || c == Energy) && !power)
                item->setToolTip(noPower);
            m_devices->setItem(row, c, item);
        }
        ++row;
    }
    // No device with a power figure: the columns would only repeat "–"; the power chart says why.
    m_devices->setColumnHidden(Power, !anyPower);
    m_devices->setColumnHidden(Energy, !anyPower);
}

} // namespace edgetrain::ui

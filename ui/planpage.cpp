#include "planpage.h"

#include "app/report/palette.h"
#include "charts.h"
#include "common.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

namespace edgetrain::ui {

namespace {
constexpr std::int64_t kStep = 16 * 1024; // slider resolution: 16 KiB
}

PlanPage::PlanPage(app::Workflow *workflow, QWidget *parent) : QWidget(parent), m_workflow(workflow)
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("5  Plan"),
        tr("What to train and where. The memory budget picks each device's checkpointing "
           "schedule: less memory costs recomputation in the backward pass."),
        this));
    auto *columns = new QHBoxLayout;
    layout->addLayout(columns, 1);

    auto *left = new QVBoxLayout;
    left->addWidget(trainingBox());
    left->addWidget(nodesBox());
    QGroupBox *candidatesBox = this->candidatesBox();
    left->addStretch(1);
    columns->addLayout(left);

    auto *right = new QVBoxLayout;
    right->addWidget(memoryBox(), 1);
    columns->addLayout(right, 1);
    connectControls();
    // Under both columns, the page's width: eight columns of figures.
    candidatesBox->setMaximumHeight(250);
    layout->addWidget(candidatesBox);
    connect(m_workflow, &app::Workflow::planReady, this, &PlanPage::show);
    connect(m_workflow, &app::Workflow::clusterPlanChanged, this, &PlanPage::showCandidates);
    connect(m_workflow, &app::Workflow::sessionChanged, this, &PlanPage::showCandidates);
    connect(&m_workflow->nodes(), &app::NodeRegistry::nodesChanged, this, &PlanPage::refreshNodes);
    connect(m_workflow, &app::Workflow::sessionChanged, this, &PlanPage::loadSettings);
    connect(m_workflow, &app::Workflow::settingsChanged, this, [this](app::Settings part) {
        if (part == app::Settings::Plan && !m_storing)
            loadSettings();
    });
    loadSettings();
    showCandidates();
}

QGroupBox *PlanPage::trainingBox()
{
    auto *training = new QGroupBox(tr("Training"), this);
    auto *form = new QFormLayout(training);
    m_model = new QComboBox(training);
    // The full-frame detector trains on a frame dataset, the others on crops (step 3's kind).
    m_model->addItem(QStringLiteral("detector"));
    m_model->setItemData(0, tr("The full-frame student: one pass per frame (frame dataset)"),
                         Qt::ToolTipRole);
    m_model->addItem(QStringLiteral("student"));
    m_model->setItemData(1, tr("The crop classifier slid over the frame (crop dataset)"),
                         Qt::ToolTipRole);
    // Deeper students: residual chains trade memory for recompute under a budget.
    for (const char *name : {"resnet20", "resnet32", "resnet56"})
        m_model->addItem(QString::fromLatin1(name));
    form->addRow(tr("Student model:"), m_model);
    m_batch = new QSpinBox(training);
    m_batch->setRange(1, 65536);
    m_batch->setToolTip(tr("The global batch: each step it is split across the devices by speed"));
    form->addRow(tr("Batch (global):"), m_batch);
    m_epochs = new QSpinBox(training);
    m_epochs->setRange(1, 10000);
    form->addRow(tr("Epochs:"), m_epochs);
    m_lr = new QDoubleSpinBox(training);
    m_lr->setDecimals(4);
    m_lr->setRange(0.0001, 10);
    m_lr->setSingleStep(0.005);
    form->addRow(tr("Learning rate:"), m_lr);
    m_mode = new QComboBox(training);
    m_mode->addItem(tr("Synchronous (allreduce)"), QStringLiteral("sync"));
    m_mode->addItem(tr("Asynchronous (parameter server)"), QStringLiteral("async"));
    m_mode->addItem(tr("Local SGD (model averaging)"), QStringLiteral("local-sgd"));
    form->addRow(tr("Mode:"), m_mode);
    m_staleness = new QSpinBox(training);
    m_staleness->setRange(0, 64);
    form->addRow(tr("Staleness bound:"), m_staleness);
    m_localSteps = new QSpinBox(training);
    m_localSteps->setRange(1, 10000);
    form->addRow(tr("Steps between averages:"), m_localSteps);
    return training;
}

QGroupBox *PlanPage::nodesBox()
{
    auto *nodesBox = new QGroupBox(tr("Devices taking part"), this);
    auto *nodesLayout = new QVBoxLayout(nodesBox);
    m_nodes = new QListWidget(nodesBox);
    m_nodes->setMaximumHeight(110);
    nodesLayout->addWidget(m_nodes);
    // The planner: profile the ticked devices and train on the best cluster of them.
    auto *chooseRow = new QHBoxLayout;
    chooseRow->addWidget(new QLabel(tr("Train on:"), nodesBox));
    m_objective = new QComboBox(nodesBox);
    m_objective->setObjectName(QStringLiteral("clusterObjective"));
    m_objective->addItem(tr("all of them"), QString());
    m_objective->addItem(tr("the fastest cluster of them"), QStringLiteral("time"));
    m_objective->addItem(tr("the cluster using the least energy"), QStringLiteral("energy"));
    m_objective->addItem(tr("the cluster drawing the least power"), QStringLiteral("power"));
    m_objective->addItem(tr("the lowest energy × time (EDP)"), QStringLiteral("edp"));
    m_objective->setToolTip(
        tr("The planner profiles the job on every ticked device (its speed, memory, power and "
           "link), predicts time, power, energy and EDP for every cluster of them, and trains "
           "on the best one; the Train page and the report show the prediction next to the "
           "measurement."));
    chooseRow->addWidget(m_objective, 1);
    nodesLayout->addLayout(chooseRow);
    return nodesBox;
}

QGroupBox *PlanPage::candidatesBox()
{
    // The planner's ranking: of the last comparison ("Compare now"), else of the last run that
    // let it choose: every candidate cluster with its predicted figures, the chosen (or best)
    // one marked, a run's measured training next to it.
    auto *candidatesBox = new QGroupBox(tr("Clusters the planner compared"), this);
    auto *candidatesLayout = new QVBoxLayout(candidatesBox);
    m_candidateSummary = new QLabel(candidatesBox);
    m_candidateSummary->setObjectName(QStringLiteral("candidateSummary"));
    m_candidateSummary->setWordWrap(true);
    candidatesLayout->addWidget(m_candidateSummary);
    // Before training: profile the ticked devices and rank the clusters, nothing trained.
    auto *compareRow = new QHBoxLayout;
    m_compare = new QPushButton(tr("Compare now"), candidatesBox);
    m_compare->setObjectName(QStringLiteral("compareClusters"));
    m_compare->setToolTip(
        tr("Profiles the job on every ticked device (a few steps each, its link and power) and "
           "ranks every cluster of them by the objective chosen under “Train on:”, without "
           "training: what the planner would choose, and what each choice would cost"));
    compareRow->addWidget(m_compare);
    compareRow->addWidget(new TaskStrip(m_workflow, app::Task::ClusterPlan, candidatesBox), 1);
    candidatesLayout->addLayout(compareRow);
    m_candidates = new QTableWidget(0, 8, candidatesBox);
    m_candidates->setObjectName(QStringLiteral("candidateTable"));
    m_candidates->setHorizontalHeaderLabels({tr("Rank"), tr("Devices"), tr("Mode"), tr("Time (s)"),
                                             tr("Power (W)"), tr("Energy (J)"), tr("EDP (J·s)"),
                                             tr("Note")});
    m_candidates->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_candidates->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_candidates->verticalHeader()->hide();
    m_candidates->horizontalHeader()->setStretchLastSection(true);
    m_candidates->setToolTip(tr("Predicted for the whole job; click a heading to sort"));
    candidatesLayout->addWidget(m_candidates, 1);
    return candidatesBox;
}

QGroupBox *PlanPage::memoryBox()
{
    auto *memoryBox = new QGroupBox(tr("Memory budget"), this);
    auto *mem = new QVBoxLayout(memoryBox);
    auto *row = new QHBoxLayout;
    m_device = new QComboBox(memoryBox);
    m_device->setObjectName(QStringLiteral("budgetDevice"));
    m_noBudget = new QCheckBox(tr("no budget"), memoryBox);
    m_slider = new QSlider(Qt::Horizontal, memoryBox);
    m_slider->setRange(0, 100);
    m_budget = new QLabel(memoryBox);
    m_budget->setMinimumWidth(90);
    QFont bold = m_budget->font();
    bold.setBold(true);
    m_budget->setFont(bold);
    row->addWidget(new QLabel(tr("For:"), memoryBox));
    row->addWidget(m_device);
    row->addWidget(m_slider, 1);
    row->addWidget(m_budget);
    row->addWidget(m_noBudget);
    mem->addLayout(row);
    m_batchNote = new QLabel(memoryBox);
    m_batchNote->setWordWrap(true);
    mem->addWidget(m_batchNote);
    auto *result = new QHBoxLayout;
    auto *texts = new QVBoxLayout;
    m_schedule = new QLabel(memoryBox);
    m_schedule->setFont(bold);
    m_schedule->setWordWrap(true);
    m_overhead = new QLabel(memoryBox);
    m_overhead->setWordWrap(true);
    m_warning = new QLabel(memoryBox);
    m_warning->setWordWrap(true);
    m_warning->setStyleSheet(textColour(app::palette::kError));
    m_memory = new QTableWidget(7, 1, memoryBox);
    m_memory->setHorizontalHeaderLabels({tr("Predicted peak")});
    m_memory->setVerticalHeaderLabels({tr("Weights"), tr("Gradients"), tr("Optimizer"),
                                       tr("Activations"), tr("Workspace"), tr("Recompute"),
                                       tr("All at once")});
    m_memory->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_memory->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_memory->setMinimumWidth(200);
    m_memory->setMaximumWidth(240);
    m_memory->verticalHeader()->setDefaultSectionSize(22);
    texts->addWidget(m_schedule);
    texts->addWidget(m_overhead);
    texts->addWidget(m_warning);
    texts->addWidget(m_memory);
    texts->addStretch(1);
    result->addLayout(texts);
    m_chart = new MemoryChart(memoryBox);
    result->addWidget(m_chart, 1);
    mem->addLayout(result, 1);
    return memoryBox;
}

void PlanPage::connectControls()
{
    auto changed = [this] {
        if (m_loading)
            return;
        storeSettings();
        replan();
    };
    connect(m_batch, &QSpinBox::valueChanged, this, changed);
    connect(m_epochs, &QSpinBox::valueChanged, this, changed);
    connect(m_lr, &QDoubleSpinBox::valueChanged, this, changed);
    connect(m_mode, &QComboBox::currentIndexChanged, this, changed);
    connect(m_staleness, &QSpinBox::valueChanged, this, changed);
    connect(m_localSteps, &QSpinBox::valueChanged, this, changed);
    connect(m_model, &QComboBox::currentIndexChanged, this, changed);
    connect(m_nodes, &QListWidget::itemChanged, this, changed);
    connect(m_objective, &QComboBox::currentIndexChanged, this, changed);
    connect(m_compare, &QPushButton::clicked, m_workflow, &app::Workflow::startClusterComparison);
    const auto compareEnabled = [this] {
        m_compare->setEnabled(m_workflow->busy() == app::Task::None &&
                              !m_objective->currentData().toString().isEmpty());
    };
    connect(m_objective, &QComboBox::currentIndexChanged, this, compareEnabled);
    connect(m_workflow, &app::Workflow::taskStarted, this, compareEnabled);
    connect(m_workflow, &app::Workflow::taskFinished, this, compareEnabled);
    compareEnabled();
    connect(m_slider, &QSlider::valueChanged, this, [this] {
        if (!m_loading && m_noBudget->isChecked()) { // moving the slider sets a budget
            const QSignalBlocker block(m_noBudget);
            m_noBudget->setChecked(false);
        }
        onSlider();
    });
    connect(m_noBudget, &QCheckBox::toggled, this, &PlanPage::onSlider);
    connect(m_device, &QComboBox::currentIndexChanged, this, [this] {
        // Show the budget this device has now.
        const app::PlanSettings &p = m_workflow->session().plan;
        const std::int64_t b = device().isEmpty() ? p.budgetAllBytes : p.budgetBytesFor(device());
        m_loading = true;
        m_noBudget->setChecked(b < 0);
        if (b >= 0)
            m_slider->setValue(int(b / kStep));
        m_loading = false;
        onSlider();
    });
}

namespace {
/** A number cell that sorts by its value (QTableWidgetItem compares text); unknown last. */
class NumberItem : public QTableWidgetItem
{
public:
    NumberItem(double value, int decimals, bool known = true)
    {
        if (known) {
            setText(QString::number(value, 'f', decimals));
            setData(Qt::UserRole, value);
        } else {
            setText(QStringLiteral("–"));
        }
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem &other) const override
    {
        const QVariant a = data(Qt::UserRole), b = other.data(Qt::UserRole);
        if (a.isValid() && b.isValid())
            return a.toDouble() < b.toDouble();
        if (a.isValid() != b.isValid())
            return a.isValid();
        return QTableWidgetItem::operator<(other);
    }
};
} // namespace

void PlanPage::showCandidates()
{
    const bool preview = m_workflow->clusterPreview().has_value();
    const auto &plan = preview ? m_workflow->clusterPreview() : m_workflow->session().training.plan;
    m_candidates->setSortingEnabled(false);
    m_candidates->setRowCount(0);
    if (!plan) {
        m_candidateSummary->setText(
            tr("None yet. With “Train on:” set to the fastest cluster, the least energy, power "
               "or EDP, “Compare now” profiles the ticked devices and the planner ranks every "
               "cluster of them here; training does the same first, then trains on the best."));
        return;
    }
    QString summary =
        (preview ? tr("Compared now, by %1, nothing trained: %2 ranked after %3 s of profiling")
                 : tr("Last run, by %1: %2 ranked after %3 s of profiling"))
            .arg(plan->objective)
            .arg(counted(qint64(plan->candidates.size()), tr("candidate"), tr("candidates")))
            .arg(plan->profilingSeconds, 0, 'f', 1);
    if (plan->chosen >= 0 && plan->chosen < int(plan->candidates.size())) {
        const auto &c = plan->candidates[std::size_t(plan->chosen)];
        summary +=
            (preview ? tr("; the best: %1, predicted %2 s") : tr("; chosen: %1, predicted %2 s"))
                .arg(c.nodes.join(u'+'))
                .arg(c.seconds, 0, 'f', 1);
        if (plan->measuredSeconds > 0)
            summary += tr(", measured %1 s").arg(plan->measuredSeconds, 0, 'f', 1);
        if (c.powerKnown) {
            summary += tr("; %1 J predicted").arg(c.joules, 0, 'f', 0);
            if (plan->measuredJoules > 0)
                summary += tr(", %1 J measured").arg(plan->measuredJoules, 0, 'f', 0);
        }
        summary += QLatin1Char('.');
    } else {
        summary += tr("; none could train within the limits.");
    }
    m_candidateSummary->setText(summary);
    m_candidates->setRowCount(int(plan->candidates.size()));
    for (int r = 0; r < int(plan->candidates.size()); ++r) {
        const auto &c = plan->candidates[std::size_t(r)];
        const bool chosen = r == plan->chosen;
        QTableWidgetItem *items[] = {
            new NumberItem(r + 1, 0),
            new QTableWidgetItem(c.nodes.join(u'+')),
            new QTableWidgetItem(c.mode),
            new NumberItem(c.seconds, 1),
            new NumberItem(c.watts, 2, c.powerKnown),
            new NumberItem(c.joules, 0, c.powerKnown),
            new NumberItem(c.edp, 0, c.powerKnown),
            new QTableWidgetItem(chosen ? (preview ? tr("best") : tr("chosen")) : c.whyNot)};
        for (int col = 0; col < 8; ++col) {
            if (chosen) {
                QFont f = items[col]->font();
                f.setBold(true);
                items[col]->setFont(f);
                items[col]->setBackground(QColor(0xe4, 0xf2, 0xe4));
            } else if (!c.whyNot.isEmpty()) {
                items[col]->setForeground(app::palette::kMutedText);
            }
            m_candidates->setItem(r, col, items[col]);
        }
    }
    m_candidates->setSortingEnabled(true);
    m_candidates->sortByColumn(0, Qt::AscendingOrder);
    m_candidates->resizeColumnsToContents();
}

QString PlanPage::device() const
{
    return m_device->currentIndex() <= 0 ? QString() : m_device->currentText();
}

void PlanPage::loadSettings()
{
    m_loading = true;
    const app::PlanSettings &p = m_workflow->session().plan;
    m_model->setCurrentText(p.model);
    m_batch->setValue(p.batch);
    m_epochs->setValue(p.epochs);
    m_lr->setValue(p.lr);
    m_mode->setCurrentIndex(std::max(0, m_mode->findData(p.mode)));
    m_staleness->setValue(p.staleness);
    m_localSteps->setValue(p.localSteps);
    if (m_objective->findData(p.clusterObjective) < 0) // a mix written in the session file
        m_objective->addItem(tr("the best by %1").arg(p.clusterObjective), p.clusterObjective);
    m_objective->setCurrentIndex(std::max(0, m_objective->findData(p.clusterObjective)));
    m_noBudget->setChecked(p.budgetAllBytes < 0);
    m_rangeFor = -1;
    m_loading = false;
    refreshNodes();
    replan();
}

void PlanPage::storeSettings()
{
    app::PlanSettings p = m_workflow->session().plan;
    p.model = m_model->currentText();
    p.batch = m_batch->value();
    p.epochs = m_epochs->value();
    p.lr = m_lr->value();
    p.mode = m_mode->currentData().toString();
    p.staleness = m_staleness->value();
    p.localSteps = m_localSteps->value();
    p.clusterObjective = m_objective->currentData().toString();
    m_staleness->setEnabled(p.mode == QLatin1String("async"));
    m_localSteps->setEnabled(p.mode == QLatin1String("local-sgd"));
    QStringList chosen;
    for (int i = 0; i < m_nodes->count(); ++i)
        if (m_nodes->item(i)->checkState() == Qt::Checked)
            chosen.append(m_nodes->item(i)->text());
    p.nodes = chosen;
    store(p);
}

void PlanPage::store(const app::PlanSettings &p)
{
    m_storing = true; // this page shows these values already
    m_workflow->setPlanSettings(p);
    m_storing = false;
}

void PlanPage::refreshNodes()
{
    const QStringList paired = m_workflow->nodes().pairedNodes();
    QStringList shown;
    for (int i = 0; i < m_nodes->count(); ++i)
        shown.append(m_nodes->item(i)->text());
    if (shown == paired)
        return;
    m_loading = true;
    const app::PlanSettings &p = m_workflow->session().plan;
    m_nodes->clear();
    for (const QString &name : paired) {
        auto *item = new QListWidgetItem(name, m_nodes);
        item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
        // A device paired since the list was last shown takes part unless the user says not.
        item->setCheckState(p.nodes.isEmpty() || p.nodes.contains(name) || !shown.contains(name)
                                ? Qt::Checked
                                : Qt::Unchecked);
    }
    const QString current = m_device->currentText();
    m_device->clear();
    m_device->addItem(tr("all devices"));
    m_device->addItems(paired);
    m_device->setCurrentText(current);
    m_loading = false;
    storeSettings();
    replan();
}

std::int64_t PlanPage::budgetFromSlider() const
{
    return m_noBudget->isChecked() ? -1 : std::int64_t(m_slider->value()) * kStep;
}

void PlanPage::onSlider()
{
    if (m_loading)
        return;
    const std::int64_t budget = budgetFromSlider();
    m_slider->setEnabled(!m_noBudget->isChecked());
    m_budget->setText(budget < 0 ? tr("none") : formatBytes(double(budget)));
    app::PlanSettings p = m_workflow->session().plan;
    if (device().isEmpty()) {
        p.budgetAllBytes = budget;
        p.deviceBudgetBytes.clear(); // one budget for all devices
    } else {
        p.deviceBudgetBytes[device()] = budget;
    }
    store(p);
    m_workflow->requestPlan(m_workflow->planRequestFor(budget));
}

void PlanPage::replan()
{
    if (m_loading)
        return;
    const std::int64_t b = m_workflow->deviceBatch();
    const qint64 devices = std::max<qsizetype>(1, m_workflow->session().plan.nodes.size());
    m_batchNote->setText(tr("Planned for a device batch of %1 (a global batch of %2 over %3; "
                            "shares follow measured speed, and each device plans its own slice "
                            "again when the job starts).")
                             .arg(b)
                             .arg(m_workflow->session().plan.batch)
                             .arg(counted(devices, tr("device"), tr("devices"))));
    if (m_rangeFor != b) // first learn store-all's peak and the floor, then set the slider
        m_workflow->requestPlan(m_workflow->planRequestFor(-1));
    else
        onSlider();
}

void PlanPage::show(const app::PlanView &v)
{
    if (!v.error.isEmpty()) {
        m_schedule->setText(tr("Cannot plan: %1").arg(v.error));
        return;
    }
    if (m_rangeFor != v.request.deviceBatch) {
        m_rangeFor = v.request.deviceBatch;
        m_loading = true;
        m_slider->setRange(int(std::max<std::int64_t>(1, v.minimumBudget / 2) / kStep),
                           int(std::ceil(double(v.storeAllPeak) * 1.3 / kStep)));
        const app::PlanSettings &p = m_workflow->session().plan;
        const std::int64_t b = device().isEmpty() ? p.budgetAllBytes : p.budgetBytesFor(device());
        m_slider->setValue(b >= 0 ? int(b / kStep) : m_slider->maximum());
        m_loading = false;
        onSlider(); // now plan for the budget
        return;
    }
    m_last = v;
    const core::MemoryPlan &plan = v.plan;
    m_schedule->setText(tr("Schedule: %1").arg(v.schedule));
    m_schedule->setToolTip(v.program);
    m_overhead->setText(
        tr("Recompute overhead: %1 % more compute per step · %2 parameters")
            .arg(100 * (plan.predicted_recompute_factor - 1), 0, 'f', 1)
            .arg(v.parameters) +
        (v.storeAllPeak <= v.minimumBudget
             ? tr("\nThis model has nothing to trade at this batch: its floor is its store-all "
                  "peak (one layer needs its output and both gradients at once). A deeper student "
                  "(a ResNet) can trade memory for recompute.")
             : QString()));
    for (int c = 0; c < 6; ++c)
        m_memory->setItem(
            c, 0,
            new QTableWidgetItem(formatBytes(double(plan.predicted.peak_bytes[std::size_t(c)]))));
    m_memory->setItem(6, 0, new QTableWidgetItem(formatBytes(double(plan.predicted_peak_bytes))));
    if (v.request.budgetBytes >= 0 && !plan.fits) {
        m_warning->setText(
            tr("Does not fit: a device batch of %1 needs at least %2 under any schedule. %3")
                .arg(v.request.deviceBatch)
                .arg(formatBytes(double(plan.min_budget_bytes)))
                .arg(plan.max_batch > 0 ? tr("At this budget the largest device batch is %1: lower "
                                             "the batch or add devices.")
                                              .arg(plan.max_batch)
                                        : tr("Not even one sample fits: raise the budget.")));
    } else {
        m_warning->setText(
            v.request.budgetBytes >= 0
                ? tr("Fits, with %1 to spare.")
                      .arg(formatBytes(double(v.request.budgetBytes - plan.predicted_peak_bytes)))
                : QString());
        m_warning->setStyleSheet(textColour(app::palette::kGood));
    }
    if (v.request.budgetBytes >= 0 && !plan.fits)
        m_warning->setStyleSheet(textColour(app::palette::kError));
    m_chart->show(v);
}

} // namespace edgetrain::ui

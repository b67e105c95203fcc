#include "planpage.h"

#include "app/report/palette.h"
#include "charts.h"
#include "clustercandidates.h"
#include "common.h"
#include "planchart.h"
#include "plantext.h"
#include "vision/framedataset.h"

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
#include <map>

namespace edgetrain::ui {

namespace {
constexpr std::int64_t kStep = 16 * 1024; // slider resolution: 16 KiB
constexpr int kWidestInput = 2048;        // the widest input a session keeps (sessionread.cpp)

/** The same model, input and batch: the same store-all peak and floor. */
bool sameChain(const app::PlanRequest &a, const app::PlanRequest &b)
{
    return a.model == b.model && a.width == b.width && a.height == b.height &&
           a.deviceBatch == b.deviceBatch;
}
} // namespace

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
    m_candidatesBox = new ClusterCandidates(m_workflow, this);
    left->addStretch(1);
    columns->addLayout(left);

    auto *right = new QVBoxLayout;
    right->addWidget(memoryBox(), 1);
    columns->addLayout(right, 1);
    connectControls();
    // Under both columns, the page's width: eight columns of figures.
    m_candidatesBox->setMaximumHeight(200);
    layout->addWidget(m_candidatesBox);
    connect(m_workflow, &app::Workflow::planReady, this, &PlanPage::show);
    connect(&m_workflow->nodes(), &app::NodeRegistry::nodesChanged, this, &PlanPage::refreshNodes);
    connect(m_workflow, &app::Workflow::sessionChanged, this, &PlanPage::loadSettings);
    connect(m_workflow, &app::Workflow::settingsChanged, this, [this](app::Settings part) {
        if (part == app::Settings::Plan && !m_storing)
            loadSettings();
        if (part == app::Settings::Dataset && !m_storing) // the student's input may have changed
            replan();
    });
    loadSettings();
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
    m_input = new QComboBox(training);
    m_input->setObjectName(QStringLiteral("studentInput"));
    m_input->setToolTip(
        tr("The full-frame student's input: the camera's full frame shows small people in more "
           "detail and costs more memory and time per step. The frame dataset is built at this "
           "width (step 3)."));
    form->addRow(tr("Student input:"), m_input);
    m_inputNote = new QLabel(training);
    m_inputNote->setObjectName(QStringLiteral("inputNote"));
    m_inputNote->setWordWrap(true);
    m_inputNote->setStyleSheet(textColour(app::palette::kMutedText));
    form->addRow(m_inputNote);
    // Until the session has a frame size to offer.
    form->setRowVisible(m_input, false);
    form->setRowVisible(m_inputNote, false);
    m_trainingForm = form;
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
    m_schedule->setMinimumWidth(290); // the column's: its sentences in few lines
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
    // All seven rows without a scroll bar: the chart and the clusters' table give way.
    m_memory->setMinimumHeight(m_memory->horizontalHeader()->sizeHint().height() +
                               m_memory->rowCount() * 22 + 2 * m_memory->frameWidth());
    texts->addWidget(m_schedule);
    texts->addWidget(m_overhead);
    texts->addWidget(m_warning);
    texts->addWidget(m_memory);
    texts->addStretch(1);
    result->addLayout(texts);
    m_chart = new PlanChart(memoryBox);
    result->addWidget(m_chart, 1);
    mem->addLayout(result, 1);
    m_tiling = new QLabel(memoryBox);
    m_tiling->setObjectName(QStringLiteral("tilingNote"));
    m_tiling->setWordWrap(true);
    m_tiling->setToolTip(tr("What the planner predicts for tiles on each device: training from "
                            "the window runs untiled for now."));
    mem->addWidget(m_tiling);
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
    connect(m_input, &QComboBox::activated, this, &PlanPage::chooseInput);
    connect(m_nodes, &QListWidget::itemChanged, this, changed);
    connect(m_objective, &QComboBox::currentIndexChanged, this, changed);
    connect(m_candidatesBox->compareButton(), &QPushButton::clicked, m_workflow,
            &app::Workflow::startClusterComparison);
    const auto compareEnabled = [this] {
        m_candidatesBox->compareButton()->setEnabled(
            m_workflow->busy() == app::Task::None &&
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

QString PlanPage::device() const
{
    return m_device->currentIndex() <= 0 ? QString() : m_device->currentText();
}

void PlanPage::loadSettings()
{
    m_loading = true;
    const app::PlanSettings &p = m_workflow->session().plan;
    if (m_model->findText(p.model) < 0) // a zoo model written in the session file
        m_model->addItem(p.model);
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
    m_rangeFor.reset();
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
    m_workflow->requestPlan(request(budget));
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
    const app::PlanRequest chain = request(-1);
    if (!m_rangeFor || !sameChain(*m_rangeFor, chain)) // first learn store-all's peak and the
        m_workflow->requestPlan(chain);                // floor, then set the slider
    else
        onSlider();
}

void PlanPage::show(const app::PlanView &v)
{
    if (!v.error.isEmpty()) {
        m_schedule->setText(tr("Cannot plan: %1").arg(v.error));
        showAlternatives(v);
        return;
    }
    if (!sameChain(v.request, request(-1)))
        return; // asked for by someone else (the demo), for an input this page does not show
    if (!m_rangeFor || !sameChain(*m_rangeFor, v.request)) {
        m_rangeFor = v.request;
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
    showAlternatives(v);
}

app::PlanRequest PlanPage::request(std::int64_t budget) const
{
    app::PlanRequest r = m_workflow->planRequestFor(budget);
    const auto labels = m_workflow->labels();
    if (r.model != QLatin1String("detector") || r.alternativeWidth <= 0 || !labels)
        return r;
    // The input chosen here (the dataset's width, perhaps not built yet), with the full frame
    // beside it, or when the full frame is the one chosen, the dataset's input (or the default).
    const app::Session &session = m_workflow->session();
    const cv::Size full(r.alternativeWidth, r.alternativeHeight);
    const cv::Size chosen =
        vision::FrameDataset::inputSize(labels->frame_size, session.dataset.frameWidth);
    cv::Size other = full;
    if (chosen == full)
        other = session.frameStats && session.frameStats->input != full
                    ? session.frameStats->input
                    : vision::FrameDataset::inputSize(labels->frame_size,
                                                      app::DatasetSettings().frameWidth);
    r.width = chosen.width;
    r.height = chosen.height;
    r.alternativeWidth = other.width;
    r.alternativeHeight = other.height;
    return r;
}

void PlanPage::showInputs()
{
    const app::Session &session = m_workflow->session();
    const auto labels = m_workflow->labels();
    const app::PlanRequest base = m_workflow->planRequestFor(-1);
    std::map<int, QStringList> widths; // the inputs to offer, by width, with what each is
    if (base.model == QLatin1String("detector") && labels && base.alternativeWidth > 0) {
        const int full = base.alternativeWidth; // the camera's frame, as the planner takes it
        if (session.frameStats)
            widths[session.frameStats->input.width].append(tr("the dataset's"));
        widths[session.dataset.frameWidth];
        widths[app::DatasetSettings().frameWidth];
        if (full <= kWidestInput)
            widths[full].append(tr("the full frame"));
    }
    const QSignalBlocker block(m_input);
    m_input->clear();
    for (const auto &[width, what] : widths) {
        const cv::Size in = vision::FrameDataset::inputSize(labels->frame_size, width);
        m_input->addItem(what.isEmpty() ? tr("%1 × %2").arg(in.width).arg(in.height)
                                        : tr("%1 × %2, %3")
                                              .arg(in.width)
                                              .arg(in.height)
                                              .arg(what.join(QStringLiteral(", "))),
                         width);
    }
    m_input->setCurrentIndex(m_input->findData(session.dataset.frameWidth));
    m_trainingForm->setRowVisible(m_input, m_input->count() > 1);
}

void PlanPage::chooseInput()
{
    app::DatasetSettings d = m_workflow->session().dataset;
    d.frameWidth = m_input->currentData().toInt();
    QString refused;
    m_storing = true; // the page replans below
    const bool stored = m_workflow->setDatasetSettings(d, &refused);
    m_storing = false;
    if (!stored) {
        m_inputNote->setText(tr("The input cannot change now: %1").arg(refused));
        m_trainingForm->setRowVisible(m_inputNote, true);
        showInputs();
        return;
    }
    replan();
}

void PlanPage::showAlternatives(const app::PlanView &v)
{
    m_tiling->setText(plantext::tilingSentence(v));
    m_tiling->setVisible(!m_tiling->text().isEmpty());
    QString note = plantext::inputSentence(v);
    const auto &stats = m_workflow->session().frameStats;
    if (v.error.isEmpty() && v.request.model == QLatin1String("detector") && stats &&
        stats->input.width != v.request.width)
        note += QLatin1Char(' ') +
                tr("Training uses the frame dataset's %1 × %2 until step 3 builds it again at "
                   "%3 px.")
                    .arg(stats->input.width)
                    .arg(stats->input.height)
                    .arg(v.request.width);
    m_inputNote->setText(note);
    m_trainingForm->setRowVisible(m_inputNote, !note.isEmpty());
    showInputs();
    fitSentences();
}

void PlanPage::fitSentences()
{
    if (!isVisible()) // not laid out yet: the labels' widths are not theirs
        return;
    for (QLabel *label : {m_batchNote, m_overhead, m_warning, m_tiling, m_inputNote})
        label->setMinimumHeight(label->text().isEmpty() || !label->isVisible()
                                    ? 0
                                    : label->heightForWidth(label->width()));
}

void PlanPage::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    fitSentences();
}

void PlanPage::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    QMetaObject::invokeMethod(this, &PlanPage::fitSentences, Qt::QueuedConnection); // laid out
}

} // namespace edgetrain::ui

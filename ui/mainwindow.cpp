#include "mainwindow.h"

#include "capturepage.h"
#include "datasetpage.h"
#include "nodespage.h"
#include "planpage.h"
#include "reportpage.h"
#include "trainpage.h"
#include "verifypage.h"

#include <QApplication>
#include <QCloseEvent>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>

namespace edgetrain::ui {

MainWindow::MainWindow(app::Workflow *workflow, QWidget *parent)
    : QMainWindow(parent), m_workflow(workflow)
{
    auto *central = new QWidget(this);
    auto *layout = new QHBoxLayout(central);
    m_steps = new QListWidget(central);
    m_steps->setFixedWidth(170);
    m_steps->setSpacing(2);
    QFont f = m_steps->font();
    f.setPointSizeF(f.pointSizeF() * 1.1);
    m_steps->setFont(f);
    const QString names[Steps] = {
        tr("1  Nodes"), tr("2  Capture & label"), tr("3  Dataset"), tr("4  Verify"),
        tr("5  Plan"),  tr("6  Train & monitor"), tr("7  Report")};
    for (const QString &name : names) {
        auto *item = new QListWidgetItem(name, m_steps);
        item->setSizeHint(QSize(160, 34));
    }
    m_pages = new QStackedWidget(central);
    m_nodes = new NodesPage(workflow, m_pages);
    m_capture = new CapturePage(workflow, m_pages);
    m_dataset = new DatasetPage(workflow, m_pages);
    m_verify = new VerifyPage(workflow, m_pages);
    m_plan = new PlanPage(workflow, m_pages);
    m_train = new TrainPage(workflow, m_pages);
    m_report = new ReportPage(
        workflow, [this] { return m_plan->lastPlan(); }, m_pages);
    connect(m_report, &ReportPage::verifyRequested, this, [this] { showStep(Verify); });
    for (QWidget *page : {static_cast<QWidget *>(m_nodes), static_cast<QWidget *>(m_capture),
                          static_cast<QWidget *>(m_dataset), static_cast<QWidget *>(m_verify),
                          static_cast<QWidget *>(m_plan), static_cast<QWidget *>(m_train),
                          static_cast<QWidget *>(m_report)})
        m_pages->addWidget(page);
    layout->addWidget(m_steps);
    layout->addWidget(m_pages, 1);
    setCentralWidget(central);
    connect(m_steps, &QListWidget::currentRowChanged, m_pages, &QStackedWidget::setCurrentIndex);
    connect(m_steps, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row == Plan)
            m_plan->replan(); // the nodes or the dataset may have changed since
    });
    m_steps->setCurrentRow(0);

    m_cluster = new QLabel(this);
    statusBar()->addPermanentWidget(m_cluster);
    auto *tick = new QTimer(this);
    connect(tick, &QTimer::timeout, this, &MainWindow::updateStatus);
    tick->start(1000);
    connect(&workflow->nodes(), &app::NodeRegistry::nodesChanged, this, &MainWindow::updateStatus);
    connect(workflow, &app::Workflow::taskStarted, this, &MainWindow::updateStatus);
    connect(workflow, &app::Workflow::taskFinished, this, &MainWindow::updateStatus);
    connect(workflow, &app::Workflow::message, this,
            [this](const QString &text) { statusBar()->showMessage(text, 8000); });
    connect(workflow, &app::Workflow::sessionChanged, this, &MainWindow::updateTitle);
    connect(workflow, &app::Workflow::settingsChanged, this, &MainWindow::updateTitle);
    connect(workflow, &app::Workflow::saved, this, [this](bool ok, const QString &text) {
        statusBar()->showMessage(ok ? text : tr("the session was NOT saved: %1").arg(text),
                                 ok ? 5000 : 0);
    });

    buildMenus();
    updateTitle();
    updateStatus();
    resize(1366, 768);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus()
{
    QMenu *session = menuBar()->addMenu(tr("&Session"));
    session->addAction(tr("&New…"), QKeySequence::New, this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Folder for the new session"));
        if (dir.isEmpty())
            return;
        QString error;
        if (!m_workflow->newSession(dir, &error))
            QMessageBox::warning(this, tr("New session"), error);
        else
            addRecent(dir);
    });
    session->addAction(tr("&Open…"), QKeySequence::Open, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Session folder"));
        if (!dir.isEmpty())
            openSession(dir);
    });
    m_recent = session->addMenu(tr("Open &Recent"));
    connect(m_recent, &QMenu::aboutToShow, this, &MainWindow::fillRecent);
    session->addSeparator();
    session->addAction(tr("&Save"), QKeySequence::Save, this, &MainWindow::saveSession);
    session->addAction(tr("Save &As…"), QKeySequence::SaveAs, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Save the session to"));
        if (dir.isEmpty())
            return;
        QString error;
        if (!m_workflow->saveAs(dir, &error))
            QMessageBox::warning(this, tr("Save session"), error);
        else
            addRecent(dir);
        updateTitle();
    });
    session->addSeparator();
    session->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

    QMenu *go = menuBar()->addMenu(tr("&Go"));
    for (int i = 0; i < Steps; ++i)
        go->addAction(m_steps->item(i)->text(), QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)),
                      this, [this, i] { showStep(Step(i)); });

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About EdgeTrain"), this, [this] {
        QMessageBox::about(this, tr("About EdgeTrain"),
                           tr("<b>EdgeTrain %1</b><p>Trains a student detector for one camera on "
                              "the edge devices next to it: a teacher labels what it can see, a "
                              "tracker carries the labels into the frames where it fails.</p>")
                               .arg(QApplication::applicationVersion()));
    });
}

void MainWindow::showStep(Step step)
{
    m_steps->setCurrentRow(int(step));
}

MainWindow::Step MainWindow::currentStep() const
{
    return Step(m_steps->currentRow());
}

bool MainWindow::openSession(const QString &dir)
{
    QString error;
    if (!m_workflow->openSession(dir, &error)) {
        QMessageBox::warning(this, tr("Open session"), error);
        return false;
    }
    addRecent(m_workflow->session().dir);
    return true;
}

bool MainWindow::saveSession()
{
    if (m_workflow->session().dir.isEmpty()) {
        QMessageBox::warning(this, tr("Save session"),
                             tr("the session has no folder yet: use Save As"));
        return false;
    }
    statusBar()->showMessage(tr("saving the session…"));
    m_workflow->saveInBackground(); // saved() reports, in the status bar
    return true;
}

void MainWindow::updateTitle()
{
    const QString dir = m_workflow->session().dir;
    setWindowTitle(dir.isEmpty() ? tr("EdgeTrain") : tr("%1 — EdgeTrain").arg(dir));
}

void MainWindow::updateStatus()
{
    m_cluster->setText(m_workflow->clusterSummary());
}

void MainWindow::addRecent(const QString &dir)
{
    QSettings settings;
    QStringList list = settings.value(QStringLiteral("recentSessions")).toStringList();
    list.removeAll(dir);
    list.prepend(dir);
    settings.setValue(QStringLiteral("recentSessions"), list.mid(0, 8));
}

void MainWindow::fillRecent()
{
    m_recent->clear();
    const QStringList list = QSettings().value(QStringLiteral("recentSessions")).toStringList();
    for (const QString &dir : list)
        m_recent->addAction(dir, this, [this, dir] { openSession(dir); });
    if (list.isEmpty())
        m_recent->addAction(tr("(none)"))->setEnabled(false);
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_workflow->isTraining()) {
        // The nodes' job is stopped first; the window closes when the coordinator has finished
        // (or after 15 s, if a node does not answer).
        event->ignore();
        if (m_closing)
            return;
        m_closing = true;
        statusBar()->showMessage(tr("stopping the nodes' job before closing…"));
        setEnabled(false);
        connect(m_workflow, &app::Workflow::taskFinished, this, [this](app::Task task) {
            if (task == app::Task::Training)
                QTimer::singleShot(0, this, &QWidget::close);
        });
        QTimer::singleShot(15000, this, [this] {
            m_workflow->cancel();
            QString error;
            m_workflow->save(&error);
            QApplication::exit(0);
        });
        m_workflow->stopTraining();
        return;
    }
    m_workflow->cancel(); // labelling, dataset or evaluation: stop at the next frame
    QString error;
    if (!m_workflow->session().dir.isEmpty() && !m_workflow->save(&error))
        QMessageBox::warning(this, tr("Save session"), error);
    event->accept();
}

} // namespace edgetrain::ui

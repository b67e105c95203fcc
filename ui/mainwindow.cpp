#include "mainwindow.h"

#include "capturepage.h"
#include "common.h"
#include "datasetpage.h"
#include "deploypage.h"
#include "nodespage.h"
#include "planpage.h"
#include "reportpage.h"
#include "startpage.h"
#include "trainpage.h"
#include "verifypage.h"

#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QTimer>

#include <algorithm>

namespace edgetrain::ui {

MainWindow::MainWindow(app::Workflow *workflow, QWidget *parent)
    : QMainWindow(parent), m_workflow(workflow)
{
    m_top = new QStackedWidget(this);
    m_start = new StartPage(m_top);
    auto *central = new QWidget(m_top);
    m_stepsView = central;
    auto *layout = new QHBoxLayout(central);
    m_steps = new QListWidget(central);
    m_steps->setFixedWidth(170);
    m_steps->setSpacing(2);
    QFont f = m_steps->font();
    f.setPointSizeF(f.pointSizeF() * 1.1);
    m_steps->setFont(f);
    const QString names[Steps] = {
        tr("1  Nodes"), tr("2  Capture & label"), tr("3  Dataset"), tr("4  Verify"),
        tr("5  Plan"),  tr("6  Train & monitor"), tr("7  Report"),  tr("8  Deploy")};
    const char *icons[Steps] = {"step-nodes", "step-capture", "step-dataset", "step-verify",
                                "step-plan",  "step-train",   "step-report",  "step-deploy"};
    m_steps->setIconSize(QSize(20, 20));
    for (int i = 0; i < Steps; ++i) {
        auto *item =
            new QListWidgetItem(actionIcon(QString(), QLatin1String(icons[i])), names[i], m_steps);
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
    m_deploy = new DeployPage(workflow, m_pages);
    for (QWidget *page : {static_cast<QWidget *>(m_nodes), static_cast<QWidget *>(m_capture),
                          static_cast<QWidget *>(m_dataset), static_cast<QWidget *>(m_verify),
                          static_cast<QWidget *>(m_plan), static_cast<QWidget *>(m_train),
                          static_cast<QWidget *>(m_report), static_cast<QWidget *>(m_deploy)})
        m_pages->addWidget(page);
    layout->addWidget(m_steps);
    layout->addWidget(m_pages, 1);
    m_top->addWidget(m_start);
    m_top->addWidget(m_stepsView);
    setCentralWidget(m_top);
    connect(m_start, &StartPage::newSessionRequested, this, &MainWindow::newSession);
    connect(m_start, &StartPage::openSessionRequested, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(
            this, tr("Session folder"), lastFolder(QStringLiteral("sessions")));
        if (!dir.isEmpty())
            openSession(dir);
    });
    connect(m_start, &StartPage::recentSessionRequested, this, &MainWindow::openSession);
    connect(m_start, &StartPage::demoRequested, this, &MainWindow::demoRequested);
    connect(m_start, &StartPage::rehearsalRequested, this, &MainWindow::rehearse);
    m_start->setRecentSessions(recentSessions());
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
            [this](const QString &text) { showStatus(text, 8000); });
    connect(workflow, &app::Workflow::sessionChanged, this, &MainWindow::updateTitle);
    connect(workflow, &app::Workflow::sessionChanged, this, &MainWindow::showSessionOrStart);
    connect(workflow, &app::Workflow::settingsChanged, this, &MainWindow::updateTitle);
    connect(workflow, &app::Workflow::saved, this, [this](bool ok, const QString &text) {
        showStatus(ok ? text : tr("the session was NOT saved: %1").arg(text), ok ? 5000 : 0);
    });

    buildMenus();
    updateTitle();
    updateStatus();
    showSessionOrStart();
    if (!restoreGeometry(QSettings().value(QStringLiteral("window/geometry")).toByteArray()))
        resize(1366, 768);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildMenus()
{
    // Icons: the desktop theme's where it has them, ours (ui/icons) otherwise.
    auto icon = [](const char *theme, const char *ours) {
        return actionIcon(QLatin1String(theme), QLatin1String(ours));
    };
    QMenu *session = menuBar()->addMenu(tr("&Session"));
    session->addAction(icon("document-new", "new-session"), tr("&New…"), QKeySequence::New, this,
                       &MainWindow::newSession);
    session->addAction(icon("document-open", "open-session"), tr("&Open…"), QKeySequence::Open,
                       this, [this] {
                           const QString dir = QFileDialog::getExistingDirectory(
                               this, tr("Session folder"), lastFolder(QStringLiteral("sessions")));
                           if (!dir.isEmpty())
                               openSession(dir);
                       });
    m_recent = session->addMenu(icon("document-open-recent", "open-recent"), tr("Open &Recent"));
    connect(m_recent, &QMenu::aboutToShow, this, &MainWindow::fillRecent);
    session->addSeparator();
    session->addAction(icon("document-save", "save"), tr("&Save"), QKeySequence::Save, this,
                       &MainWindow::saveSession);
    session->addAction(
        icon("document-save-as", "save-as"), tr("Save &As…"), QKeySequence::SaveAs, this, [this] {
            const QString dir = QFileDialog::getExistingDirectory(
                this, tr("Save the session to"), lastFolder(QStringLiteral("sessions")));
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
    session->addAction(icon("application-exit", "quit"), tr("&Quit"), QKeySequence::Quit, this,
                       &QWidget::close);

    QMenu *go = menuBar()->addMenu(tr("&Go"));
    for (int i = 0; i < Steps; ++i)
        go->addAction(m_steps->item(i)->icon(), m_steps->item(i)->text(),
                      QKeySequence(Qt::CTRL | Qt::Key(Qt::Key_1 + i)), this,
                      [this, i] { showStep(Step(i)); });

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(icon("help-about", "about"), tr("&About EdgeTrain"), this, [this] {
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

bool MainWindow::showsStartPage() const
{
    return m_top->currentWidget() == m_start;
}

void MainWindow::showSessionOrStart()
{
    // Once a session is open the steps stay, whatever happens to it.
    if (!m_workflow->session().dir.isEmpty())
        m_top->setCurrentWidget(m_stepsView);
    else if (m_top->currentWidget() != m_stepsView)
        m_top->setCurrentWidget(m_start);
}

bool MainWindow::newSession()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for the new session"),
                                                          lastFolder(QStringLiteral("sessions")));
    if (dir.isEmpty())
        return false;
    QString error;
    if (!m_workflow->newSession(dir, &error)) {
        QMessageBox::warning(this, tr("New session"), error);
        return false;
    }
    addRecent(dir);
    return true;
}

void MainWindow::rehearse()
{
    if (m_workflow->session().dir.isEmpty() && !newSession())
        return;
    showStep(Nodes);
    m_nodes->startRehearsal();
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

void MainWindow::showStatus(const QString &text, int timeout_ms)
{
    // A long result (the dataset's, the training's) is cut with an ellipsis, not mid-word at the
    // cluster's corner; the whole of it is the tool tip and the step's own page.
    // Before the window is laid out the bar may have no width yet: never elide to nothing.
    const int room = std::max(240, statusBar()->width() - m_cluster->sizeHint().width() - 32);
    statusBar()->showMessage(statusBar()->fontMetrics().elidedText(text, Qt::ElideRight, room),
                             timeout_ms);
    statusBar()->setToolTip(text);
}

void MainWindow::updateStatus()
{
    m_cluster->setText(m_workflow->clusterSummary());
}

void MainWindow::addRecent(const QString &dir)
{
    const QString absolute = QFileInfo(dir).absoluteFilePath();
    QSettings settings;
    QStringList list = settings.value(QStringLiteral("recentSessions")).toStringList();
    list.removeAll(absolute);
    list.prepend(absolute);
    settings.setValue(QStringLiteral("recentSessions"), list.mid(0, 8));
    // The dialogs open next to it next time.
    rememberFolder(QStringLiteral("sessions"), QFileInfo(absolute).absolutePath());
    m_start->setRecentSessions(recentSessions());
}

QStringList MainWindow::recentSessions()
{
    QStringList list = QSettings().value(QStringLiteral("recentSessions")).toStringList();
    list.removeIf([](const QString &dir) { return !QFileInfo(dir).isDir(); });
    return list;
}

void MainWindow::fillRecent()
{
    m_recent->clear();
    const QStringList list = recentSessions();
    for (const QString &dir : list)
        m_recent->addAction(dir, this, [this, dir] { openSession(dir); });
    if (list.isEmpty())
        m_recent->addAction(tr("(none)"))->setEnabled(false);
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    const app::Task running = m_workflow->busy();
    if (running == app::Task::Training || running == app::Task::ClusterPlan ||
        running == app::Task::Deployment) {
        // The nodes' job (a run, or a comparison's profiling) is stopped first; the window
        // closes when the coordinator has finished (or after 15 s, if a node does not answer).
        event->ignore();
        if (m_closing)
            return;
        m_closing = true;
        statusBar()->showMessage(tr("stopping the nodes' job before closing…"));
        setEnabled(false);
        connect(m_workflow, &app::Workflow::taskFinished, this, [this, running](app::Task task) {
            if (task == running)
                QTimer::singleShot(0, this, &QWidget::close);
        });
        QTimer::singleShot(15000, this, [this] {
            m_workflow->cancel();
            QString error;
            m_workflow->save(&error);
            QApplication::exit(0);
        });
        if (running == app::Task::Deployment)
            m_workflow->stopDeployment();
        else
            m_workflow->stopTraining();
        return;
    }
    m_workflow->cancel(); // labelling, dataset or evaluation: stop at the next frame
    QString error;
    if (!m_workflow->session().dir.isEmpty() && !m_workflow->save(&error))
        QMessageBox::warning(this, tr("Save session"), error);
    QSettings().setValue(QStringLiteral("window/geometry"), saveGeometry());
    event->accept();
}

} // namespace edgetrain::ui

#pragma once

#include "app/session/workflow.h"

#include <QMainWindow>

class QLabel;
class QListWidget;
class QMenu;
class QStackedWidget;

namespace edgetrain::ui {

class CapturePage;
class DatasetPage;
class DeployPage;
class NodesPage;
class PlanPage;
class ReportPage;
class StartPage;
class TrainPage;
class VerifyPage;

/**
 * The window: the eight steps as a navigation list, one page each, the cluster's state in the
 * status bar, the session menu. Until a session is open it shows the start page instead (new,
 * open, recent, the demo, a rehearsal). Closing it while training or deploying stops the nodes' job
 * first and saves the session. Its geometry, the recent sessions and the dialogs' last folders are
 * kept with QSettings (the application's organization and name).
 */
class MainWindow : public QMainWindow
{
    Q_OBJECT

public:
    explicit MainWindow(app::Workflow *workflow, QWidget *parent = nullptr);
    ~MainWindow() override;

    enum Step { Nodes, Capture, Dataset, Verify, Plan, Train, Report, Deploy, Steps };
    void showStep(Step step);
    Step currentStep() const;

    NodesPage *nodesPage() const { return m_nodes; }
    CapturePage *capturePage() const { return m_capture; }
    DatasetPage *datasetPage() const { return m_dataset; }
    VerifyPage *verifyPage() const { return m_verify; }
    PlanPage *planPage() const { return m_plan; }
    TrainPage *trainPage() const { return m_train; }
    ReportPage *reportPage() const { return m_report; }
    DeployPage *deployPage() const { return m_deploy; }
    QLabel *clusterLabel() const { return m_cluster; }
    StartPage *startPage() const { return m_start; }
    /** Whether the start page is shown (no session open yet) rather than the steps. */
    bool showsStartPage() const;

    /** Opens a session folder; errors go to a dialog (and are returned). */
    bool openSession(const QString &dir);
    /** Session → New: asks for a folder and starts a session there; false if cancelled or
     *  refused (the reason in a dialog). */
    bool newSession();
    /** A new session (asked for, unless one is open) with an edge lab of the Nodes page's
     *  devices starting on this machine; shows the Nodes step. */
    void rehearse();
    /** The recent session folders that still exist, newest first (QSettings). */
    static QStringList recentSessions();

Q_SIGNALS:
    /** The start page's "Run the demo": the program starts the demo's nodes and session. */
    void demoRequested();

protected:
    void closeEvent(QCloseEvent *event) override;

private:
    void buildMenus();
    void showSessionOrStart();
    void updateTitle();
    void updateStatus();
    /** `text` in the status bar for `timeout_ms` (0: until replaced), elided to fit. */
    void showStatus(const QString &text, int timeout_ms);
    void addRecent(const QString &dir);
    void fillRecent();
    bool saveSession();

    app::Workflow *m_workflow;
    QStackedWidget *m_top; // the start page or the steps
    StartPage *m_start;
    QWidget *m_stepsView;
    QListWidget *m_steps;
    QStackedWidget *m_pages;
    NodesPage *m_nodes;
    CapturePage *m_capture;
    DatasetPage *m_dataset;
    VerifyPage *m_verify;
    PlanPage *m_plan;
    TrainPage *m_train;
    ReportPage *m_report;
    DeployPage *m_deploy;
    QLabel *m_cluster;
    QMenu *m_recent;
    bool m_closing = false;
};

} // namespace edgetrain::ui

#pragma once

#include "net/controlclient.h"
#include "plannerworker.h"
#include "session.h"
#include "vision/labeling.h"

#include <QObject>
#include <QThread>
#include <QThreadPool>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace edgetrain::app {

/** A node as the Nodes step shows it. Keyed by its control address (host:port). */
struct NodeView
{
    enum class State { Found, Pairing, Paired, Locked, Lost };
    QString key; // host:port of the control port
    QString host;
    quint16 port = 0;
    net::NodeInfo info;
    State state = State::Found;
    QString detail; // why it is locked or lost
    QDateTime lastSeen;
    std::optional<net::SystemSample> sample;
    bool discovered = false; // answered a discovery probe (else: added by address)
};
QString nodeStateName(NodeView::State state);

enum class Task { None, Labelling, Dataset, Training, Evaluation, Export };
QString taskName(Task task);

class TrainingRun;

/**
 * The workflow controller the window (and the headless demo) drives: holds the session, finds and
 * pairs nodes, and runs each step's long work off the GUI thread (labelling, cutting the dataset,
 * memory planning, the cluster run, the evaluation), reporting progress through signals. One long
 * task at a time; each can be cancelled; the session is saved after every step.
 */
class Workflow : public QObject
{
    Q_OBJECT

public:
    explicit Workflow(QObject *parent = nullptr);
    ~Workflow() override;

    Session &session() { return m_session; }
    const Session &session() const { return m_session; }
    /** Starts a session in `dir` (created if missing; refused if it holds one already). */
    bool newSession(const QString &dir, QString *error);
    bool openSession(const QString &dir, QString *error);
    bool save(QString *error);
    /** Copies the session's folder to `dir` and continues there. */
    bool saveAs(const QString &dir, QString *error);

    // Nodes
    bool setKeyFile(const QString &path, QString *error);
    bool hasKey() const { return !m_key.isEmpty(); }
    /** A unicast discovery address (host:port) probed every second. */
    bool addProbe(const QString &hostPort, QString *error);
    void startDiscovery();
    /** A node typed in by its control address; paired at once if the key is loaded. */
    bool addNode(const QString &hostPort, QString *error);
    void pair(const QString &key);
    void pairAll();
    void forget(const QString &key);
    const std::map<QString, NodeView> &nodes() const { return m_nodes; }
    QStringList pairedNodes() const; // by name
    QString clusterSummary() const;

    // Capture & label
    Task busy() const { return m_task; }
    void startLabelling();
    std::shared_ptr<const vision::LabelResult> labels() const { return m_labels; }
    void setTrackAccepted(int track, bool accepted);
    void trimTrack(int track, int first, int last);

    // Dataset
    void startDataset();

    // Plan
    /** Plans in the background; superseded requests are dropped; planReady() answers. */
    void requestPlan(const PlanRequest &request);
    PlanRequest planRequestFor(std::int64_t budget) const; // from the session's plan settings
    std::int64_t deviceBatch() const;

    // Train & monitor
    void startTraining();
    void stopTraining();
    bool isTraining() const { return m_task == Task::Training; }

    // Evaluate & report
    void startEvaluation();

    void cancel(); // the running task (not training: stopTraining())

Q_SIGNALS:
    void sessionChanged();
    void nodesChanged();
    void taskStarted(edgetrain::app::Task task);
    void taskProgress(edgetrain::app::Task task, int done, int total, const QString &text);
    void taskFinished(edgetrain::app::Task task, bool ok, const QString &message);
    void labelsChanged();
    void datasetChanged();
    void planReady(const edgetrain::app::PlanView &plan);
    void metricsAdded(const edgetrain::app::MetricRow &row);
    void epochFinished(const net::ClusterEpoch &epoch);
    void clusterEvent(const net::ClusterEvent &event);
    void evaluationChanged();
    void message(const QString &text); // for the status bar

private:
    template<typename Work, typename Done>
    void runTask(Task task, Work work, Done done);
    void progress(Task task, int done, int total, const QString &text);
    void finishTask(Task task, bool ok, const QString &message);
    void onNodeSeen(const net::NodeInfo &info);
    void connectMonitor(NodeView &node);
    void restoreSession();
    void onTrainingDone();
    void saveQuietly();
    void saveLabels();
    void editTrack(int track, const std::function<void(vision::Track &)> &edit);

    Session m_session;
    QThreadPool m_saver; // background saves, in order
    QByteArray m_key;
    std::map<QString, NodeView> m_nodes;
    std::map<QString, net::ControlClient *> m_monitors;
    net::NodeBrowser *m_browser = nullptr;
    QTimer m_nodeTimer; // marks nodes not heard for a while as lost

    Task m_task = Task::None;
    std::shared_ptr<std::atomic<bool>> m_stop;
    std::shared_ptr<const vision::LabelResult> m_labels;

    QThread m_plannerThread;
    PlannerWorker *m_planner = nullptr;
    std::optional<PlanRequest> m_planPending;
    bool m_planBusy = false;

    QThread m_trainThread;
    TrainingRun *m_run = nullptr;
    QElapsedTimer m_trainClock;
};

} // namespace edgetrain::app

Q_DECLARE_METATYPE(edgetrain::app::MetricRow)

#pragma once

#include "labcontrol.h"
#include "noderegistry.h"
#include "plannerworker.h"
#include "session.h"
#include "taskrunner.h"
#include "verification.h"
#include "verifiedscoring.h"
#include "vision/labeling.h"

#include <QElapsedTimer>
#include <QObject>
#include <QThread>
#include <QThreadPool>

#include <functional>
#include <memory>
#include <optional>

namespace edgetrain::app {

class DeploymentRun;
struct DeploymentOutcome;
struct DeploymentSetup;
struct DeviceView;
class TrainingRun;
struct TrainingSetup;

/** The part of the session's settings a setter changed (settingsChanged()). */
enum class Settings { Title, Capture, Dataset, Plan, Evaluation };

/**
 * The workflow controller the window (and the headless demo) drives: holds the session and its
 * nodes (NodeRegistry), and runs each step's long work off the GUI thread, one at a time
 * (TaskRunner): labelling (LabelTask), cutting the dataset (DatasetTask), the cluster run
 * (TrainingRun, on a thread of its own), the evaluation (EvaluationTask); memory planning runs
 * on the planner's thread (PlannerWorker). This class keeps the state machine: which task may
 * start, applying each result to the session, saving, and telling the pages.
 *
 * Errors: a task that fails ends with taskFinished(task, false, reason); a background save or
 * label save that fails is said through message(); calls that a user makes directly (new, open,
 * save) answer false with the reason in `*error`. All of it lives on the GUI thread.
 */
class Workflow : public QObject
{
    Q_OBJECT

public:
    explicit Workflow(QObject *parent = nullptr);
    ~Workflow() override;

    /** The session as it is; it changes through the setters below and the steps' tasks. */
    const Session &session() const { return m_session; }
    /** Starts a session in `dir` (created if missing; refused if it holds one already). */
    bool newSession(const QString &dir, QString *error);
    bool openSession(const QString &dir, QString *error);
    /** Writes the session now (after any background save still queued), waiting for the disk:
     *  for closing and for scripts. The window's Save is saveInBackground(). */
    bool save(QString *error);
    /** Writes the session on the saver thread, after any save queued before; saved() says how it
     *  went. The GUI thread does not wait for the disk. */
    void saveInBackground();
    /** Copies the session's folder to `dir` and continues there. */
    bool saveAs(const QString &dir, QString *error);

    // The settings each step's page edits. A value is checked by the rules session.json is read
    // with, so a setting that the session could not be reopened with is refused: false, the
    // field and the reason in `*error` (and message()), nothing changed. Otherwise it is stored,
    // saved in the background and announced by settingsChanged().
    void setTitle(const QString &title);
    bool setCapture(const CaptureSettings &capture, QString *error = nullptr);
    bool setDatasetSettings(const DatasetSettings &dataset, QString *error = nullptr);
    bool setPlanSettings(const PlanSettings &plan, QString *error = nullptr);
    /** How many held-out frames the tracker-label evaluation scores. */
    bool setEvaluationFrames(int frames, QString *error = nullptr);

    // Nodes: discovery, pairing and node state; what it should record lands in the session.
    NodeRegistry &nodes() { return m_nodes; }
    const NodeRegistry &nodes() const { return m_nodes; }
    /** Rehearsal on emulated devices (an edge lab), whose nodes join nodes(). */
    LabControl &lab() { return m_lab; }
    /** The nodes' summary and the running task, for the status bar. */
    QString clusterSummary() const;

    // Capture & label
    Task busy() const { return m_runner.current(); }
    void startLabelling();
    std::shared_ptr<const vision::LabelResult> labels() const { return m_labels; }
    void setTrackAccepted(int track, bool accepted);
    void trimTrack(int track, int first, int last);

    // Dataset (session().dataset.kind: frames for the full-frame student, or crops)
    void startDataset();

    // Verify: the session's ground truth (truth.json), read when a session opens
    Verification *verification() { return &m_verification; }
    /** The last evaluation's boxes on the picked frames (workflowverify.cpp): while they are the
     *  current student's, every verified frame among them rescores the current round at once. */
    const std::optional<VerifiedDetections> &verifiedDetections() const
    {
        return m_verifiedDetections;
    }
    /** Whether the verified frames are enough: the headline's interval, each comparison settled
     *  or how many more frames it needs; empty before an evaluation with verified frames. */
    VerifiedEnough verifiedEnough() const;
    /** Why frames cannot be picked where the detectors disagree now (empty: they can): a
     *  trained full-frame student, its labels, nothing running. */
    QString disagreementBlocker() const;
    /** Runs teacher, motion and the student over the source (Task::DisagreementPick) and adds
     *  `count` frames where they and the tracker disagree most, spread over time, to the frames
     *  to verify (pick "disagreement"); the frames picked so far stay. */
    void startDisagreementPick(int count, int sourceFrames, cv::Size frameSize);

    // Plan
    /** Plans in the background; superseded requests are dropped; planReady() answers. */
    void requestPlan(const PlanRequest &request);
    PlanRequest planRequestFor(std::int64_t budget) const; // from the session's plan settings
    /** The plan's batch split over the chosen (or all paired) nodes, rounded up. */
    std::int64_t deviceBatch() const;

    /** Profiles the job on the ticked devices and ranks every cluster of them by the Plan
     *  step's objective, without training (Task::ClusterPlan; taskFinished() says the best).
     *  The ranking is clusterPreview() until the next run ranks, the Plan settings change or
     *  another session opens; the session's training record is not touched. */
    void startClusterComparison();
    /** The last comparison's ranking (not saved: the session keeps its training's plan). */
    const std::optional<ClusterPlanRecord> &clusterPreview() const { return m_clusterPreview; }

    // Train & monitor
    void startTraining();
    void stopTraining();
    bool isTraining() const { return busy() == Task::Training; }

    // Evaluate & report
    /** Scores the trained student against the tracker's labels and, for the full-frame student
     *  with verified frames, against them too (the round's VerifiedRound replaces an earlier one
     *  of the same round). */
    void startEvaluation();
    /** Self-training (full-frame student, trained): the student relabels the frames, the dataset
     *  is rebuilt and the session's round goes up by one; the user then trains again. */
    void startSelfTraining();
    /** A whole self-training round: startSelfTraining(), then, when the labels and the dataset
     *  are renewed, training on the cluster and (as after every training) the evaluation, which
     *  adds the round's verified figures. */
    void startSelfTrainingRound();
    /** Whether a self-training round can start now: a trained full-frame student, its labels,
     *  nothing running. */
    bool canSelfTrain() const;

    // Deploy (workflowdeploy.cpp)
    /** Why the student cannot run on the devices now, as a sentence for the user; empty when it
     *  can: a trained full-frame student, the cluster key, a paired node, nothing running. */
    QString deploymentBlocker() const;
    /** Sends the student to every paired node, which runs it on its own camera
     *  (Task::Deployment): deviceViewed() about once a second per node, deviceFailed() for a node
     *  that refuses or drops out, taskFinished() at the end, when the session keeps each node's
     *  last report (session().deployment, the frames in deploy/). `duration_s` 0: until
     *  stopDeployment(). Refused (taskFinished(false, why)) while deploymentBlocker() says why. */
    void startDeployment(double duration_s = 0.0);
    /** Asks every node to stop; the run ends with taskFinished() once they have (or not). */
    void stopDeployment();
    bool isDeploying() const { return busy() == Task::Deployment; }

    void cancel(); // the running task (not training: stopTraining())

Q_SIGNALS:
    /** A saveInBackground() finished: ok, and "session saved to DIR" or what went wrong. */
    void saved(bool ok, const QString &text);
    /** Another session, or the same one reopened: every page reloads. */
    void sessionChanged();
    /** One part of the settings was changed through its setter. */
    void settingsChanged(edgetrain::app::Settings part);
    void taskStarted(edgetrain::app::Task task);
    void taskProgress(edgetrain::app::Task task, int done, int total, const QString &text);
    void taskFinished(edgetrain::app::Task task, bool ok, const QString &message);
    void labelsChanged();
    void datasetChanged();
    void planReady(const edgetrain::app::PlanView &plan);
    /** The session's training.plan changed: the planner ranked the nodes, or the chosen
     *  cluster's training was measured. */
    void clusterPlanChanged(); // also: a comparison ranked the nodes (clusterPreview())
    void metricsAdded(const edgetrain::app::MetricRow &row);
    void progressAdded(const edgetrain::app::ProgressRow &row);
    void epochFinished(const net::ClusterEpoch &epoch);
    void clusterEvent(const net::ClusterEvent &event);
    void evaluationChanged();
    void roundChanged(int round);
    void message(const QString &text); // for the status bar
    /** A node's latest report while the student runs on it (Deploy). */
    void deviceViewed(const edgetrain::app::DeviceView &view);
    /** A node refused the student or dropped out of the deployment; `text` says which. */
    void deviceFailed(const QString &node, const QString &text);
    /** session().deployment was replaced (a deployment ended). */
    void deploymentChanged();

private:
    void finishTask(Task task, bool ok, const QString &message);
    void restoreSession();
    void recordPaired(const NodeView &node);
    void recordForgotten(const NodeView &node);
    void connectTrainingRun();
    /** The cluster run's setup from the session (nodes, job, objective); false and why if the
     *  session cannot train yet. `names`: the nodes taking part. */
    bool buildTrainingSetup(TrainingSetup &setup, QStringList &names, QString *why) const;
    /** startTraining's and startClusterComparison's start: nothing else running and a setup
     *  built, else false (taskFinished(task, false, why) where the setup was refused). */
    bool prepareRun(Task task, TrainingSetup &setup, QStringList &names);
    void saveQuietly();
    /** The deployment's setup from the session; false and why if it cannot run now. */
    bool buildDeploymentSetup(DeploymentSetup &setup, QString *why) const;
    /** Keeps `outcome` in the session: the record and each node's last frame in deploy/. */
    void recordDeployment(const DeploymentOutcome &outcome);
    /** The setters' one path: `edit` applied to the settings alone is checked first. */
    bool changeSettings(Settings part, const std::function<void(Session &)> &edit, QString *error);
    /** A save of the session as it is now, on the saver thread (see saveInBackground). */
    void enqueueSave(bool announce);
    void saveLabels();
    /** Reads <session>/verified-detections.json when it is the current round's. */
    void loadVerifiedDetections();
    /** The current round's verified figures from the kept boxes and the truth as it is now
     *  (not while an evaluation runs: its end scores them). */
    void rescoreVerified();
    /** The same, unconditionally, without saving or signalling. */
    void applyVerifiedRound();
    /** New weights: the kept boxes are another student's (the file goes too). */
    void dropVerifiedDetections();
    void editTrack(int track, const std::function<void(vision::Track &)> &edit);

    Session m_session;
    QThreadPool m_saver; // background saves (session and labels), one after the other
    NodeRegistry m_nodes;
    LabControl m_lab{&m_nodes};
    TaskRunner m_runner;
    std::shared_ptr<const vision::LabelResult> m_labels;
    Verification m_verification;
    std::optional<VerifiedDetections> m_verifiedDetections;

    QThread m_plannerThread;
    PlannerWorker *m_planner = nullptr; // lives on m_plannerThread
    std::optional<PlanRequest> m_planPending;
    bool m_planBusy = false;

    QThread m_trainThread;
    TrainingRun *m_run = nullptr;          // lives on m_trainThread while a run goes
    bool m_trainAfterSelfTraining = false; // startSelfTrainingRound: train when the labels are new
    std::optional<ClusterPlanRecord> m_clusterPreview; // startClusterComparison's ranking
    int m_previewRanked = 0; // how many candidates it ranked (the record keeps the best 64)
    QElapsedTimer m_trainClock;
    DeploymentRun *m_deploy = nullptr; // lives on m_trainThread while a deployment goes
    QDateTime m_deployStarted;
};

} // namespace edgetrain::app

Q_DECLARE_METATYPE(edgetrain::app::MetricRow)
Q_DECLARE_METATYPE(edgetrain::app::ProgressRow)

#pragma once

#include "net/protocol/controlclient.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QList>
#include <QMetaType>
#include <QObject>
#include <QPair>
#include <QString>
#include <QTimer>

#include <cstdint>
#include <map>
#include <vector>

namespace edgetrain::app {

/** What one deployment needs, copied out of the session on the GUI thread. */
struct DeploymentSetup
{
    QString modelPath;                    // the student: <session>/detector.safetensors
    QByteArray key;                       // the cluster key
    QList<QPair<QString, quint16>> nodes; // control addresses of the nodes to run it
    double durationSeconds = 0.0;         // 0: until stop()
    double graceSeconds = 10.0;           // a node stops by itself this long after losing us
};

/** One node's report, about once a second. */
struct DeviceView
{
    QString node;                // the node's name
    QString source;              // what the node's camera is (as the node names it, "vtest.avi")
    QByteArray jpeg;             // the latest frame with its boxes drawn, small (<= 320 px wide)
    int frameDetections = 0;     // boxes in that frame
    std::int64_t frames = 0;     // frames run since the start
    std::int64_t detections = 0; // boxes since the start
    double fps = 0.0, latencyMsP50 = 0.0, latencyMsP95 = 0.0;
    double cpuPercent = 0.0; // the node process, as a share of one core (100: one core busy)
    std::int64_t rssBytes = 0;
};

struct DeploymentOutcome
{
    bool ok = false, cancelled = false;
    QString error; // why it could not start at all
    double seconds = 0.0;
    std::vector<DeviceView> last;          // each node's last report
    std::map<QString, QString> nodeErrors; // node name -> why it refused / dropped out
};

/**
 * One deployment of the student to the nodes, on a worker thread like TrainingRun (call start()
 * and stop() queued to its thread). Connects to every node and proves the cluster key, sends
 * the model file with its size and SHA-256, and asks each node to run it on its own camera; the
 * node checks the file and refuses it, or answers with a report about once a second.
 *
 * A node that refuses, fails or drops out is reported by nodeFailed() and the others go on; a
 * node whose agent predates deployments answers with an error and counts as refusing. The
 * run ends when stop() is called or durationSeconds pass (every running node is asked to stop
 * and its confirmation awaited, briefly), or when no node is left running. Every run ends with
 * exactly one done(): ok when at least one node ran the student; `error` when none could.
 */
class DeploymentRun : public QObject
{
    Q_OBJECT

public:
    explicit DeploymentRun(QObject *parent = nullptr);
    ~DeploymentRun() override;

    void start(const DeploymentSetup &setup);
    void stop();

    /** How long stopped nodes have to confirm before the run ends without them. */
    static constexpr int kStopConfirm_ms = 5000;
    /** How often every node that runs (or is starting, or stopping) the student is pinged: a
     *  node that hears nothing from its coordinator for a few seconds starts its grace period. */
    static constexpr int kPingInterval_ms = 1000;

Q_SIGNALS:
    void status(const QString &text);
    void view(const edgetrain::app::DeviceView &view);
    /** The node refused the model or dropped out (the message says which, for the window). */
    void nodeFailed(const QString &node, const QString &message);
    void done(const edgetrain::app::DeploymentOutcome &outcome);

private:
    struct Node;
    void onReady(Node *node);
    void onMessage(Node *node, const net::Frame &frame);
    void onFailed(Node *node, const QString &reason);
    /** The node is out of the run, for `message` (empty: it stopped as asked). */
    void retire(Node *node, const QString &message);
    /** Asks every running node to stop and awaits their confirmations. */
    void stopNodes();
    void finishIfIdle();
    QString nameOf(const Node *node) const;
    void end(DeploymentOutcome outcome);

    DeploymentSetup m_setup;
    QByteArray m_model;
    QByteArray m_modelSha256;
    QString m_modelId;
    std::vector<std::unique_ptr<Node>> m_nodes;
    DeploymentOutcome m_outcome;
    QElapsedTimer m_clock;
    QTimer m_duration;
    QTimer m_stopDeadline; // how long stopped nodes have to confirm
    QTimer m_ping;         // the nodes count a session that sends nothing for seconds as gone
    bool m_running = false;
    bool m_stopping = false;
    bool m_cancelled = false; // stop() rather than the duration
    bool m_anyRan = false;
    bool m_ended = false;
};

} // namespace edgetrain::app

Q_DECLARE_METATYPE(edgetrain::app::DeviceView)
Q_DECLARE_METATYPE(edgetrain::app::DeploymentOutcome)

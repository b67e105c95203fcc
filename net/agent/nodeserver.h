#pragma once

#include "core/deviceprofile.h"
#include "net/agent/deploymenthost.h"
#include "net/agent/systemsampler.h"
#include "net/protocol/controlchannel.h"
#include "net/protocol/discovery.h"
#include "net/protocol/messages/nodeinfo.h"
#include "net/protocol/sourcelimiter.h"
#include "net/training/joblink.h"
#include "net/training/shipment.h"
#include "net/training/trainingworker.h"

#include <QElapsedTimer>
#include <QHostAddress>
#include <QObject>
#include <QTcpServer>
#include <QTimer>
#include <QUdpSocket>

#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace edgetrain::net {

Q_DECLARE_LOGGING_CATEGORY(lcNode)

struct NodeOptions
{
    QString name;
    quint16 port = 0; // 0: any free port
    QByteArray cluster_key;
    quint16 discovery_port = kDiscoveryPort;
    bool multicast = true; // beacons to the multicast group; probes are answered anyway
    QHostAddress multicast_group = discoveryGroup();
    std::chrono::milliseconds beacon_interval{1000};
    std::chrono::milliseconds metrics_interval{1000};
    std::chrono::milliseconds handshake_timeout{5000};
    /** Connections that have not proven the key yet, from one address and in all: past these
     *  a new one is closed at once (the sessions already proven are never affected). */
    int max_handshakes_per_source = 8;
    int max_handshakes = 64;
    /** Discovery answers: per source and in all (SourceLimiter). */
    SourceLimiter::Options probe_limits;
    /** Metrics a subscriber has not read yet: past this many bytes queued for it, its samples
     *  are skipped until it catches up. */
    qint64 max_unsent_metrics_bytes = 1 << 20;
    std::int64_t memory_limit = -1; // bytes a training job may use (--memory-limit)
    QString data_dir;               // where datasets the node has live (--data-dir)
    /** The device it says it is (--device-profile): its cores, RAM, arch and CPU instead of this
     *  machine's. */
    std::optional<core::DeviceProfile> device_profile;
    /** The device_profile is emulated on this machine (--emulated, as the edge lab starts its
     *  nodes): this machine's power sensors, clock and temperature are not the device's. */
    bool emulated = false;
    /** The camera a deployed model may run on (--camera); null: the node refuses deployments. */
    std::shared_ptr<InferenceSource> camera;
    DeploymentOptions deployment;
};

/**
 * The node side of the control plane: listens for controllers, proves it holds the cluster key
 * and makes the peer prove it (HMAC challenge-response over fresh nonces from both sides), then
 * serves authenticated requests. A peer that has not proven the key gets nothing but a
 * refusal; any protocol violation closes that connection with a log line and the node goes on
 * serving the others. Announces itself by multicast beacons and answers unicast probes.
 */
class NodeServer : public QObject
{
    Q_OBJECT

public:
    explicit NodeServer(NodeOptions options, QObject *parent = nullptr);
    ~NodeServer() override;

    /** Binds the control and discovery sockets; false with a message if either fails. */
    bool start(QString *error);
    const NodeInfo &info() const { return m_info; }
    /** Stops a running job (it ends at its next step) and waits for its thread. */
    void stopJob();

private:
    struct Session;
    void onConnection();
    void onFrame(Session *session, const Frame &frame);
    void handleHello(Session *s, const Frame &frame);
    void handleAuth(Session *s, const Frame &frame);
    void handleRequest(Session *s, const Frame &frame);
    void refuse(Session *s, const QString &reason);
    void drop(Session *s);
    void onDatagrams();
    void sendBeacon();
    void sendMetrics();
    /** Whether an authenticated session comes from this address (a paired controller). */
    bool paired(const QString &host) const;
    /** Counts a refusal; logs the counts at most every 10 s. */
    void noteRefused(int &counter);
    void handleDataChunk(Session *s, const Frame &frame);
    /** A complete shipment by id; null if it has not arrived (or was dropped for newer ones). */
    std::shared_ptr<const core::TensorDataset> shipment(const QString &id) const;
    void handleJob(Session *s, const Frame &frame);
    void reapJob();

    static constexpr std::size_t kKeptShipments = 4;

    NodeOptions m_options;
    NodeInfo m_info;
    QTcpServer m_server;
    QUdpSocket m_discovery;
    QTimer m_beaconTimer;
    QTimer m_metricsTimer;
    SystemSampler m_sampler;
    SystemSample m_lastSample; // the last one taken while no job ran
    std::vector<std::unique_ptr<Session>> m_sessions;
    SourceLimiter m_probeLimiter;
    // Refusals since the last log line: connections past the caps, probes smaller than the
    // answer from unpaired sources, probes past the rate limits.
    int m_refusedConnections = 0, m_smallProbes = 0, m_limitedProbes = 0;
    QElapsedTimer m_sinceRefusalLog;

    // One training job at a time; it talks to the session that sent it.
    struct Job
    {
        Session *owner = nullptr;
        std::shared_ptr<JobLink> link;
        std::unique_ptr<TrainingWorker> worker;
        std::thread thread;
    };
    Job m_job;
    /** A job waiting for the node's earlier one to wind down: that one's coordinator is gone,
     *  or it is the same job again from its coordinator's new session (a node back from a
     *  freeze or a cut link rejoins its run instead of refusing it as busy). */
    struct PendingJob
    {
        Session *session = nullptr;
        Frame frame;
        QElapsedTimer waiting;
    };
    std::optional<PendingJob> m_pendingJob;
    DeploymentHost *m_deployment = nullptr; // a deployed model on the camera; never with a job
    QTimer m_pendingJobTimer;
    void startPendingJob();
    /** Complete shipments, in the order they arrived (at most kKeptShipments). */
    std::vector<std::pair<QString, std::shared_ptr<const core::TensorDataset>>> m_shipments;
};

} // namespace edgetrain::net

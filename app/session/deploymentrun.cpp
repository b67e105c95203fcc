#include "deploymentrun.h"

#include "net/protocol/messages/deploymessages.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"

#include <QCryptographicHash>
#include <QFile>
#include <QUuid>

#include <algorithm>
#include <cmath>
#include <optional>

namespace edgetrain::app {

namespace {

/** The largest file a run reads and sends; the node applies its own, smaller, limit. */
constexpr qint64 kMaxReadBytes = qint64(1) << 30;

DeploymentOutcome failure(const QString &error)
{
    DeploymentOutcome o;
    o.error = error;
    return o;
}

} // namespace

struct DeploymentRun::Node
{
    enum class State { Connecting, Starting, Running, Stopping, Done };
    net::ControlClient *client = nullptr;
    State state = State::Connecting;
    QString name; // the node's, once it has answered; its address until then
    std::optional<DeviceView> last;
};

DeploymentRun::DeploymentRun(QObject *parent)
    : QObject(parent), m_duration(this), m_stopDeadline(this), m_ping(this)
{
    qRegisterMetaType<DeviceView>();
    qRegisterMetaType<DeploymentOutcome>();
    m_duration.setSingleShot(true);
    connect(&m_duration, &QTimer::timeout, this, [this] {
        Q_EMIT status(QStringLiteral("the deployment's time is up"));
        stopNodes(); // as planned, not cancelled
    });
    m_stopDeadline.setSingleShot(true);
    connect(&m_stopDeadline, &QTimer::timeout, this, [this] {
        for (const auto &n : m_nodes)
            if (n->state != Node::State::Done)
                retire(n.get(), QStringLiteral("did not confirm the stop within %1 s")
                                    .arg(kStopConfirm_ms / 1000));
    });
    connect(&m_ping, &QTimer::timeout, this, [this] {
        for (const auto &n : m_nodes)
            if (n->state == Node::State::Starting || n->state == Node::State::Running ||
                n->state == Node::State::Stopping)
                n->client->send(net::Message::Ping);
    });
}

DeploymentRun::~DeploymentRun() = default;

QString DeploymentRun::nameOf(const Node *node) const
{
    return node->name.isEmpty() ? node->client->address() : node->name;
}

void DeploymentRun::start(const DeploymentSetup &setup)
{
    m_setup = setup;
    m_clock.start();
    m_running = true;
    QFile file(setup.modelPath);
    if (!file.open(QIODevice::ReadOnly))
        return end(failure(QStringLiteral("cannot read the model '%1': %2")
                               .arg(setup.modelPath, file.errorString())));
    if (file.size() > kMaxReadBytes)
        return end(failure(QStringLiteral("the model '%1' is %2 MiB, larger than any node takes")
                               .arg(setup.modelPath)
                               .arg(file.size() >> 20)));
    m_model = file.readAll();
    m_modelSha256 = QCryptographicHash::hash(m_model, QCryptographicHash::Sha256);
    m_modelId = QUuid::createUuid().toString(QUuid::WithoutBraces);
    if (setup.nodes.isEmpty())
        return end(failure(QStringLiteral("no nodes to deploy to")));
    Q_EMIT status(setup.nodes.size() == 1
                      ? QStringLiteral("connecting to 1 node")
                      : QStringLiteral("connecting to %1 nodes").arg(setup.nodes.size()));
    for (const auto &[host, port] : setup.nodes) {
        auto node = std::make_unique<Node>();
        Node *n = node.get();
        n->client = new net::ControlClient(host, port, setup.key, this);
        connect(n->client, &net::ControlClient::ready, this, [this, n] { onReady(n); });
        connect(n->client, &net::ControlClient::message, this,
                [this, n](const net::Frame &f) { onMessage(n, f); });
        connect(n->client, &net::ControlClient::failed, this,
                [this, n](const QString &reason) { onFailed(n, reason); });
        m_nodes.push_back(std::move(node));
        n->client->connectToNode();
    }
    if (setup.durationSeconds > 0)
        m_duration.start(int(std::lround(setup.durationSeconds * 1000)));
    m_ping.start(kPingInterval_ms);
}

void DeploymentRun::onReady(Node *n)
{
    n->name = n->client->node().name;
    if (m_stopping) {
        retire(n, {});
        return;
    }
    // A node that stops answering (frozen, its link cut) is failed after a few silent seconds.
    n->client->subscribeMetrics();
    const qint64 chunks = std::max<qint64>(1, (m_model.size() + net::DeployModel::kChunkBytes - 1) /
                                                  net::DeployModel::kChunkBytes);
    for (qint64 i = 0; i < chunks; ++i) {
        net::DeployModel chunk;
        chunk.id = m_modelId;
        chunk.index = i;
        chunk.total = chunks;
        chunk.file_bytes = m_model.size();
        chunk.sha256 = m_modelSha256;
        chunk.data = m_model.mid(i * net::DeployModel::kChunkBytes, net::DeployModel::kChunkBytes);
        n->client->send(net::Message::DeployModel, chunk.toCbor());
    }
    net::DeployStart start;
    start.id = m_modelId;
    start.grace_ms = std::llround(std::max(0.0, m_setup.graceSeconds) * 1000);
    n->client->send(net::Message::DeployStart, start.toCbor());
    n->state = Node::State::Starting;
    Q_EMIT status(QStringLiteral("%1: the student sent (%2 KiB)")
                      .arg(nameOf(n))
                      .arg((m_model.size() + 1023) / 1024));
}

void DeploymentRun::onMessage(Node *n, const net::Frame &frame)
{
    if (n->state == Node::State::Done)
        return;
    QString error;
    if (frame.type == net::Message::DeployRefused || frame.type == net::Message::DeployFailed) {
        QString message = net::Failure::fromCbor(frame.body).message;
        if (message.isEmpty())
            message = QStringLiteral("no reason given");
        retire(n, frame.type == net::Message::DeployRefused
                      ? QStringLiteral("refused the student: %1").arg(message)
                      : QStringLiteral("the student stopped running: %1").arg(message));
    } else if (frame.type == net::Message::DeployAccepted) {
        const auto accepted = net::DeployAccepted::fromCbor(frame.body, &error);
        if (!accepted)
            return retire(n, error);
        if (n->state == Node::State::Starting)
            n->state = Node::State::Running;
        m_anyRan = true;
        Q_EMIT status(QStringLiteral("%1 runs the student on %2").arg(nameOf(n), accepted->source));
    } else if (frame.type == net::Message::DeployReport) {
        const auto report = net::DeployReport::fromCbor(frame.body, &error);
        if (!report)
            return retire(n, error);
        DeviceView v;
        v.node = nameOf(n);
        v.source = report->source;
        v.jpeg = report->jpeg;
        v.frameDetections = int(report->frame_detections);
        v.frames = report->frames;
        v.detections = report->detections;
        v.fps = report->fps;
        v.latencyMsP50 = report->latency_ms_p50;
        v.latencyMsP95 = report->latency_ms_p95;
        v.cpuPercent = report->cpu_percent;
        v.rssBytes = report->rss_bytes;
        n->last = v;
        Q_EMIT view(v);
    } else if (frame.type == net::Message::Error) {
        // An agent older than deployments knows none of their messages: it would never answer
        // deploy_start. Stopping, the node says it runs nothing: stopped already.
        if (n->state == Node::State::Starting)
            retire(n, QStringLiteral("refused the student: this node's agent is too old to run a "
                                     "student (it answered: %1)")
                          .arg(net::Failure::fromCbor(frame.body).message));
        else if (n->state == Node::State::Stopping)
            retire(n, {});
    } else if (frame.type == net::Message::DeployStopped) {
        retire(n, n->state == Node::State::Stopping
                      ? QString()
                      : QStringLiteral("stopped the student by itself"));
    }
}

void DeploymentRun::onFailed(Node *n, const QString &reason)
{
    if (n->state == Node::State::Done)
        return;
    retire(n, n->state == Node::State::Connecting
                  ? QStringLiteral("cannot be reached: %1").arg(reason)
                  : QStringLiteral("dropped out: %1").arg(reason));
}

void DeploymentRun::retire(Node *n, const QString &message)
{
    if (n->state == Node::State::Done)
        return;
    const QString name = nameOf(n);
    n->state = Node::State::Done;
    if (n->last)
        m_outcome.last.push_back(*n->last);
    if (!message.isEmpty()) {
        m_outcome.nodeErrors[name] = message;
        Q_EMIT nodeFailed(name, message);
    }
    n->client->close();
    QTimer::singleShot(0, this, [this] { finishIfIdle(); });
}

void DeploymentRun::stop()
{
    if (!m_running || m_stopping)
        return;
    m_cancelled = true;
    stopNodes();
}

void DeploymentRun::stopNodes()
{
    if (m_stopping)
        return;
    m_stopping = true;
    m_duration.stop();
    Q_EMIT status(QStringLiteral("stopping the nodes"));
    for (const auto &n : m_nodes) {
        if (n->state == Node::State::Starting || n->state == Node::State::Running) {
            n->client->send(net::Message::DeployStop);
            n->state = Node::State::Stopping;
        } else if (n->state == Node::State::Connecting) {
            retire(n.get(), {});
        }
    }
    m_stopDeadline.start(kStopConfirm_ms);
    finishIfIdle();
}

void DeploymentRun::finishIfIdle()
{
    if (m_ended || !std::all_of(m_nodes.begin(), m_nodes.end(),
                                [](const auto &n) { return n->state == Node::State::Done; }))
        return;
    DeploymentOutcome o = std::move(m_outcome);
    o.ok = m_anyRan;
    o.cancelled = m_cancelled;
    if (!m_anyRan && !m_cancelled && o.error.isEmpty()) {
        QStringList why;
        for (const auto &[node, message] : o.nodeErrors)
            why << QStringLiteral("%1 %2").arg(node, message);
        o.error =
            QStringLiteral("no node runs the student: %1").arg(why.join(QStringLiteral("; ")));
    }
    end(std::move(o));
}

void DeploymentRun::end(DeploymentOutcome outcome)
{
    if (m_ended)
        return;
    m_ended = true;
    m_running = false;
    m_duration.stop();
    m_stopDeadline.stop();
    m_ping.stop();
    outcome.seconds = double(m_clock.elapsed()) / 1000.0;
    Q_EMIT done(outcome);
}

} // namespace edgetrain::app

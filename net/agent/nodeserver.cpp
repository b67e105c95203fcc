#include "net/agent/nodeserver.h"

#include "core/parallel.h"
#include "net/protocol/keyfile.h"
#include "net/protocol/messages/handshake.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"
#include "net/training/shipment.h"

#include <QCborValue>
#include <QNetworkDatagram>
#include <QUuid>

#include <algorithm>

namespace edgetrain::net {

Q_LOGGING_CATEGORY(lcNode, "edgetrain.node")

struct NodeServer::Session
{
    enum class State { AwaitHello, AwaitAuth, Ready };
    ControlChannel *channel = nullptr;
    State state = State::AwaitHello;
    QByteArray clientNonce;
    QByteArray serverNonce;
    bool subscribed = false;
    QTimer handshakeTimer;
    std::unique_ptr<ShipmentAssembler> shipment; // the one arriving, if any
};

NodeServer::NodeServer(NodeOptions options, QObject *parent)
    : QObject(parent), m_options(std::move(options)), m_probeLimiter(m_options.probe_limits)
{
    const DeviceInfo device = DeviceInfo::read();
    m_info.id = QUuid::createUuid().toString(QUuid::WithoutBraces);
    m_info.name = m_options.name;
    m_info.version = QStringLiteral(EDGETRAIN_VERSION);
    m_info.protocol = Frame::kVersion;
    m_info.shipment_encodings = {QString::fromLatin1(Shipment::kPalette8)};
    m_info.key_fingerprint = keyFingerprint(m_options.cluster_key);
    m_info.cores = device.cores;
    m_info.ram_bytes = device.ram_bytes;
    m_info.arch = device.arch;
    m_info.cpu_model = device.cpu_model;
    if (const auto &p = m_options.device_profile) {
        m_info.cores = p->cores;
        m_info.ram_bytes = p->ram_bytes;
        m_info.arch = QString::fromStdString(p->arch);
        m_info.cpu_model = QString::fromStdString(p->cpu_model);
        m_info.device_profile = QString::fromStdString(p->id);
        m_sampler.setPowerModel(*p, m_options.emulated ? SystemSampler::Device::Emulated
                                                       : SystemSampler::Device::ThisMachine);
    }
    connect(&m_server, &QTcpServer::newConnection, this, &NodeServer::onConnection);
    connect(&m_discovery, &QUdpSocket::readyRead, this, &NodeServer::onDatagrams);
    connect(&m_beaconTimer, &QTimer::timeout, this, &NodeServer::sendBeacon);
    connect(&m_metricsTimer, &QTimer::timeout, this, &NodeServer::sendMetrics);
    m_deployment = new DeploymentHost(m_options.camera, m_options.deployment, this);
    m_pendingJobTimer.setInterval(50);
    connect(&m_pendingJobTimer, &QTimer::timeout, this, &NodeServer::startPendingJob);
}

NodeServer::~NodeServer()
{
    m_deployment->stop();
    stopJob();
}

void NodeServer::stopJob()
{
    if (m_job.link)
        m_job.link->close(QStringLiteral("the node is stopping"));
    if (m_job.thread.joinable())
        m_job.thread.join();
    m_job = Job();
}

void NodeServer::reapJob()
{
    // A finished worker's thread is joined before the next job starts (it has ended already).
    if (m_job.worker && !m_job.worker->status().active && m_job.thread.joinable()) {
        m_job.thread.join();
        m_job = Job();
    }
}

bool NodeServer::start(QString *error)
{
    if (!m_server.listen(QHostAddress::Any, m_options.port)) {
        *error = QStringLiteral("cannot listen on control port %1: %2")
                     .arg(m_options.port)
                     .arg(m_server.errorString());
        return false;
    }
    m_info.control_port = m_server.serverPort();
    if (!m_discovery.bind(QHostAddress::AnyIPv4, m_options.discovery_port,
                          QUdpSocket::ShareAddress | QUdpSocket::ReuseAddressHint)) {
        *error = QStringLiteral("cannot bind discovery port %1: %2")
                     .arg(m_options.discovery_port)
                     .arg(m_discovery.errorString());
        return false;
    }
    if (m_options.multicast) {
        if (!m_discovery.joinMulticastGroup(m_options.multicast_group))
            qCWarning(lcNode) << "cannot join multicast group"
                              << m_options.multicast_group.toString()
                              << "- answering probes only:" << m_discovery.errorString();
        m_beaconTimer.start(m_options.beacon_interval);
        sendBeacon();
    }
    m_metricsTimer.start(m_options.metrics_interval);
    qCInfo(lcNode).noquote() << QStringLiteral(
                                    "node '%1' (%2) on control port %3, discovery port %4%5")
                                    .arg(m_info.name, m_info.id)
                                    .arg(m_info.control_port)
                                    .arg(m_options.discovery_port)
                                    .arg(m_options.multicast ? QStringLiteral(", multicast beacons")
                                                             : QStringLiteral(", probes only"));
    return true;
}

bool NodeServer::paired(const QString &host) const
{
    return std::any_of(m_sessions.begin(), m_sessions.end(), [&](const auto &s) {
        return s->state == Session::State::Ready && s->channel->peerHost() == host;
    });
}

void NodeServer::noteRefused(int &counter)
{
    ++counter;
    if (m_sinceRefusalLog.isValid() && m_sinceRefusalLog.elapsed() < 10000)
        return;
    m_sinceRefusalLog.start();
    qCWarning(lcNode).noquote()
        << QStringLiteral("refused since the last report: %1 connection(s) past the handshake "
                          "caps (%2 per address, %3 in all), %4 probe(s) smaller than the "
                          "answer from unpaired addresses, %5 probe(s) past the rate limits")
               .arg(m_refusedConnections)
               .arg(m_options.max_handshakes_per_source)
               .arg(m_options.max_handshakes)
               .arg(m_smallProbes)
               .arg(m_limitedProbes);
    m_refusedConnections = m_smallProbes = m_limitedProbes = 0;
}

void NodeServer::onConnection()
{
    while (QTcpSocket *socket = m_server.nextPendingConnection()) {
        // Caps on connections that have not proven the key: per address and in all.
        const QString host = ControlChannel::hostText(socket->peerAddress());
        int fromHost = 0, pending = 0;
        for (const auto &s : m_sessions)
            if (s->state != Session::State::Ready) {
                ++pending;
                fromHost += s->channel->peerHost() == host ? 1 : 0;
            }
        if (fromHost >= m_options.max_handshakes_per_source ||
            pending >= m_options.max_handshakes) {
            socket->abort();
            socket->deleteLater();
            noteRefused(m_refusedConnections);
            continue;
        }
        // The kernel's probes close a connection whose peer vanished without a FIN, in case
        // nothing is sent on it (the deployment host does not wait for them: owner_silence).
        socket->setSocketOption(QAbstractSocket::KeepAliveOption, 1);
        auto session = std::make_unique<Session>();
        Session *s = session.get();
        s->channel = new ControlChannel(socket, this);
        connect(s->channel, &ControlChannel::frameReceived, this,
                [this, s](const Frame &f) { onFrame(s, f); });
        connect(s->channel, &ControlChannel::closed, this, [this, s](const QString &reason) {
            if (s->state == Session::State::Ready)
                qCInfo(lcNode).noquote() << "session" << s->channel->peer() << "closed:" << reason;
            else if (reason == QLatin1String("peer disconnected"))
                qCWarning(lcNode).noquote()
                    << "handshake with" << s->channel->peer() << "abandoned by the peer";
            else
                qCWarning(lcNode).noquote() << "refused" << s->channel->peer() << "-" << reason;
            QTimer::singleShot(0, this, [this, s] { drop(s); });
        });
        s->handshakeTimer.setSingleShot(true);
        connect(&s->handshakeTimer, &QTimer::timeout, this, [this, s] {
            if (s->state != Session::State::Ready)
                refuse(s, QStringLiteral("no handshake within %1 ms")
                              .arg(m_options.handshake_timeout.count()));
        });
        s->handshakeTimer.start(m_options.handshake_timeout);
        m_sessions.push_back(std::move(session));
    }
}

void NodeServer::drop(Session *s)
{
    const auto it = std::find_if(m_sessions.begin(), m_sessions.end(),
                                 [s](const auto &p) { return p.get() == s; });
    if (it == m_sessions.end())
        return;
    if (m_job.owner == s) {
        // The coordinator is gone: the job stops (the other nodes lose it too and stop).
        m_job.link->close(QStringLiteral("the coordinator's session closed"));
        m_job.owner = nullptr;
    }
    if (m_pendingJob && m_pendingJob->session == s)
        m_pendingJob.reset();
    m_deployment->sessionClosed(s->channel);
    s->channel->deleteLater();
    m_sessions.erase(it);
}

void NodeServer::refuse(Session *s, const QString &reason)
{
    s->channel->send(Message::Refused, Refused{reason}.toCbor());
    s->channel->close(reason);
}

void NodeServer::onFrame(Session *s, const Frame &frame)
{
    switch (s->state) {
    case Session::State::AwaitHello:
        if (frame.type != Message::Hello || frame.authenticated)
            return refuse(s, QStringLiteral("expected hello, got '%1' before authentication")
                                 .arg(frame.type.left(32)));
        return handleHello(s, frame);
    case Session::State::AwaitAuth:
        if (frame.type != Message::Auth || frame.authenticated)
            return refuse(s, QStringLiteral("expected auth, got '%1'").arg(frame.type.left(32)));
        return handleAuth(s, frame);
    case Session::State::Ready:
        return handleRequest(s, frame);
    }
}

void NodeServer::handleHello(Session *s, const Frame &frame)
{
    const QByteArray nonce = Hello::fromCbor(frame.body).nonce;
    if (nonce.size() != Handshake::kNonceBytes)
        return refuse(s,
                      QStringLiteral("hello without a %1-byte nonce").arg(Handshake::kNonceBytes));
    s->clientNonce = nonce;
    s->serverNonce = randomBytes(Handshake::kNonceBytes);
    const Challenge challenge{
        s->serverNonce,
        Handshake::serverProof(m_options.cluster_key, s->clientNonce, s->serverNonce)};
    s->channel->send(Message::Challenge, challenge.toCbor());
    s->state = Session::State::AwaitAuth;
}

void NodeServer::handleAuth(Session *s, const Frame &frame)
{
    const QByteArray proof = Auth::fromCbor(frame.body).proof;
    if (!constantTimeEquals(
            proof, Handshake::clientProof(m_options.cluster_key, s->clientNonce, s->serverNonce)))
        return refuse(s, QStringLiteral("the peer did not prove the cluster key"));
    s->channel->setSessionKey(
        Handshake::sessionKey(m_options.cluster_key, s->clientNonce, s->serverNonce));
    s->state = Session::State::Ready;
    s->handshakeTimer.stop();
    qCInfo(lcNode).noquote() << "session" << s->channel->peer() << "authenticated";
    NodeInfo welcome = m_info;
    welcome.load = m_sampler.sample().load1;
    s->channel->send(Message::Welcome, welcome.withCapabilities());
}

void NodeServer::handleRequest(Session *s, const Frame &frame)
{
    m_deployment->heard(s->channel); // a deployment's session is alive while it sends anything
    if (frame.type == Message::Ping) {
        s->channel->send(Message::Pong, frame.body);
    } else if (frame.type == Message::Subscribe) {
        s->subscribed = true;
    } else if (frame.type == Message::Unsubscribe) {
        s->subscribed = false;
    } else if (frame.type == Message::DataChunk) {
        handleDataChunk(s, frame);
    } else if (frame.type == Message::Job) {
        handleJob(s, frame);
    } else if (DeploymentHost::handles(frame.type)) {
        reapJob();
        m_deployment->handle(
            s->channel, frame,
            m_job.worker
                ? QStringLiteral("busy with training job '%1'").arg(m_job.worker->status().job)
                : QString());
    } else if (frame.type == Message::Reply) {
        if (m_job.owner != s || !m_job.link->deliver(frame.body))
            qCWarning(lcNode).noquote()
                << "session" << s->channel->peer() << "sent a reply nobody waits for";
    } else if (frame.type == Message::Stop) {
        if (m_job.owner == s) {
            qCInfo(lcNode).noquote() << "job" << m_job.worker->status().job << "asked to stop";
            m_job.link->requestStop();
        }
    } else {
        qCWarning(lcNode).noquote() << "session" << s->channel->peer()
                                    << "sent unknown message type" << frame.type.left(32);
        s->channel->send(
            Message::Error,
            Failure{QStringLiteral("unknown message type '%1'").arg(frame.type.left(32))}.toCbor());
    }
}

void NodeServer::handleDataChunk(Session *s, const Frame &frame)
{
    if (ShipmentChunk::fromCbor(frame.body).index == 0)
        s->shipment = std::make_unique<ShipmentAssembler>();
    QString error;
    if (!s->shipment || !s->shipment->add(frame.body, &error)) {
        if (error.isEmpty())
            error = QStringLiteral("data chunk without a shipment header");
        qCWarning(lcNode).noquote() << "session" << s->channel->peer() << "-" << error;
        s->channel->send(Message::DataRefused, Failure{error}.toCbor());
        s->shipment.reset();
        return;
    }
    if (!s->shipment->complete())
        return;
    try {
        const QString id = s->shipment->id();
        auto data = s->shipment->take();
        qCInfo(lcNode).noquote() << "shipment" << id << "complete:" << data->size() << "samples";
        // At most four complete shipments are kept; to make room the one that arrived first
        // goes, so a job's training set is never dropped for its own test set. A shipment sent
        // again replaces the earlier one. A running job holds its own reference to its data, so
        // dropping a shipment never takes it from under a job.
        std::erase_if(m_shipments, [&](const auto &kept) { return kept.first == id; });
        while (m_shipments.size() >= kKeptShipments)
            m_shipments.erase(m_shipments.begin());
        m_shipments.emplace_back(id, std::move(data));
        s->channel->send(Message::DataReceived, Receipt{id}.toCbor());
    } catch (const std::exception &e) {
        s->channel->send(Message::DataRefused, Failure{QString::fromUtf8(e.what())}.toCbor());
    }
    s->shipment.reset();
}

std::shared_ptr<const core::TensorDataset> NodeServer::shipment(const QString &id) const
{
    for (const auto &[kept, data] : m_shipments)
        if (kept == id)
            return data;
    return nullptr;
}

void NodeServer::handleJob(Session *s, const Frame &frame)
{
    reapJob();
    auto refuseJob = [&](const QString &message) {
        qCWarning(lcNode).noquote() << "job from" << s->channel->peer() << "refused:" << message;
        s->channel->send(Message::JobRefused, Failure{message}.toCbor());
    };
    if (m_job.worker) {
        const QString running = m_job.worker->status().job;
        const QString id = JobSpec::idOf(frame.body);
        if (m_job.owner != nullptr && (m_job.owner == s || id != running))
            return refuseJob(QStringLiteral("busy with job '%1'").arg(running));
        // Its coordinator is gone, or came back with the same job on a new session (it lost
        // this node to a freeze or a cut link and calls it back): the old run ends, the new one
        // starts once it has.
        m_job.link->close(QStringLiteral("its coordinator came back with a new session"));
        m_job.owner = nullptr;
        if (m_pendingJob && m_pendingJob->session != s)
            m_pendingJob->session->channel->send(
                Message::JobRefused, Failure{QStringLiteral("replaced by a newer job")}.toCbor());
        m_pendingJob = PendingJob{s, frame, {}};
        m_pendingJob->waiting.start();
        m_pendingJobTimer.start();
        qCInfo(lcNode).noquote() << "job" << id << "from" << s->channel->peer() << "waits for job"
                                 << running << "to wind down";
        return;
    }
    if (m_deployment->running())
        return refuseJob(QStringLiteral("busy running a deployed model"));
    QString error;
    const auto job = JobSpec::fromCbor(frame.body, &error);
    if (!job)
        return refuseJob(error);
    WorkerContext context;
    context.bind_address = s->channel->localAddress().toStdString();
    context.memory_limit = m_options.memory_limit;
    context.data_dir = m_options.data_dir.toStdString();
    const SystemSampler::PowerFigures power =
        m_sampler.powerFigures(core::threadCount(), m_info.cores, m_lastSample);
    context.idle_watts = power.idle_watts;
    context.busy_watts = power.busy_watts;
    context.power_source = power.source;
    context.cpu_quota_cores = m_sampler.cgroup().cpu_cores;
    context.cpu_period_seconds = m_sampler.cgroup().cpu_period_seconds;
    context.busy_cores = power.busy_cores;
    context.coordinator_host = s->channel->peerHost().toStdString();
    if (job->dataset == QLatin1String("shipped")) {
        context.train = shipment(job->train_shipment);
        if (!context.train)
            return refuseJob(
                QStringLiteral("shipment '%1' has not arrived").arg(job->train_shipment));
        if (!job->test_shipment.isEmpty()) {
            context.test = shipment(job->test_shipment);
            if (!context.test)
                return refuseJob(
                    QStringLiteral("shipment '%1' has not arrived").arg(job->test_shipment));
        }
    }
    QPointer<ControlChannel> channel = s->channel;
    m_job.owner = s;
    m_job.link =
        std::make_shared<JobLink>([this, channel](const QString &type, const QCborMap &body) {
            QMetaObject::invokeMethod(
                this,
                [this, channel, type, body] {
                    // A sample when the job is ready to train and at each epoch's end, before
                    // either is reported: what the device used while it trained is known even
                    // for a run shorter than the sampling interval (the study's per-node
                    // figures; its energy between two readings — with the epoch's end alone a
                    // short run's began before the first reading and counted none).
                    if (type == Message::JobReady || type == Message::EpochDone)
                        sendMetrics();
                    if (channel)
                        channel->send(type, body);
                },
                Qt::QueuedConnection);
        });
    m_job.worker = std::make_unique<TrainingWorker>(*job, m_job.link, context);
    m_job.thread = std::thread([worker = m_job.worker.get()] { worker->run(); });
    qCInfo(lcNode).noquote() << "job" << job->id << "accepted from" << s->channel->peer() << "("
                             << modeName(job->mode) << ")";
    s->channel->send(Message::JobAccepted, Receipt{job->id}.toCbor());
}

void NodeServer::startPendingJob()
{
    reapJob();
    if (!m_pendingJob) {
        m_pendingJobTimer.stop();
        return;
    }
    if (m_job.worker) {
        // A step or a collective's timeout bounds how long a closed job runs on; past a minute
        // something holds it, and the caller hears so.
        if (m_pendingJob->waiting.elapsed() < 60000)
            return;
        m_pendingJobTimer.stop();
        m_pendingJob->session->channel->send(
            Message::JobRefused,
            Failure{QStringLiteral("busy with job '%1', which did not end within 60 s")
                        .arg(m_job.worker->status().job)}
                .toCbor());
        m_pendingJob.reset();
        return;
    }
    m_pendingJobTimer.stop();
    const PendingJob pending = std::move(*m_pendingJob);
    m_pendingJob.reset();
    handleJob(pending.session, pending.frame);
}

void NodeServer::sendMetrics()
{
    SystemSample sample = m_sampler.sample();
    if (!m_job.worker)
        m_lastSample = sample; // the device idle, for the planner's power figures
    m_info.load = sample.load1;
    if (m_job.worker)
        sample.training = m_job.worker->status();
    const QCborMap body = sample.toCbor();
    for (const auto &s : m_sessions)
        if (s->state == Session::State::Ready && s->subscribed &&
            s->channel->unsentBytes() <= m_options.max_unsent_metrics_bytes)
            s->channel->send(Message::Metrics, body);
}

void NodeServer::sendBeacon()
{
    m_discovery.writeDatagram(QCborValue(m_info.toCbor()).toCbor(), m_options.multicast_group,
                              m_options.discovery_port);
}

void NodeServer::onDatagrams()
{
    while (m_discovery.hasPendingDatagrams()) {
        const QNetworkDatagram d = m_discovery.receiveDatagram(kProbeBytes * 2);
        // Bytes that do not decode are noise. Never look into them: for a truncated map Qt 6.4
        // hands back a half-built QCborMap whose lookups read past its end.
        QCborParserError parseError;
        const QCborValue datagram = QCborValue::fromCbor(d.data(), &parseError);
        if (parseError.error != QCborError::NoError)
            continue;
        const QCborMap m = datagram.toMap();
        if (!ProbeDatagram::isProbe(m))
            continue; // beacons of other nodes, or noise
        // Not an amplifier: an unpaired address gets no more bytes than it sent (probes are
        // padded to kProbeBytes), and no address more answers than the rate limits allow.
        const QString host = ControlChannel::hostText(d.senderAddress());
        const QByteArray answer = QCborValue(m_info.toCbor()).toCbor();
        if (answer.size() > d.data().size() && !paired(host)) {
            noteRefused(m_smallProbes);
            continue;
        }
        if (!m_probeLimiter.allow(host.toStdString())) {
            noteRefused(m_limitedProbes);
            continue;
        }
        m_discovery.writeDatagram(answer, d.senderAddress(), quint16(d.senderPort()));
    }
}

} // namespace edgetrain::net

#include "net/protocol/controlclient.h"

#include "net/protocol/messages/handshake.h"
#include "net/protocol/nodeid.h"
#include "net/protocol/protocol.h"

#include <QCborValue>
#include <QEventLoop>
#include <QHostInfo>
#include <QNetworkDatagram>
#include <QUdpSocket>

#include <map>

namespace edgetrain::net {

ControlClient::ControlClient(QString host, quint16 port, QByteArray clusterKey, QObject *parent)
    : QObject(parent), m_host(std::move(host)), m_port(port), m_key(std::move(clusterKey))
{
    m_silence.setSingleShot(true);
    connect(&m_silence, &QTimer::timeout, this, [this] {
        fail(QStringLiteral("%1 stopped answering (no metrics for %2 ms)")
                 .arg(address())
                 .arg(m_silence.interval()));
        if (m_channel)
            m_channel->close(QStringLiteral("node stopped answering"));
    });
    m_timeout.setSingleShot(true);
    connect(&m_timeout, &QTimer::timeout, this, [this] {
        if (!m_ready)
            fail(QStringLiteral("no answer from %1 within the timeout").arg(address()));
    });
}

QString ControlClient::address() const
{
    return hostPort(m_host, m_port);
}

QString ControlClient::localAddress() const
{
    return m_channel ? m_channel->localAddress() : QString();
}

void ControlClient::connectToNode(std::chrono::milliseconds timeout)
{
    auto *socket = new QTcpSocket;
    m_channel = new ControlChannel(socket, this);
    // A node busy taking a large shipment may send its metrics late; that it keeps reading what
    // we send shows it is alive.
    connect(m_channel, &ControlChannel::bytesDelivered, this, [this] {
        if (m_silence.isActive())
            m_silence.start();
    });
    connect(m_channel, &ControlChannel::frameReceived, this, &ControlClient::onFrame);
    connect(m_channel, &ControlChannel::closed, this, [this](const QString &reason) {
        fail(m_ready ? QStringLiteral("connection to %1 lost: %2").arg(address(), reason)
                     : QStringLiteral("%1: %2").arg(address(), reason));
    });
    connect(socket, &QTcpSocket::connected, this, [this] {
        m_nonce = randomBytes(Handshake::kNonceBytes);
        m_channel->send(Message::Hello, Hello{m_nonce, Frame::kVersion}.toCbor());
    });
    m_timeout.start(timeout);
    socket->connectToHost(m_host, m_port);
}

void ControlClient::onFrame(const Frame &frame)
{
    if (m_silence.isActive())
        m_silence.start(); // alive
    if (frame.type == Message::Refused)
        return fail(QStringLiteral("%1 refused the connection: %2")
                        .arg(address(), Refused::fromCbor(frame.body).reason));
    if (!m_ready && frame.type == Message::Challenge && !frame.authenticated &&
        !m_channel->hasSessionKey()) {
        const Challenge challenge = Challenge::fromCbor(frame.body);
        const QByteArray &nodeNonce = challenge.nonce;
        if (nodeNonce.size() != Handshake::kNonceBytes ||
            !constantTimeEquals(challenge.proof, Handshake::serverProof(m_key, m_nonce, nodeNonce)))
            return fail(
                QStringLiteral("%1 does not hold the cluster key (wrong key file on one side?)")
                    .arg(address()));
        m_channel->send(Message::Auth,
                        Auth{Handshake::clientProof(m_key, m_nonce, nodeNonce)}.toCbor());
        m_channel->setSessionKey(Handshake::sessionKey(m_key, m_nonce, nodeNonce));
        return;
    }
    if (!frame.authenticated)
        return fail(QStringLiteral("%1 sent '%2' outside the handshake")
                        .arg(address(), frame.type.left(32)));
    if (frame.type == Message::Welcome) {
        const auto info = NodeInfo::fromCbor(frame.body);
        if (!info)
            return fail(QStringLiteral("%1 sent a malformed welcome").arg(address()));
        m_node = *info;
        m_ready = true;
        m_timeout.stop();
        Q_EMIT ready(m_node);
    } else if (frame.type == Message::Metrics) {
        Q_EMIT metrics(SystemSample::fromCbor(frame.body));
    } else {
        Q_EMIT message(frame);
    }
}

void ControlClient::subscribeMetrics(std::chrono::milliseconds silence)
{
    send(Message::Subscribe);
    m_silence.start(silence);
}

void ControlClient::send(const QString &type, const QCborMap &body)
{
    if (m_channel && m_ready)
        m_channel->send(type, body);
}

void ControlClient::close()
{
    m_failed = true; // our own decision, not a failure to report
    m_ready = false;
    m_silence.stop();
    if (m_channel)
        m_channel->close(QStringLiteral("closed by the controller"));
}

void ControlClient::fail(const QString &reason)
{
    if (m_failed)
        return;
    m_failed = true;
    m_ready = false;
    m_timeout.stop();
    m_silence.stop();
    Q_EMIT failed(reason);
}

NodeBrowser::NodeBrowser(QObject *parent) : QObject(parent)
{
    connect(&m_timer, &QTimer::timeout, this, &NodeBrowser::probeNow);
}

void NodeBrowser::addTarget(const Target &target)
{
    if (!m_targets.contains(target))
        m_targets.append(target);
    probeNow();
}

bool NodeBrowser::start(std::chrono::milliseconds interval, QString *error)
{
    if (!m_socket) {
        m_socket = new QUdpSocket(this);
        if (!m_socket->bind(QHostAddress::AnyIPv4, 0)) {
            *error = QStringLiteral("cannot open a UDP socket: %1").arg(m_socket->errorString());
            delete m_socket;
            m_socket = nullptr;
            return false;
        }
        connect(m_socket, &QUdpSocket::readyRead, this, [this] {
            while (m_socket->hasPendingDatagrams()) {
                const QNetworkDatagram d = m_socket->receiveDatagram(4096);
                // Not decoding: garbage (and a truncated map's half-built QCborMap must not be
                // read: Qt 6.4's lookups run past its end).
                QCborParserError parseError;
                const QCborValue datagram = QCborValue::fromCbor(d.data(), &parseError);
                if (parseError.error != QCborError::NoError)
                    continue;
                const auto info = NodeInfo::fromCbor(datagram.toMap());
                if (!info)
                    continue; // foreign or garbage datagrams
                NodeInfo n = *info;
                n.address = QHostAddress(d.senderAddress().toIPv4Address());
                Q_EMIT nodeSeen(n);
            }
        });
    }
    m_timer.start(interval);
    probeNow();
    return true;
}

void NodeBrowser::stop()
{
    m_timer.stop();
}

void NodeBrowser::probeNow()
{
    if (!m_socket)
        return;
    static const QByteArray probe =
        QCborValue(ProbeDatagram{Frame::kVersion}.toCbor(kProbeBytes)).toCbor();
    for (const Target &t : std::as_const(m_targets))
        m_socket->writeDatagram(probe, t.address, t.port);
}

DiscoveryProbe::DiscoveryProbe(QObject *parent) : QObject(parent) {}

QList<NodeInfo> DiscoveryProbe::run(const QList<Target> &targets, std::chrono::milliseconds timeout,
                                    QString *error)
{
    NodeBrowser browser;
    browser.setTargets(targets);
    std::map<QString, NodeInfo> found;
    connect(&browser, &NodeBrowser::nodeSeen, this, [&](const NodeInfo &n) { found[n.id] = n; });
    if (!browser.start(
            std::max<std::chrono::milliseconds>(timeout / 4, std::chrono::milliseconds(100)),
            error))
        return {};
    QEventLoop loop;
    QTimer::singleShot(timeout, &loop, &QEventLoop::quit);
    loop.exec();
    QList<NodeInfo> list;
    for (const auto &[id, n] : found)
        list.append(n);
    return list;
}

bool parseHostPorts(const QString &text, QList<QPair<QString, quint16>> *out, QString *error)
{
    for (const QString &raw : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString item = raw.trimmed();
        const int colon = item.lastIndexOf(QLatin1Char(':'));
        bool ok = false;
        const uint port = colon > 0 ? item.mid(colon + 1).toUInt(&ok) : 0;
        QString host = colon > 0 ? item.left(colon) : QString();
        if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
            host = host.mid(1, host.size() - 2);
        else if (host.contains(QLatin1Char(':')))
            host.clear(); // an IPv6 address needs its brackets: "[fe80::1]:45454"
        if (host.isEmpty() || !ok || port == 0 || port > 65535) {
            *error = QStringLiteral("'%1' is not host:port").arg(item);
            return false;
        }
        out->append({host, quint16(port)});
    }
    if (out->isEmpty()) {
        *error = QStringLiteral("no host:port given");
        return false;
    }
    return true;
}

bool parseDiscoveryTargets(const QString &text, QList<NodeBrowser::Target> *out, QString *error)
{
    QList<QPair<QString, quint16>> list;
    if (!parseHostPorts(text, &list, error))
        return false;
    for (const auto &[host, port] : list) {
        QHostAddress address(host);
        if (address.isNull() && !resolvedAddress(host, QHostInfo::fromName(host), &address, error))
            return false;
        out->append({address, port});
    }
    return true;
}

bool resolvedAddress(const QString &host, const QHostInfo &info, QHostAddress *address,
                     QString *error)
{
    *address = QHostAddress();
    for (const QHostAddress &a : info.addresses())
        if (address->isNull() || (a.protocol() == QAbstractSocket::IPv4Protocol &&
                                  address->protocol() != QAbstractSocket::IPv4Protocol))
            *address = a;
    if (address->isNull()) {
        *error = QStringLiteral("'%1' is neither an IP address nor a name that resolves%2")
                     .arg(host, info.errorString().isEmpty()
                                    ? QString()
                                    : QStringLiteral(" (%1)").arg(info.errorString()));
        return false;
    }
    return true;
}

} // namespace edgetrain::net

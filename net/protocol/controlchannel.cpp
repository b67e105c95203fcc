#include "net/protocol/controlchannel.h"

namespace edgetrain::net {

Q_LOGGING_CATEGORY(lcControl, "edgetrain.control")

namespace Handshake {
QByteArray serverProof(const QByteArray &k, const QByteArray &nc, const QByteArray &ns)
{
    return hmacSha256(k, QByteArrayLiteral("edgetrain-server") + nc + ns);
}
QByteArray clientProof(const QByteArray &k, const QByteArray &nc, const QByteArray &ns)
{
    return hmacSha256(k, QByteArrayLiteral("edgetrain-client") + ns + nc);
}
QByteArray sessionKey(const QByteArray &k, const QByteArray &nc, const QByteArray &ns)
{
    return hmacSha256(k, QByteArrayLiteral("edgetrain-session") + nc + ns);
}
} // namespace Handshake

ControlChannel::ControlChannel(QTcpSocket *socket, QObject *parent)
    : QObject(parent), m_socket(socket)
{
    socket->setParent(this);
    connect(socket, &QTcpSocket::readyRead, this, &ControlChannel::onReadyRead);
    connect(socket, &QTcpSocket::bytesWritten, this, &ControlChannel::bytesDelivered);
    connect(socket, &QTcpSocket::disconnected, this, [this] {
        if (!m_closed) {
            m_closed = true;
            Q_EMIT closed(QStringLiteral("peer disconnected"));
        }
    });
    connect(socket, &QTcpSocket::errorOccurred, this, [this](QAbstractSocket::SocketError) {
        if (!m_closed && m_socket && m_socket->error() != QAbstractSocket::RemoteHostClosedError) {
            m_closed = true;
            Q_EMIT closed(m_socket->errorString());
        }
    });
}

QString ControlChannel::peer() const
{
    return m_socket ? QStringLiteral("%1:%2")
                          .arg(m_socket->peerAddress().toString())
                          .arg(m_socket->peerPort())
                    : QString();
}

QString ControlChannel::hostText(const QHostAddress &a)
{
    bool ipv4 = false;
    const quint32 v4 = a.toIPv4Address(&ipv4);
    return ipv4 ? QHostAddress(v4).toString() : a.toString();
}

QString ControlChannel::peerHost() const
{
    return m_socket ? hostText(m_socket->peerAddress()) : QString();
}

QString ControlChannel::localAddress() const
{
    return m_socket ? hostText(m_socket->localAddress()) : QString();
}

void ControlChannel::setSessionKey(const QByteArray &key)
{
    m_key = key;
    m_decoder.setSessionKey(key);
    m_decoder.setMaxPayload(Frame::kDefaultMaxPayload);
}

void ControlChannel::send(const QString &type, const QCborMap &body)
{
    if (m_closed || !m_socket)
        return;
    Frame f;
    f.sequence = m_key.isEmpty() ? 0 : ++m_sent;
    f.type = type;
    f.body = body;
    m_socket->write(f.encode(m_key));
}

void ControlChannel::close(const QString &reason)
{
    if (m_closed)
        return;
    m_closed = true;
    if (m_socket) {
        m_socket->flush();
        m_socket->disconnectFromHost();
    }
    Q_EMIT closed(reason);
}

void ControlChannel::onReadyRead()
{
    if (!m_socket || m_closed)
        return;
    m_decoder.feed(m_socket->readAll());
    while (!m_closed) {
        std::optional<Frame> frame = m_decoder.next();
        if (!frame)
            break;
        if (frame->authenticated) {
            if (frame->sequence <= m_received) {
                close(QStringLiteral("frame %1 replayed or out of order (last was %2)")
                          .arg(frame->sequence)
                          .arg(m_received));
                return;
            }
            m_received = frame->sequence;
        }
        Q_EMIT frameReceived(*frame);
    }
    if (m_decoder.failed())
        close(m_decoder.error());
}

} // namespace edgetrain::net

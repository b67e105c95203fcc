#pragma once

#include "net/protocol/frame.h"

#include <QLoggingCategory>
#include <QObject>
#include <QPointer>
#include <QTcpSocket>

namespace edgetrain::net {

Q_DECLARE_LOGGING_CATEGORY(lcControl)

/** The shared secret's proofs and the session key of the challenge-response handshake. */
namespace Handshake {
constexpr int kNonceBytes = 32;
QByteArray serverProof(const QByteArray &clusterKey, const QByteArray &clientNonce,
                       const QByteArray &serverNonce);
QByteArray clientProof(const QByteArray &clusterKey, const QByteArray &clientNonce,
                       const QByteArray &serverNonce);
QByteArray sessionKey(const QByteArray &clusterKey, const QByteArray &clientNonce,
                      const QByteArray &serverNonce);
} // namespace Handshake

/**
 * One TCP connection speaking the control protocol, on the thread that owns it. Sends frames
 * (authenticated with increasing sequence numbers once a session key is set), decodes incoming
 * ones, and closes the connection with a reason on any protocol violation: malformed or
 * oversized frames, bad MACs, sequence numbers that do not increase (replays).
 */
class ControlChannel : public QObject
{
    Q_OBJECT

public:
    /** Takes ownership of the socket. */
    explicit ControlChannel(QTcpSocket *socket, QObject *parent = nullptr);

    void setSessionKey(const QByteArray &key);
    bool hasSessionKey() const { return !m_key.isEmpty(); }
    void send(const QString &type, const QCborMap &body = {});
    /** Sends nothing more, closes after writing what is queued, emits closed(reason). */
    void close(const QString &reason);
    QString peer() const;
    /** Bytes written to the connection that the peer has not taken yet. */
    qint64 unsentBytes() const { return m_socket ? m_socket->bytesToWrite() : 0; }
    /** An address as text, IPv4 where it is one (also when it came IPv4-mapped). */
    static QString hostText(const QHostAddress &address);
    /** The peer's address alone (IPv4 where it is one). */
    QString peerHost() const;
    /** This side's address of the connection (IPv4 where it is one): the interface the peer
     *  reaches us on. */
    QString localAddress() const;

Q_SIGNALS:
    void frameReceived(const edgetrain::net::Frame &frame);
    void closed(const QString &reason);
    /** Bytes we sent left for the peer: it is reading (TCP flow control), so it is alive. */
    void bytesDelivered(qint64 bytes);

private:
    void onReadyRead();

    QPointer<QTcpSocket> m_socket;
    FrameDecoder m_decoder{Frame::kHandshakeMaxPayload};
    QByteArray m_key;
    std::uint64_t m_sent = 0;
    std::uint64_t m_received = 0;
    bool m_closed = false;
};

} // namespace edgetrain::net

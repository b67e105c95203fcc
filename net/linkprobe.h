#pragma once

#include <QObject>
#include <QString>
#include <QTcpServer>

#include <cstdint>

namespace edgetrain::net {

/** A node's link as measured between it and the coordinator. */
struct LinkMeasurement
{
    double rtt_seconds = 0.0;           // the shortest of a few one-byte round trips
    double up_bytes_per_second = 0.0;   // node -> coordinator
    double down_bytes_per_second = 0.0; // coordinator -> node
    double seconds = 0.0;               // how long measuring took
};

/**
 * The coordinator's end of the link probe, a plain TCP service in the spirit of iperf: a node
 * connects and asks, per request, for a one-byte echo (the round trip), to send N bytes that are
 * counted and dropped (then one byte back), or to be sent N bytes. No framing or parsing on the
 * way, so what is timed is the link and the node's socket, not the control protocol's decoding
 * (on a CPU-limited device that costs more than the transfer). Runs on the thread that owns it.
 *
 * Request: one command byte ('E' echo, 'U' upload, 'D' download) and a 64-bit little-endian
 * byte count (at most kMaxBytes).
 */
class LinkProbeServer : public QObject
{
    Q_OBJECT

public:
    static constexpr std::int64_t kMaxBytes = std::int64_t(64) << 20;
    explicit LinkProbeServer(QObject *parent = nullptr);
    /** Listens on every address, any port; false (and errorString()) if it cannot. */
    bool listen();
    quint16 port() const { return m_server.serverPort(); }
    QString errorString() const { return m_server.errorString(); }

private:
    void onConnection();
    QTcpServer m_server;
};

/**
 * The node's end: measures its link to the probe server at host:port — round trip, then
 * uploads and downloads that grow until one takes at least 50 ms (so a shaper's burst and TCP's
 * slow start are not taken for bandwidth), the better of two at that size. Blocking, with a
 * 10 s timeout per transfer; throws core::IoError naming the address if the server fails.
 */
LinkMeasurement measureLink(const QString &host, quint16 port);

} // namespace edgetrain::net

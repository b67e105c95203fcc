#pragma once

#include <QObject>
#include <QPointer>
#include <QString>
#include <QTcpServer>

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>

namespace edgetrain::net {

/** A node's link as measured between it and the coordinator. */
struct LinkMeasurement
{
    double rtt_seconds = 0.0;           // the shortest of a few one-byte round trips
    double up_bytes_per_second = 0.0;   // node -> coordinator
    double down_bytes_per_second = 0.0; // coordinator -> node
    // The CPU the transfers took on the node's side: seconds of the probing thread's CPU time
    // per byte sent (up) and received (down), what the kernel's TCP work costs this device
    // (0: not measured).
    double up_cpu_seconds_per_byte = 0.0;
    double down_cpu_seconds_per_byte = 0.0;
    // Whether the transfers ran (the rates and CPU figures above are 0 where not): a profile
    // whose exchange was timed over the link skips them where the plan does not need them.
    bool rates_timed = false;
    double seconds = 0.0; // how long measuring took, what ran in the turn (whileServed) included
};

/**
 * The coordinator's end of the link probe, a plain TCP service in the spirit of iperf: a node
 * connects and asks, per request, for a one-byte echo (the round trip), to send N bytes that are
 * counted and dropped (then one byte back), or to be sent N bytes. No framing or parsing on the
 * way, so what is timed is the link and the node's socket, not the control protocol's decoding
 * (on a CPU-limited device that costs more than the transfer). Runs on the thread that owns it.
 *
 * A connection first sends the run's token (token(): 32 bytes, given to the nodes in the job,
 * which travels authenticated), else it is dropped; then requests, each one command byte ('E'
 * echo, 'U' upload, 'D' download) and a 64-bit little-endian byte count (at most kMaxBytes), at
 * most kMaxRequests of them. One connection is served at a time (the others wait their turn),
 * so the nodes' probes do not share this machine's link. 'T' asks whether it is the
 * connection's turn: 'g' if it is being served; a waiting connection whose first request is 'T'
 * is answered 'w' and closed by the server (the node asks again later, or comes back in line) -
 * the one
 * request a waiting connection is answered.
 */
class LinkProbeServer : public QObject
{
    Q_OBJECT

public:
    static constexpr std::int64_t kMaxBytes = std::int64_t(64) << 20;
    static constexpr int kMaxRequests = 64;
    explicit LinkProbeServer(QObject *parent = nullptr);
    ~LinkProbeServer() override;
    /** Listens on every address, any port; false (and errorString()) if it cannot. */
    bool listen();
    quint16 port() const { return m_server.serverPort(); }
    QString errorString() const { return m_server.errorString(); }
    /** What a connection must send first (random per server). */
    const QByteArray &token() const { return m_token; }
    /** A connection is being served (it is its turn). */
    bool serving() const { return m_busy; }

private:
    void onConnection();
    void serveNext();
    QTcpServer m_server;
    QByteArray m_token;
    std::deque<QPointer<QObject>> m_waiting; // sessions not served yet, in arrival order
    bool m_busy = false;
};

/**
 * The node's end: measures its link to the probe server at host:port — round trip, then
 * uploads and downloads that grow until one takes at least 50 ms (so a shaper's burst and TCP's
 * slow start are not taken for bandwidth; each next size is what the last one's rate moves in
 * ~90 ms), the better of two at that size. Sends `token` first.
 * Blocking, with a 30 s timeout per transfer (it may wait its turn); throws core::IoError naming
 * the address if the server refuses, closes or does not answer. `whileServed`, if given, runs
 * after the round trips while the connection holds the turn (a profile's exchange probe) and
 * says whether the transfers are still wanted (false: none, rates_timed false); it must not
 * throw.
 */
LinkMeasurement measureLink(const QString &host, quint16 port, const QByteArray &token,
                            const std::function<bool()> &whileServed = {});

/**
 * measureLink if no other node is measuring now: it asks the server for its turn ('T' after the
 * token) and gets 'g' (measures at once) or 'w' (the server is busy; std::nullopt, the
 * connection closed: ask again later, or measure with measureLink, waiting in line). A profile
 * asks first, its CPU idle, then between its timings (TrainingWorker's probeLink says what that
 * costs and saves on an edge lab).
 * Needs a server that answers turns (a job's link_probe_turns). Errors as measureLink.
 */
std::optional<LinkMeasurement> measureLinkIfFree(const QString &host, quint16 port,
                                                 const QByteArray &token,
                                                 const std::function<bool()> &whileServed = {});

} // namespace edgetrain::net

#pragma once

#include "controlclient.h"

#include <QElapsedTimer>
#include <QObject>
#include <QTimer>

#include <vector>

namespace edgetrain::net {

/** A node's link as the coordinator measured it (LinkProbe). */
struct LinkMeasurement
{
    double rtt_seconds = 0.0;           // the shortest of a few empty round trips
    double up_bytes_per_second = 0.0;   // node -> coordinator
    double down_bytes_per_second = 0.0; // coordinator -> node
    double seconds = 0.0;               // how long measuring took
};

/**
 * Times a node's link over its control connection, both ways: empty round trips first (the
 * latency), then transfers in each direction (a ping carrying bytes, a pong asking for bytes
 * back; protocol.h's kMaxProbeBytes) that grow until one takes at least 50 ms, so a shaper's
 * burst allowance and TCP's slow start do not count as bandwidth. Rates are the transfers'
 * bytes over their time less the round trip, the better of two. Measured, never configured:
 * what the planner models the allreduce with. Runs on the client's thread; nothing blocks.
 */
class LinkProbe : public QObject
{
    Q_OBJECT

public:
    explicit LinkProbe(ControlClient *client, QObject *parent = nullptr);
    void start();
    /** Runs the probe in a local event loop; throws core::IoError if the node does not answer. */
    static LinkMeasurement run(ControlClient *client);

Q_SIGNALS:
    void finished(const edgetrain::net::LinkMeasurement &measurement);
    void failed(const QString &reason);

private:
    enum class Phase { Latency, Down, Up, Done };
    void send();
    void onFrame(const Frame &frame);

    ControlClient *m_client;
    Phase m_phase = Phase::Latency;
    qint64 m_bytes = 64 << 10;
    int m_id = 0;
    int m_samples = 0;
    std::vector<double> m_rtts;
    double m_best = 0.0;
    QElapsedTimer m_sent, m_total;
    QTimer m_timeout;
    LinkMeasurement m_result;
};

} // namespace edgetrain::net

Q_DECLARE_METATYPE(edgetrain::net::LinkMeasurement)

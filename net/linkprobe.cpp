#include "linkprobe.h"

#include "core/error.h"
#include "protocol.h"

#include <QEventLoop>

#include <algorithm>

namespace edgetrain::net {

namespace {
constexpr int kLatencyPings = 5;
constexpr double kMinTransferSeconds = 0.05;
constexpr int kTransfersKept = 2;
} // namespace

LinkProbe::LinkProbe(ControlClient *client, QObject *parent) : QObject(parent), m_client(client)
{
    qRegisterMetaType<LinkMeasurement>();
    m_timeout.setSingleShot(true);
    m_timeout.setInterval(30000);
    connect(&m_timeout, &QTimer::timeout, this, [this] {
        m_phase = Phase::Done;
        Q_EMIT failed(QStringLiteral("%1 did not answer the link probe within 30 s")
                          .arg(m_client->address()));
    });
}

void LinkProbe::start()
{
    connect(m_client, &ControlClient::message, this, &LinkProbe::onFrame);
    connect(m_client, &ControlClient::failed, this, [this](const QString &reason) {
        if (m_phase == Phase::Done)
            return;
        m_phase = Phase::Done;
        m_timeout.stop();
        Q_EMIT failed(reason);
    });
    m_total.start();
    m_timeout.start();
    send();
}

void LinkProbe::send()
{
    ++m_id;
    QCborMap body{{QStringLiteral("probe"), m_id}};
    const qint64 bytes = m_phase == Phase::Latency ? 0 : m_bytes;
    body.insert(QStringLiteral("pad"), QByteArray(m_phase == Phase::Down ? bytes : 0, '\0'));
    body.insert(QStringLiteral("answer_bytes"), m_phase == Phase::Up ? bytes : 0);
    m_sent.start();
    m_client->send(Message::Ping, body);
}

void LinkProbe::onFrame(const Frame &frame)
{
    if (m_phase == Phase::Done || frame.type != Message::Pong ||
        frame.body.value(QLatin1String("probe")).toInteger() != m_id)
        return;
    const double seconds = double(m_sent.nsecsElapsed()) * 1e-9;
    if (m_phase == Phase::Latency) {
        m_rtts.push_back(seconds);
        if (int(m_rtts.size()) < kLatencyPings)
            return send();
        m_result.rtt_seconds = *std::min_element(m_rtts.begin(), m_rtts.end());
        m_phase = Phase::Down;
        m_bytes = 64 << 10;
        return send();
    }
    const double transfer = seconds - m_result.rtt_seconds;
    if (transfer < kMinTransferSeconds && m_bytes < kMaxProbeBytes) {
        m_bytes = std::min<qint64>(m_bytes * 4, kMaxProbeBytes);
        return send(); // too short to tell bandwidth from a burst: larger
    }
    m_best = std::max(m_best, double(m_bytes) / std::max(transfer, 1e-6));
    if (++m_samples < kTransfersKept)
        return send();
    if (m_phase == Phase::Down) {
        m_result.down_bytes_per_second = m_best;
        m_phase = Phase::Up;
    } else {
        m_result.up_bytes_per_second = m_best;
        m_phase = Phase::Done;
    }
    m_best = 0.0;
    m_samples = 0;
    m_bytes = 64 << 10;
    if (m_phase != Phase::Done)
        return send();
    m_timeout.stop();
    m_result.seconds = double(m_total.nsecsElapsed()) * 1e-9;
    disconnect(m_client, nullptr, this, nullptr);
    Q_EMIT finished(m_result);
}

LinkMeasurement LinkProbe::run(ControlClient *client)
{
    LinkProbe probe(client);
    QEventLoop loop;
    LinkMeasurement result;
    QString error;
    connect(&probe, &LinkProbe::finished, &loop, [&](const LinkMeasurement &m) {
        result = m;
        loop.quit();
    });
    connect(&probe, &LinkProbe::failed, &loop, [&](const QString &reason) {
        error = reason;
        loop.quit();
    });
    probe.start();
    loop.exec();
    if (!error.isEmpty())
        throw core::IoError("link probe: " + error.toStdString());
    return result;
}

} // namespace edgetrain::net

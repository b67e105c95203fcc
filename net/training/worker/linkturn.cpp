#include "net/training/worker/linkturn.h"

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"
#include "net/training/exchangeprobehost.h"
#include "net/training/linkprobe.h"
#include "net/training/remotestore.h"
#include "net/training/trainingworker.h"

#include <QRandomGenerator>

namespace edgetrain::net::worker {

ExchangeFigures exchangeFigures(const ExchangeMeasurement &e, ExchangeFigures::Over over,
                                double busyCores)
{
    ExchangeFigures f;
    f.timed = true;
    f.seconds_per_byte = e.seconds_per_byte;
    f.over = over;
    f.bytes = std::int64_t(e.bytes);
    f.repeats = e.repeats;
    f.seconds = e.seconds;
    f.setup_seconds = e.setup_seconds;
    f.windows_seconds = e.windows_seconds;
    if (e.cpu_seconds_per_byte > 0) // over the link: the CPU a byte each way costs the device
        f.busy_seconds_per_byte = e.cpu_seconds_per_byte / busyCores;
    return f;
}

LinkTurn::LinkTurn(const JobSpec &job, const WorkerContext &context, JobLink &link,
                   PhaseClock &clock, std::size_t pairFloats, double pairSeconds)
    : m_job(job), m_context(context), m_jobLink(link), m_clock(clock), m_pairFloats(pairFloats),
      m_pairSeconds(pairSeconds)
{}

void LinkTurn::takeIfFree()
{
    if (m_link || m_job.link_probe_port <= 0 || !m_job.link_probe_turns)
        return;
    probe(When::IfFree);
    m_clock.lap(m_link ? "link" : "turn");
}

void LinkTurn::takeInLine()
{
    // A probe that failed is not tried again: its error goes to the coordinator.
    if (m_link || m_job.link_probe_port <= 0)
        return;
    probe(When::InLine);
    m_clock.lap("link");
}

void LinkTurn::probe(When when)
{
    const QString host = QString::fromStdString(m_context.coordinator_host);
    const auto port = quint16(m_job.link_probe_port);
    const QByteArray token = m_job.link_probe_token.toLatin1();
    const auto whileServed = [this] { return exchangeWithCoordinator(); };
    try {
        std::optional<LinkMeasurement> measured;
        if (when == When::IfFree)
            measured = measureLinkIfFree(host, port, token, whileServed);
        else
            measured = measureLink(host, port, token, whileServed);
        if (!measured)
            return;
        const LinkMeasurement &m = *measured;
        LinkFigures figures;
        figures.rtt_seconds = m.rtt_seconds;
        figures.seconds = m.seconds;
        figures.rates_timed = m.rates_timed; // else the exchange over the link stands for them
        if (m.rates_timed) {
            const double busyCores = m_context.busy_cores;
            figures.up_bytes_per_second = m.up_bytes_per_second;
            figures.down_bytes_per_second = m.down_bytes_per_second;
            figures.up_busy_seconds_per_byte = m.up_cpu_seconds_per_byte / busyCores;
            figures.down_busy_seconds_per_byte = m.down_cpu_seconds_per_byte / busyCores;
        }
        m_link = figures;
    } catch (const core::Error &e) {
        LinkFigures failed;
        failed.error = QString::fromUtf8(e.what());
        m_link = failed;
    }
}

bool LinkTurn::exchangeWithCoordinator()
{
    // Where the exchange is timed over the link, the transfers are wanted only for a plan with
    // async (the job's link_rates): sync and local SGD read the exchange's figure for the ring,
    // and its CPU per byte for the device's busy time.
    if (!m_job.exchange_probe)
        return true;
    m_clock.lap("link");
    ExchangeMeasurement e;
    QString error;
    try {
        // The coordinator queues its rank (or says why not) at once; then ours meets it.
        const QString prefix = QStringLiteral("%1%2-%3")
                                   .arg(QLatin1String(ExchangeProbeHost::kPrefix))
                                   .arg(QString::fromStdString(m_context.bind_address))
                                   .arg(QRandomGenerator::global()->generate());
        ExchangeProbeRequest asked;
        asked.prefix = prefix;
        asked.floats = std::int64_t(m_pairFloats);
        error =
            ExchangeProbeReply::fromCbor(
                m_jobLink.request(Message::ExchangeProbe, asked.toCbor(), std::chrono::seconds(5)))
                .error;
        if (error.isEmpty()) {
            // Its own store's waits as short as the ranks': the others wait in line.
            const std::chrono::milliseconds timeout(m_job.exchangeProbeTimeoutMs());
            RemoteStore probeStore(m_jobLink, timeout);
            GroupOptions o;
            o.rank = 0;
            o.hostname = m_context.bind_address;
            o.timeout = timeout;
            o.prefix = prefix.toStdString();
            e = measurePairExchange(probeStore, o, m_pairFloats, m_pairSeconds);
        }
    } catch (const std::exception &x) { // the link closed, no answer, the pair failed
        error = QString::fromUtf8(x.what());
    }
    if (!error.isEmpty()) {
        qCWarning(lcWorker).noquote()
            << "the exchange could not be timed with the coordinator:" << error;
        m_exchangeError = error;
        m_clock.lap("exchange");
        return true; // timed on the device instead, with the link's rates
    }
    m_exchange = exchangeFigures(e, ExchangeFigures::Over::Link, m_context.busy_cores);
    qCInfo(lcWorker).noquote() << QStringLiteral(
                                      "exchange timed with the coordinator in %1 s: setup %2 s, %3 "
                                      "allreduces in %4 s, %5 ns a byte")
                                      .arg(e.seconds, 0, 'f', 3)
                                      .arg(e.setup_seconds, 0, 'f', 3)
                                      .arg(e.repeats)
                                      .arg(e.windows_seconds, 0, 'f', 3)
                                      .arg(e.seconds_per_byte * 1e9, 0, 'f', 2);
    m_clock.lap("exchange");
    return m_job.link_rates;
}

} // namespace edgetrain::net::worker

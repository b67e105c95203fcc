#include "net/training/worker/devicereport.h"

#include "net/protocol/cborfield.h"

#include <QCborArray>

#include <algorithm>

namespace edgetrain::net::worker {

namespace {

QCborMap linkToCbor(const LinkFigures &l)
{
    if (!l.error.isEmpty())
        return QCborMap{{QStringLiteral("error"), l.error}};
    QCborMap m{{QStringLiteral("rtt_seconds"), l.rtt_seconds},
               {QStringLiteral("seconds"), l.seconds}};
    if (l.rates_timed) {
        m.insert(QStringLiteral("up_bytes_per_second"), l.up_bytes_per_second);
        m.insert(QStringLiteral("down_bytes_per_second"), l.down_bytes_per_second);
        m.insert(QStringLiteral("up_busy_seconds_per_byte"), l.up_busy_seconds_per_byte);
        m.insert(QStringLiteral("down_busy_seconds_per_byte"), l.down_busy_seconds_per_byte);
    }
    return m;
}

LinkFigures linkFromCbor(const QCborMap &m)
{
    LinkFigures l;
    l.error = m.value(QStringLiteral("error")).toString();
    if (!l.error.isEmpty())
        return l;
    l.rtt_seconds = m.value(QStringLiteral("rtt_seconds")).toDouble();
    l.seconds = m.value(QStringLiteral("seconds")).toDouble();
    l.rates_timed = m.contains(QStringLiteral("up_bytes_per_second"));
    if (l.rates_timed) {
        l.up_bytes_per_second = m.value(QStringLiteral("up_bytes_per_second")).toDouble();
        l.down_bytes_per_second = m.value(QStringLiteral("down_bytes_per_second")).toDouble();
        l.up_busy_seconds_per_byte = m.value(QStringLiteral("up_busy_seconds_per_byte")).toDouble();
        l.down_busy_seconds_per_byte =
            m.value(QStringLiteral("down_busy_seconds_per_byte")).toDouble();
    }
    return l;
}

QCborMap exchangeToCbor(const ExchangeFigures &e)
{
    QCborMap m;
    if (e.timed) {
        m = QCborMap{{QStringLiteral("seconds_per_byte"), e.seconds_per_byte},
                     {QStringLiteral("over"), e.over},
                     {QStringLiteral("bytes"), qint64(e.bytes)},
                     {QStringLiteral("repeats"), e.repeats},
                     {QStringLiteral("seconds"), e.seconds},
                     {QStringLiteral("setup_seconds"), e.setup_seconds},
                     {QStringLiteral("windows_seconds"), e.windows_seconds}};
        if (e.busy_seconds_per_byte >= 0)
            m.insert(QStringLiteral("busy_seconds_per_byte"), e.busy_seconds_per_byte);
    } else if (!e.error.isEmpty()) {
        m.insert(QStringLiteral("error"), e.error);
    }
    if (!e.link_error.isEmpty())
        m.insert(QStringLiteral("link_error"), e.link_error);
    return m;
}

ExchangeFigures exchangeFromCbor(const QCborMap &m)
{
    ExchangeFigures e;
    e.error = m.value(QStringLiteral("error")).toString();
    e.link_error = m.value(QStringLiteral("link_error")).toString();
    e.timed = m.contains(QStringLiteral("seconds_per_byte"));
    if (!e.timed)
        return e;
    e.seconds_per_byte = m.value(QStringLiteral("seconds_per_byte")).toDouble();
    e.over = m.value(QStringLiteral("over")).toString();
    e.bytes = cborInteger(m.value(QStringLiteral("bytes")));
    e.repeats = int(cborInteger(m.value(QStringLiteral("repeats"))));
    e.seconds = m.value(QStringLiteral("seconds")).toDouble();
    e.setup_seconds = m.value(QStringLiteral("setup_seconds")).toDouble();
    e.windows_seconds = m.value(QStringLiteral("windows_seconds")).toDouble();
    e.busy_seconds_per_byte = m.value(QStringLiteral("busy_seconds_per_byte")).toDouble(-1.0);
    return e;
}

} // namespace

double DeviceReport::typicalImagesPerSecond() const
{
    const std::int64_t typical = std::min<std::int64_t>(large_batch, 16);
    double typicalSeconds =
        large_step_seconds * double(typical) / double(std::max<std::int64_t>(large_batch, 1));
    if (large_batch > small_batch && large_step_seconds > small_step_seconds) {
        const double perSample =
            (large_step_seconds - small_step_seconds) / double(large_batch - small_batch);
        typicalSeconds = small_step_seconds + perSample * double(typical - small_batch);
    }
    return double(typical) / std::max(typicalSeconds, 1e-9);
}

void DeviceReport::addPhase(const QString &phase, double phaseSeconds)
{
    const auto it = std::find_if(phases_seconds.begin(), phases_seconds.end(),
                                 [&](const auto &p) { return p.first == phase; });
    if (it != phases_seconds.end())
        it->second += phaseSeconds;
    else
        phases_seconds.emplace_back(phase, phaseSeconds);
}

QCborMap DeviceReport::toCbor() const
{
    QCborMap phases;
    for (const auto &[phase, phaseSeconds] : phases_seconds)
        phases.insert(phase, phaseSeconds);
    QCborMap p{{QStringLiteral("batches"), QCborArray{qint64(small_batch), qint64(large_batch)}},
               {QStringLiteral("step_seconds"), QCborArray{small_step_seconds, large_step_seconds}},
               {QStringLiteral("update_seconds"), update_seconds},
               {QStringLiteral("eval_seconds_per_sample"), eval_seconds_per_sample},
               {QStringLiteral("max_local_batch"), qint64(max_local_batch)},
               {QStringLiteral("steps"), steps},
               {QStringLiteral("seconds"), seconds},
               {QStringLiteral("idle_watts"), idle_watts},
               {QStringLiteral("busy_watts"), busy_watts},
               {QStringLiteral("power_source"), power_source},
               {QStringLiteral("phases_seconds"), phases}};
    if (link)
        p.insert(QStringLiteral("link"), linkToCbor(*link));
    p.insert(QStringLiteral("exchange"), exchangeToCbor(exchange));
    return p;
}

DeviceReport DeviceReport::fromCbor(const QCborMap &m)
{
    DeviceReport p;
    const QCborArray batches = m.value(QStringLiteral("batches")).toArray();
    const QCborArray stepSeconds = m.value(QStringLiteral("step_seconds")).toArray();
    if (batches.size() == 2 && stepSeconds.size() == 2) {
        p.small_batch = cborInteger(batches[0]);
        p.large_batch = cborInteger(batches[1]);
        p.small_step_seconds = stepSeconds[0].toDouble();
        p.large_step_seconds = stepSeconds[1].toDouble();
    }
    p.update_seconds = m.value(QStringLiteral("update_seconds")).toDouble();
    p.eval_seconds_per_sample = m.value(QStringLiteral("eval_seconds_per_sample")).toDouble();
    p.max_local_batch = cborInteger(m.value(QStringLiteral("max_local_batch")), -1);
    p.steps = int(cborInteger(m.value(QStringLiteral("steps"))));
    p.seconds = m.value(QStringLiteral("seconds")).toDouble();
    p.idle_watts = m.value(QStringLiteral("idle_watts")).toDouble(-1.0);
    p.busy_watts = m.value(QStringLiteral("busy_watts")).toDouble(-1.0);
    p.power_source = m.value(QStringLiteral("power_source")).toString();
    const QCborMap phases = m.value(QStringLiteral("phases_seconds")).toMap();
    for (auto it = phases.cbegin(); it != phases.cend(); ++it)
        p.phases_seconds.emplace_back(it.key().toString(), it.value().toDouble());
    if (m.contains(QStringLiteral("link")))
        p.link = linkFromCbor(m.value(QStringLiteral("link")).toMap());
    p.exchange = exchangeFromCbor(m.value(QStringLiteral("exchange")).toMap());
    return p;
}

} // namespace edgetrain::net::worker

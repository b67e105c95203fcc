#include "net/protocol/messages/profilereport.h"

#include "net/protocol/cborfield.h"
#include "net/protocol/messages/fieldreader.h"

#include <QCborArray>

namespace edgetrain::net {

namespace {

constexpr std::int64_t kMaxBatch = std::int64_t(1) << 40;

QString overName(ExchangeFigures::Over over)
{
    switch (over) {
    case ExchangeFigures::Over::Link:
        return QStringLiteral("link");
    case ExchangeFigures::Over::Loopback:
        return QStringLiteral("loopback");
    case ExchangeFigures::Over::Unknown:
        break;
    }
    return {};
}

ExchangeFigures::Over overNamed(const QString &name)
{
    return name == overName(ExchangeFigures::Over::Link)       ? ExchangeFigures::Over::Link
           : name == overName(ExchangeFigures::Over::Loopback) ? ExchangeFigures::Over::Loopback
                                                               : ExchangeFigures::Over::Unknown;
}

/** A field of a body read leniently: absent is an undefined value, which reads as a default. */
QCborValue field(const QCborMap &map, const char *key)
{
    return map.value(QLatin1String(key));
}

} // namespace

QCborMap ExchangeFigures::toCbor() const
{
    QCborMap m;
    if (timed) {
        m.insert(QStringLiteral("seconds_per_byte"), seconds_per_byte);
        m.insert(QStringLiteral("over"), overName(over));
        m.insert(QStringLiteral("bytes"), qint64(bytes));
        m.insert(QStringLiteral("repeats"), repeats);
        m.insert(QStringLiteral("seconds"), seconds);
        m.insert(QStringLiteral("setup_seconds"), setup_seconds);
        m.insert(QStringLiteral("windows_seconds"), windows_seconds);
        if (busy_seconds_per_byte)
            m.insert(QStringLiteral("busy_seconds_per_byte"), *busy_seconds_per_byte);
    } else if (!error.isEmpty()) {
        m.insert(QStringLiteral("error"), error);
    }
    if (!link_error.isEmpty())
        m.insert(QStringLiteral("link_error"), link_error);
    return m;
}

std::optional<ExchangeFigures> ExchangeFigures::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("profile's exchange"));
    ExchangeFigures e;
    e.error = r.textOr("error", {});
    e.link_error = r.textOr("link_error", {});
    e.timed = r.has("seconds_per_byte");
    if (e.timed) {
        e.seconds_per_byte = r.number("seconds_per_byte");
        e.over = overNamed(r.text("over", 16));
        e.bytes = r.integer("bytes", 0, std::int64_t(1) << 50);
        e.repeats = int(r.integer("repeats", 0, 1 << 30));
        e.seconds = r.number("seconds");
        e.setup_seconds = r.number("setup_seconds");
        e.windows_seconds = r.number("windows_seconds");
        if (r.has("busy_seconds_per_byte"))
            e.busy_seconds_per_byte = r.number("busy_seconds_per_byte");
    }
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
    return e;
}

ExchangeFigures ExchangeFigures::fromCborLenient(const QCborMap &map)
{
    ExchangeFigures e;
    e.error = field(map, "error").toString();
    e.link_error = field(map, "link_error").toString();
    e.timed = map.contains(QLatin1String("seconds_per_byte"));
    if (e.timed) {
        e.seconds_per_byte = field(map, "seconds_per_byte").toDouble();
        e.over = overNamed(field(map, "over").toString());
        e.bytes = cborInteger(field(map, "bytes"));
        e.repeats = int(cborInteger(field(map, "repeats")));
        e.seconds = field(map, "seconds").toDouble();
        e.setup_seconds = field(map, "setup_seconds").toDouble();
        e.windows_seconds = field(map, "windows_seconds").toDouble();
        const QCborValue busy = field(map, "busy_seconds_per_byte");
        if (busy.isDouble() || busy.isInteger())
            e.busy_seconds_per_byte = busy.toDouble();
    }
    return e;
}

QCborMap LinkFigures::toCbor() const
{
    if (!error.isEmpty())
        return QCborMap{{QStringLiteral("error"), error}};
    QCborMap m{{QStringLiteral("rtt_seconds"), rtt_seconds}, {QStringLiteral("seconds"), seconds}};
    if (rates_timed) {
        m.insert(QStringLiteral("up_bytes_per_second"), up_bytes_per_second);
        m.insert(QStringLiteral("down_bytes_per_second"), down_bytes_per_second);
        m.insert(QStringLiteral("up_busy_seconds_per_byte"), up_busy_seconds_per_byte);
        m.insert(QStringLiteral("down_busy_seconds_per_byte"), down_busy_seconds_per_byte);
    }
    return m;
}

std::optional<LinkFigures> LinkFigures::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("profile's link"));
    LinkFigures l;
    if (r.has("error")) {
        l.error = r.text("error");
    } else {
        l.rtt_seconds = r.number("rtt_seconds");
        l.seconds = r.number("seconds");
        l.rates_timed = r.has("up_bytes_per_second");
        if (l.rates_timed) {
            l.up_bytes_per_second = r.number("up_bytes_per_second");
            l.down_bytes_per_second = r.number("down_bytes_per_second");
            l.up_busy_seconds_per_byte = r.number("up_busy_seconds_per_byte");
            l.down_busy_seconds_per_byte = r.number("down_busy_seconds_per_byte");
        }
    }
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
    return l;
}

LinkFigures LinkFigures::fromCborLenient(const QCborMap &map)
{
    LinkFigures l;
    if (map.contains(QLatin1String("error"))) {
        l.error = field(map, "error").toString();
        return l;
    }
    l.rtt_seconds = field(map, "rtt_seconds").toDouble();
    l.seconds = field(map, "seconds").toDouble();
    l.rates_timed = map.contains(QLatin1String("up_bytes_per_second"));
    if (l.rates_timed) {
        l.up_bytes_per_second = field(map, "up_bytes_per_second").toDouble();
        l.down_bytes_per_second = field(map, "down_bytes_per_second").toDouble();
        l.up_busy_seconds_per_byte = field(map, "up_busy_seconds_per_byte").toDouble();
        l.down_busy_seconds_per_byte = field(map, "down_busy_seconds_per_byte").toDouble();
    }
    return l;
}

void ProfileReport::addPhase(const QString &phase, double phaseSeconds)
{
    for (auto &[name, s] : phases_seconds)
        if (name == phase) {
            s += phaseSeconds;
            return;
        }
    phases_seconds.emplace_back(phase, phaseSeconds);
}

QCborMap ProfileReport::toCbor() const
{
    QCborMap phases;
    for (const auto &[name, s] : phases_seconds)
        phases.insert(name, s);
    QCborMap m{{QStringLiteral("batches"), QCborArray{qint64(small_batch), qint64(large_batch)}},
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
        m.insert(QStringLiteral("link"), link->toCbor());
    m.insert(QStringLiteral("exchange"), exchange.toCbor());
    return m;
}

std::optional<ProfileReport> ProfileReport::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("profile"));
    ProfileReport p;
    const QCborArray batches = r.array("batches");
    const QCborArray seconds = r.array("step_seconds");
    if (r.ok()) {
        if (batches.size() != 2 || !batches[0].isInteger() || !batches[1].isInteger())
            r.mustBe("batches", "a list of two integers");
        else if (seconds.size() != 2 || !(seconds[0].isDouble() || seconds[0].isInteger()) ||
                 !(seconds[1].isDouble() || seconds[1].isInteger()))
            r.mustBe("step_seconds", "a list of two numbers");
    }
    if (r.ok()) {
        p.small_batch = batches[0].toInteger();
        p.large_batch = batches[1].toInteger();
        p.small_step_seconds = seconds[0].toDouble();
        p.large_step_seconds = seconds[1].toDouble();
    }
    p.update_seconds = r.number("update_seconds");
    p.eval_seconds_per_sample = r.number("eval_seconds_per_sample");
    p.max_local_batch = r.integer("max_local_batch", -1, kMaxBatch);
    p.steps = int(r.integer("steps", 0, 1 << 30));
    p.seconds = r.number("seconds");
    p.idle_watts = r.number("idle_watts");
    p.busy_watts = r.number("busy_watts");
    p.power_source = r.text("power_source", 128);
    const QCborMap phases = r.map("phases_seconds");
    for (auto it = phases.constBegin(); r.ok() && it != phases.constEnd(); ++it) {
        if (!it.key().isString() || !(it.value().isDouble() || it.value().isInteger()) ||
            p.phases_seconds.size() >= 64)
            r.mustBe("phases_seconds", "at most 64 phases' names and seconds");
        else
            p.addPhase(it.key().toString().left(64), it.value().toDouble());
    }
    const QCborMap exchange = r.map("exchange");
    const QCborMap link = r.has("link") ? r.map("link") : QCborMap();
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
    const auto e = ExchangeFigures::fromCbor(exchange, error);
    if (!e)
        return std::nullopt;
    p.exchange = *e;
    if (r.has("link")) {
        const auto l = LinkFigures::fromCbor(link, error);
        if (!l)
            return std::nullopt;
        p.link = *l;
    }
    return p;
}

ProfileReport ProfileReport::fromCborLenient(const QCborMap &map)
{
    ProfileReport p;
    const QCborArray batches = field(map, "batches").toArray();
    const QCborArray seconds = field(map, "step_seconds").toArray();
    if (batches.size() == 2 && seconds.size() == 2) {
        p.small_batch = cborInteger(batches[0]);
        p.large_batch = cborInteger(batches[1]);
        p.small_step_seconds = seconds[0].toDouble();
        p.large_step_seconds = seconds[1].toDouble();
    }
    p.update_seconds = field(map, "update_seconds").toDouble();
    p.eval_seconds_per_sample = field(map, "eval_seconds_per_sample").toDouble();
    p.max_local_batch = cborInteger(field(map, "max_local_batch"), -1);
    p.steps = int(cborInteger(field(map, "steps")));
    p.seconds = field(map, "seconds").toDouble();
    p.idle_watts = field(map, "idle_watts").toDouble(-1.0);
    p.busy_watts = field(map, "busy_watts").toDouble(-1.0);
    p.power_source = field(map, "power_source").toString();
    const QCborMap phases = field(map, "phases_seconds").toMap();
    for (auto it = phases.constBegin(); it != phases.constEnd(); ++it)
        if (it.key().isString() && (it.value().isDouble() || it.value().isInteger()) &&
            p.phases_seconds.size() < 64)
            p.addPhase(it.key().toString().left(64), it.value().toDouble());
    p.exchange = ExchangeFigures::fromCborLenient(field(map, "exchange").toMap());
    if (const QCborMap link = field(map, "link").toMap(); !link.isEmpty())
        p.link = LinkFigures::fromCborLenient(link);
    return p;
}

} // namespace edgetrain::net

#include "net/training/job.h"

#include "core/error.h"
#include "core/fieldcheck.h"
#include "core/lrschedule.h"

#include <QCborArray>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace edgetrain::net {

QString modeName(TrainingMode mode)
{
    switch (mode) {
    case TrainingMode::Sync:
        return QStringLiteral("sync");
    case TrainingMode::Async:
        return QStringLiteral("async");
    case TrainingMode::LocalSgd:
        return QStringLiteral("local-sgd");
    }
    return {};
}

std::optional<TrainingMode> parseMode(const QString &text)
{
    for (TrainingMode m : {TrainingMode::Sync, TrainingMode::Async, TrainingMode::LocalSgd})
        if (text == modeName(m))
            return m;
    return std::nullopt;
}

QCborMap JobSpec::toCbor() const
{
    QCborMap m;
    m.insert(QStringLiteral("id"), id);
    m.insert(QStringLiteral("mode"), modeName(mode));
    m.insert(QStringLiteral("model"), QString::fromStdString(model.dump()));
    m.insert(QStringLiteral("seed"), qint64(seed));
    m.insert(QStringLiteral("epochs"), epochs);
    m.insert(QStringLiteral("batch"), qint64(batch));
    m.insert(QStringLiteral("lr"), lr);
    m.insert(QStringLiteral("momentum"), momentum);
    m.insert(QStringLiteral("weight_decay"), weight_decay);
    m.insert(QStringLiteral("nesterov"), nesterov);
    m.insert(QStringLiteral("average_decay"), average_decay);
    m.insert(QStringLiteral("schedule"), schedule);
    m.insert(QStringLiteral("staleness"), staleness);
    m.insert(QStringLiteral("exchange"), exchange);
    m.insert(QStringLiteral("pipelined"), pipelined);
    m.insert(QStringLiteral("local_steps"), local_steps);
    m.insert(QStringLiteral("profile_steps"), profile_steps);
    m.insert(QStringLiteral("link_probe_port"), link_probe_port);
    m.insert(QStringLiteral("link_probe_token"), link_probe_token);
    m.insert(QStringLiteral("link_probe_turns"), link_probe_turns);
    m.insert(QStringLiteral("exchange_probe"), exchange_probe);
    m.insert(QStringLiteral("link_rates"), link_rates);
    m.insert(QStringLiteral("collective_timeout_ms"), collective_timeout_ms);
    m.insert(QStringLiteral("memory_budget_bytes"), qint64(memory_budget_bytes));
    m.insert(QStringLiteral("memory_budget"), qint64(memory_budget_bytes)); // what older nodes read
    m.insert(QStringLiteral("dataset"), dataset);
    m.insert(QStringLiteral("train_limit"), qint64(train_limit));
    m.insert(QStringLiteral("test_limit"), qint64(test_limit));
    m.insert(QStringLiteral("train_shipment"), train_shipment);
    m.insert(QStringLiteral("test_shipment"), test_shipment);
    return m;
}

namespace {

QString jobFieldError(const char *field, const std::string &expected, const QString &got = {})
{
    return QStringLiteral("job: ") +
           QString::fromStdString(core::FieldCheck::mustBe(field, expected, got.toStdString()));
}

// Field readers that refuse a wrong type or a value out of range, naming the field in
// core::FieldCheck's words ("job: field "epochs" must be an integer from 1 to 100000, got 0").
class Reader
{
public:
    Reader(const QCborMap &map, QString *error) : m_map(map), m_error(error) {}
    bool ok() const { return m_error->isEmpty(); }

    std::int64_t integer(const char *key, std::int64_t lo, std::int64_t hi)
    {
        const QCborValue v = m_map.value(QLatin1String(key));
        if (!ok())
            return lo;
        if (!v.isInteger()) {
            fail(core::FieldCheck::mustBe(key, core::FieldCheck::integerFrom(lo, hi)));
            return lo;
        }
        return fail(core::FieldCheck::integerIn(key, v.toInteger(), lo, hi)) ? lo : v.toInteger();
    }
    double number(const char *key, double lo, double hi)
    {
        const QCborValue v = m_map.value(QLatin1String(key));
        if (!ok())
            return lo;
        if (!v.isInteger() && !v.isDouble()) {
            fail(core::FieldCheck::mustBe(key, core::FieldCheck::numberFrom(lo, hi)));
            return lo;
        }
        const double x = v.isInteger() ? double(v.toInteger()) : v.toDouble();
        return fail(core::FieldCheck::numberIn(key, x, lo, hi)) ? lo : x;
    }
    QString text(const char *key, int maxLength = 4096)
    {
        const QCborValue v = m_map.value(QLatin1String(key));
        if (!ok())
            return {};
        if (!v.isString() || v.toString().size() > maxLength) {
            fail(core::FieldCheck::mustBe(key, "a string of at most " + std::to_string(maxLength) +
                                                   " characters"));
            return {};
        }
        return v.toString();
    }

private:
    /** Keeps `problem` (if any, and the first); true when there was one. */
    bool fail(const std::string &problem)
    {
        if (!problem.empty() && m_error->isEmpty())
            *m_error = QStringLiteral("job: ") + QString::fromStdString(problem);
        return !problem.empty();
    }

    const QCborMap &m_map;
    QString *m_error;
};

} // namespace

JobSpec JobSpec::forNodes() const
{
    JobSpec j = *this;
    if (j.mode == TrainingMode::Async)
        j.average_decay = 0.0;
    return j;
}

std::optional<JobSpec> JobSpec::fromCbor(const QCborMap &map, QString *error)
{
    error->clear();
    Reader r(map, error);
    JobSpec j;
    j.id = r.text("id", 128);
    const QString mode = r.text("mode", 32);
    const QString model = r.text("model", 1 << 20);
    j.seed = std::uint64_t(r.integer("seed", 0, std::int64_t(1) << 53));
    j.epochs = int(r.integer("epochs", 1, 100000));
    j.batch = r.integer("batch", 1, 65536);
    j.lr = r.number("lr", 1e-9, 100.0);
    j.momentum = r.number("momentum", 0.0, 0.999);
    j.weight_decay = r.number("weight_decay", 0.0, 1.0);
    const QCborValue nesterov = map.value(QStringLiteral("nesterov"));
    if (map.contains(QLatin1String("average_decay"))) // absent from older coordinators' jobs
        j.average_decay = r.number("average_decay", 0.0, 0.9999);
    j.schedule = r.text("schedule", 64);
    j.staleness = int(r.integer("staleness", 0, kMaxStaleness));
    j.exchange = QStringLiteral("float32"); // absent from older coordinators' jobs
    if (map.contains(QLatin1String("exchange")))
        j.exchange = r.text("exchange", 16);
    const QCborValue pipelined = map.value(QStringLiteral("pipelined"));
    j.local_steps = int(r.integer("local_steps", 1, kMaxLocalSteps));
    if (map.contains(QLatin1String("profile_steps"))) // absent from older coordinators' jobs
        j.profile_steps = int(r.integer("profile_steps", 1, kMaxProfileSteps));
    if (map.contains(QLatin1String("link_probe_port")))
        j.link_probe_port = int(r.integer("link_probe_port", 0, 65535));
    if (map.contains(QLatin1String("link_probe_token")))
        j.link_probe_token = r.text("link_probe_token", 64);
    const QCborValue turns = map.value(QStringLiteral("link_probe_turns"));
    const QCborValue pairProbe = map.value(QStringLiteral("exchange_probe"));
    const QCborValue rates = map.value(QStringLiteral("link_rates"));
    j.collective_timeout_ms = int(r.integer("collective_timeout_ms", 500, 600000));
    // A job from a version before sizes said their unit names it memory_budget.
    j.memory_budget_bytes =
        r.integer(map.contains(QLatin1String("memory_budget_bytes")) ? "memory_budget_bytes"
                                                                     : "memory_budget",
                  -1, std::int64_t(1) << 50);
    j.dataset = r.text("dataset", 64);
    j.train_limit = r.integer("train_limit", 0, std::int64_t(1) << 40);
    j.test_limit = r.integer("test_limit", 0, std::int64_t(1) << 40);
    j.train_shipment = r.text("train_shipment", 128);
    j.test_shipment = r.text("test_shipment", 128);
    if (!r.ok())
        return std::nullopt;
    if (!nesterov.isBool()) {
        *error = jobFieldError("nesterov", "true or false");
        return std::nullopt;
    }
    j.nesterov = nesterov.toBool();
    if (!pipelined.isUndefined() && !pipelined.isBool()) {
        *error = jobFieldError("pipelined", "true or false");
        return std::nullopt;
    }
    j.pipelined = pipelined.toBool(false); // absent from older coordinators' jobs: not pipelined
    if (!turns.isUndefined() && !turns.isBool()) {
        *error = jobFieldError("link_probe_turns", "true or false");
        return std::nullopt;
    }
    j.link_probe_turns = turns.toBool(false); // absent from older coordinators' jobs
    if (!pairProbe.isUndefined() && !pairProbe.isBool()) {
        *error = jobFieldError("exchange_probe", "true or false");
        return std::nullopt;
    }
    j.exchange_probe = pairProbe.toBool(false); // absent from older coordinators' jobs
    if (!rates.isUndefined() && !rates.isBool()) {
        *error = jobFieldError("link_rates", "true or false");
        return std::nullopt;
    }
    j.link_rates = rates.toBool(true); // absent from older coordinators' jobs: every probe timed
    if (const auto m = parseMode(mode)) {
        j.mode = *m;
    } else {
        *error = jobFieldError("mode", "sync, async or local-sgd", mode);
        return std::nullopt;
    }
    if (j.average_decay > 0 && j.mode == TrainingMode::Async) {
        *error = jobFieldError("average_decay", "0 in async mode (the parameter server keeps "
                                                "the weight average, not the nodes)");
        return std::nullopt;
    }
    if (j.exchange != QLatin1String("bf16") && j.exchange != QLatin1String("float32")) {
        *error = jobFieldError("exchange", "bf16 or float32", j.exchange);
        return std::nullopt;
    }
    if (j.dataset != QLatin1String("fashion-mnist") && j.dataset != QLatin1String("shipped")) {
        *error = jobFieldError("dataset", "fashion-mnist or shipped", j.dataset);
        return std::nullopt;
    }
    if (j.dataset == QLatin1String("shipped") && j.train_shipment.isEmpty()) {
        *error = jobFieldError("train_shipment", "a shipment's name for shipped data");
        return std::nullopt;
    }
    try {
        j.model = core::Json::parse(model.toStdString(), "the job's model");
        (void)core::ModelSpec::fromJson(j.model, "the job's model"); // strict: refused here
        (void)core::LrSchedule::parse(j.schedule.toStdString());
    } catch (const core::Error &e) {
        *error = QString::fromStdString(e.what());
        return std::nullopt;
    }
    return j;
}

QCborMap GroupSpec::toCbor() const
{
    QCborArray s;
    for (double x : shares)
        s.append(x);
    return QCborMap{{QStringLiteral("generation"), generation},
                    {QStringLiteral("rank"), rank},
                    {QStringLiteral("size"), size},
                    {QStringLiteral("shares"), s}};
}

std::optional<GroupSpec> GroupSpec::fromCbor(const QCborMap &map, QString *error)
{
    error->clear();
    Reader r(map, error);
    GroupSpec g;
    g.generation = int(r.integer("generation", 0, 1 << 30));
    g.size = int(r.integer("size", 1, 4096));
    g.rank = int(r.integer("rank", 0, 4095));
    if (!r.ok())
        return std::nullopt;
    const QCborArray shares = map.value(QStringLiteral("shares")).toArray();
    double sum = 0.0;
    for (const QCborValue &v : shares) {
        g.shares.push_back(v.toDouble(-1.0));
        sum += g.shares.back();
    }
    if (g.rank >= g.size || int(g.shares.size()) != g.size ||
        std::any_of(g.shares.begin(), g.shares.end(),
                    [](double x) { return !(x > 0.0 && x <= 1.0); }) ||
        std::abs(sum - 1.0) > 1e-6) {
        *error = QStringLiteral("malformed group: rank %1 of %2 with %3 shares summing to %4")
                     .arg(g.rank)
                     .arg(g.size)
                     .arg(shares.size())
                     .arg(sum);
        return std::nullopt;
    }
    return g;
}

std::vector<std::int64_t> splitByShares(std::int64_t total, const std::vector<double> &shares)
{
    const std::size_t n = shares.size();
    std::vector<std::int64_t> parts(n, 0);
    if (n == 0 || total <= 0)
        return parts;
    const double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
    // Everyone gets one first (when there is enough), the rest goes by largest remainder.
    const std::int64_t floor = total >= std::int64_t(n) ? 1 : 0;
    const std::int64_t rest = total - floor * std::int64_t(n);
    std::vector<double> remainder(n);
    std::int64_t given = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double ideal = double(rest) * (sum > 0 ? shares[i] / sum : 1.0 / double(n));
        parts[i] = floor + std::int64_t(std::floor(ideal));
        remainder[i] = ideal - std::floor(ideal);
        given += parts[i];
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
    for (std::size_t k = 0; given < total; k = (k + 1) % n, ++given)
        ++parts[order[k]];
    return parts;
}

std::vector<double> sharesFromSpeeds(const std::vector<double> &imagesPerSecond)
{
    const std::size_t n = imagesPerSecond.size();
    std::vector<double> shares(n, n ? 1.0 / double(n) : 0.0);
    double sum = 0.0;
    for (double s : imagesPerSecond) {
        if (!(s > 0.0) || !std::isfinite(s))
            return shares; // one unknown: equal shares, until every speed is measured
        sum += s;
    }
    for (std::size_t i = 0; i < n; ++i)
        shares[i] = imagesPerSecond[i] / sum;
    return shares;
}

} // namespace edgetrain::net

#include "net/protocol/messages/jobspec.h"

#include "core/error.h"
#include "core/fieldcheck.h"
#include "core/lrschedule.h"
#include "core/modelspec.h"
#include "net/protocol/messages/fieldreader.h"

#include <QCborArray>

#include <algorithm>
#include <cmath>

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
    m.insert(QStringLiteral("tiled_stages"), tiled_stages);
    m.insert(QStringLiteral("tile_rows"), tile_rows);
    m.insert(QStringLiteral("tile_cols"), tile_cols);
    m.insert(QStringLiteral("tiles_across"), tiles_across);
    m.insert(QStringLiteral("dataset"), dataset);
    m.insert(QStringLiteral("train_limit"), qint64(train_limit));
    m.insert(QStringLiteral("test_limit"), qint64(test_limit));
    m.insert(QStringLiteral("train_shipment"), train_shipment);
    m.insert(QStringLiteral("test_shipment"), test_shipment);
    return m;
}

QString JobSpec::idOf(const QCborMap &map)
{
    return map.value(QStringLiteral("id")).toString();
}

JobSpec JobSpec::forNodes() const
{
    JobSpec j = *this;
    if (j.mode == TrainingMode::Async)
        j.average_decay = 0.0;
    return j;
}

namespace {

/** `field "F" must be EXPECTED, got G`, for the checks across fields after the reads. */
QString mustBe(const char *field, const std::string &expected, const QString &got = {})
{
    return QString::fromStdString(core::FieldCheck::mustBe(field, expected, got.toStdString()));
}

} // namespace

std::optional<JobSpec> JobSpec::fromCbor(const QCborMap &map, QString *error)
{
    // The order of the reads is the order problems are reported in (the first one).
    FieldReader r(map, QStringLiteral("job"));
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
    // Fields absent from older coordinators' jobs read as what those coordinators meant.
    j.average_decay = r.numberOr("average_decay", 0.0, 0.0, 0.9999);
    j.schedule = r.text("schedule", 64);
    j.staleness = int(r.integer("staleness", 0, kMaxStaleness));
    j.exchange = r.textOr("exchange", QStringLiteral("float32"), 16);
    j.local_steps = int(r.integer("local_steps", 1, kMaxLocalSteps));
    j.profile_steps = int(r.integerOr("profile_steps", j.profile_steps, 1, kMaxProfileSteps));
    j.link_probe_port = int(r.integerOr("link_probe_port", 0, 0, 65535));
    j.link_probe_token = r.textOr("link_probe_token", {}, 64);
    j.collective_timeout_ms = int(r.integer("collective_timeout_ms", 500, 600000));
    // A job from a version before sizes said their unit names it memory_budget.
    j.memory_budget_bytes =
        r.integer(r.has("memory_budget_bytes") ? "memory_budget_bytes" : "memory_budget", -1,
                  std::int64_t(1) << 50);
    j.tiled_stages = int(r.integerOr("tiled_stages", 0, 0, 1024));
    j.tile_rows = int(r.integerOr("tile_rows", 1, 1, 64));
    j.tile_cols = int(r.integerOr("tile_cols", 1, 1, 64));
    j.tiles_across = r.booleanOr("tiles_across", false);
    j.dataset = r.text("dataset", 64);
    j.train_limit = r.integer("train_limit", 0, std::int64_t(1) << 40);
    j.test_limit = r.integer("test_limit", 0, std::int64_t(1) << 40);
    j.train_shipment = r.text("train_shipment", 128);
    j.test_shipment = r.text("test_shipment", 128);
    j.nesterov = r.boolean("nesterov");
    j.pipelined = r.booleanOr("pipelined", false);
    j.link_probe_turns = r.booleanOr("link_probe_turns", false);
    j.exchange_probe = r.booleanOr("exchange_probe", false);
    j.link_rates = r.booleanOr("link_rates", true); // older coordinators: every probe timed
    if (r.ok()) {
        if (const auto m = parseMode(mode))
            j.mode = *m;
        else
            r.fail(mustBe("mode", "sync, async or local-sgd", mode));
    }
    if (j.average_decay > 0 && j.mode == TrainingMode::Async)
        r.fail(mustBe("average_decay", "0 in async mode (the parameter server keeps the weight "
                                       "average, not the nodes)"));
    if (j.tiles_across &&
        (j.mode != TrainingMode::Sync || j.tiled_stages < 1 || j.tile_rows * j.tile_cols < 2))
        r.fail(mustBe("tiles_across", "false unless the job is sync and tiled"));
    if (j.exchange != QLatin1String("bf16") && j.exchange != QLatin1String("float32"))
        r.fail(mustBe("exchange", "bf16 or float32", j.exchange));
    if (j.dataset != QLatin1String("fashion-mnist") && j.dataset != QLatin1String("shipped"))
        r.fail(mustBe("dataset", "fashion-mnist or shipped", j.dataset));
    if (j.dataset == QLatin1String("shipped") && j.train_shipment.isEmpty())
        r.fail(mustBe("train_shipment", "a shipment's name for shipped data"));
    if (!r.ok()) {
        *error = r.error();
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
    error->clear();
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
    FieldReader r(map, QStringLiteral("job"));
    GroupSpec g;
    g.generation = int(r.integer("generation", 0, 1 << 30));
    g.size = int(r.integer("size", 1, 4096));
    g.rank = int(r.integer("rank", 0, 4095));
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
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
    error->clear();
    return g;
}

} // namespace edgetrain::net

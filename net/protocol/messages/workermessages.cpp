#include "net/protocol/messages/workermessages.h"

#include "net/protocol/cborfield.h"
#include "net/protocol/messages/fieldreader.h"

namespace edgetrain::net {

namespace {

constexpr std::int64_t kMaxCount = std::int64_t(1) << 50;
constexpr int kMaxEpoch = 1 << 30;

/** The reader's value if it had no problem; its error in `error` otherwise. */
template <typename T> std::optional<T> result(const FieldReader &r, T value, QString *error)
{
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
    return value;
}

/** A field of a body read leniently: absent is an undefined value, which reads as a default. */
QCborValue field(const QCborMap &map, const char *key)
{
    return map.value(QLatin1String(key));
}

} // namespace

QCborMap JobReady::toCbor() const
{
    return QCborMap{{QStringLiteral("images_per_second"), images_per_second},
                    {QStringLiteral("train_samples"), qint64(train_samples)},
                    {QStringLiteral("test_samples"), qint64(test_samples)},
                    {QStringLiteral("parameters"), qint64(parameters)},
                    {QStringLiteral("gradient_floats"), qint64(gradient_floats)},
                    {QStringLiteral("averaged_floats"), qint64(averaged_floats)},
                    {QStringLiteral("buffer_floats"), qint64(buffer_floats)},
                    {QStringLiteral("takes_more"), takes_more},
                    {QStringLiteral("evaluates_more"), evaluates_more},
                    {QStringLiteral("profile"), profile.toCbor()}};
}

std::optional<JobReady> JobReady::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("job_ready"));
    JobReady j;
    j.images_per_second = r.number("images_per_second");
    j.train_samples = r.integer("train_samples", 0, kMaxCount);
    j.test_samples = r.integer("test_samples", 0, kMaxCount);
    j.parameters = r.integer("parameters", 0, kMaxCount);
    j.gradient_floats = r.integer("gradient_floats", 0, kMaxCount);
    j.averaged_floats = r.integer("averaged_floats", 0, kMaxCount);
    j.buffer_floats = r.integer("buffer_floats", 0, kMaxCount);
    // Absent from nodes older than the hand-outs: they take none.
    j.takes_more = r.booleanOr("takes_more", false);
    j.evaluates_more = r.booleanOr("evaluates_more", false);
    const QCborMap profile = r.map("profile");
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
    const auto p = ProfileReport::fromCbor(profile, error);
    if (!p) {
        *error = QStringLiteral("job_ready: ") + *error;
        return std::nullopt;
    }
    j.profile = *p;
    return j;
}

JobReady JobReady::fromCborLenient(const QCborMap &map)
{
    JobReady j;
    j.images_per_second = field(map, "images_per_second").toDouble();
    j.train_samples = cborInteger(field(map, "train_samples"));
    j.test_samples = cborInteger(field(map, "test_samples"));
    j.parameters = cborInteger(field(map, "parameters"));
    j.gradient_floats = cborInteger(field(map, "gradient_floats"));
    j.averaged_floats = cborInteger(field(map, "averaged_floats"));
    j.buffer_floats = cborInteger(field(map, "buffer_floats"));
    j.takes_more = field(map, "takes_more").toBool(false);
    j.evaluates_more = field(map, "evaluates_more").toBool(false);
    j.profile = ProfileReport::fromCborLenient(field(map, "profile").toMap());
    return j;
}

QCborMap EpochDone::toCbor() const
{
    QCborMap m{{QStringLiteral("epoch"), epoch},
               {QStringLiteral("loss_sum"), loss_sum},
               {QStringLiteral("correct"), correct},
               {QStringLiteral("seen"), seen},
               {QStringLiteral("targets"), targets},
               {QStringLiteral("global"), global},
               {QStringLiteral("seconds"), seconds},
               {QStringLiteral("compute_images_per_second"), compute_images_per_second}};
    if (!held_fingerprint.isEmpty())
        m.insert(QStringLiteral("held_fingerprint"), held_fingerprint);
    return m;
}

std::optional<EpochDone> EpochDone::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("epoch_done"));
    EpochDone d;
    d.epoch = int(r.integer("epoch", 0, kMaxEpoch));
    d.loss_sum = r.number("loss_sum");
    d.correct = r.number("correct");
    d.seen = r.number("seen");
    d.targets = r.number("targets");
    d.global = r.boolean("global");
    d.seconds = r.number("seconds");
    d.compute_images_per_second = r.number("compute_images_per_second");
    d.held_fingerprint = r.textOr("held_fingerprint", {}, 64);
    return result(r, d, error);
}

QCborMap EpochEval::toCbor() const
{
    return QCborMap{{QStringLiteral("epoch"), epoch},
                    {QStringLiteral("loss_sum"), loss_sum},
                    {QStringLiteral("correct"), qint64(correct)},
                    {QStringLiteral("count"), qint64(count)}};
}

std::optional<EpochEval> EpochEval::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("epoch_eval"));
    EpochEval e;
    e.epoch = int(r.integer("epoch", 0, kMaxEpoch));
    e.loss_sum = r.number("loss_sum");
    e.correct = r.integer("correct", 0, kMaxCount);
    e.count = r.integer("count", 0, kMaxCount);
    return result(r, e, error);
}

QCborMap GradientPush::toCbor() const
{
    QCborMap m{{QStringLiteral("version"), qint64(version)},
               {QStringLiteral("lr"), lr},
               {QStringLiteral("count"), qint64(count)}};
    if (compressed) {
        m.insert(QStringLiteral("gradient_bf16"), gradient_bf16);
        m.insert(QStringLiteral("buffers"), buffers);
    } else {
        m.insert(QStringLiteral("gradient"), gradient);
    }
    return m;
}

std::optional<GradientPush> GradientPush::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("ps_push"));
    GradientPush p;
    p.version = r.integer("version", 0, std::numeric_limits<std::int64_t>::max());
    p.lr = r.number("lr");
    p.count = r.integer("count", 0, kMaxCount);
    p.compressed = r.has("gradient_bf16");
    if (p.compressed) {
        p.gradient_bf16 = r.bytes("gradient_bf16");
        p.buffers = r.bytes("buffers");
    } else {
        p.gradient = r.bytes("gradient");
    }
    return result(r, p, error);
}

QCborMap ExchangeProbeRequest::toCbor() const
{
    return QCborMap{{QStringLiteral("prefix"), prefix}, {QStringLiteral("floats"), qint64(floats)}};
}

std::optional<ExchangeProbeRequest> ExchangeProbeRequest::fromCbor(const QCborMap &map,
                                                                   QString *error)
{
    FieldReader r(map, QStringLiteral("exchange_probe"));
    ExchangeProbeRequest p;
    p.prefix = r.text("prefix", 256);
    p.floats = r.integer("floats", 1, kMaxCount);
    return result(r, p, error);
}

QCborMap WeightsChunk::toCbor() const
{
    return QCborMap{{QStringLiteral("index"), index},
                    {QStringLiteral("total"), total},
                    {QStringLiteral("epoch"), qint64(epoch)},
                    {QStringLiteral("data"), data}};
}

std::optional<WeightsChunk> WeightsChunk::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("weights"));
    WeightsChunk c;
    c.total = int(r.integer("total", 1, 1 << 20));
    c.index = int(r.integer("index", 0, 1 << 20));
    c.epoch = r.integer("epoch", 0, kMaxEpoch);
    c.data = r.bytes("data", kMaxBytes);
    if (r.ok() && c.index >= c.total)
        r.fail(QStringLiteral("chunk %1 of %2").arg(c.index).arg(c.total));
    return result(r, c, error);
}

QCborMap CollectiveFailed::toCbor() const
{
    return QCborMap{{QStringLiteral("step"), qint64(step)}, {QStringLiteral("message"), message}};
}

std::optional<CollectiveFailed> CollectiveFailed::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("collective_failed"));
    CollectiveFailed f;
    f.step = r.integer("step", 0, kMaxCount);
    f.message = r.text("message");
    return result(r, f, error);
}

QCborMap JobDone::toCbor() const
{
    return QCborMap{{QStringLiteral("cancelled"), cancelled},
                    {QStringLiteral("steps"), qint64(steps)},
                    {QStringLiteral("rank"), rank},
                    {QStringLiteral("fingerprint"), fingerprint}};
}

std::optional<JobDone> JobDone::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("job_done"));
    JobDone d;
    d.cancelled = r.boolean("cancelled");
    d.steps = r.integer("steps", 0, kMaxCount);
    d.rank = int(r.integer("rank", 0, 1 << 20));
    d.fingerprint = r.text("fingerprint", 128);
    return result(r, d, error);
}

QCborMap Failure::toCbor() const
{
    return QCborMap{{QStringLiteral("message"), message}};
}

Failure Failure::fromCbor(const QCborMap &map)
{
    return {map.value(QStringLiteral("message")).toString()};
}

QCborMap Receipt::toCbor() const
{
    return QCborMap{{QStringLiteral("id"), id}};
}

Receipt Receipt::fromCbor(const QCborMap &map)
{
    return {map.value(QStringLiteral("id")).toString()};
}

} // namespace edgetrain::net

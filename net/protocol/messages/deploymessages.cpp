#include "net/protocol/messages/deploymessages.h"

#include "net/protocol/messages/fieldreader.h"

namespace edgetrain::net {

namespace {

constexpr std::int64_t kMaxCount = std::int64_t(1) << 50;
constexpr int kSha256Bytes = 32;

template <typename T> std::optional<T> result(const FieldReader &r, T value, QString *error)
{
    if (!r.ok()) {
        *error = r.error();
        return std::nullopt;
    }
    return value;
}

} // namespace

QCborMap DeployModel::toCbor() const
{
    return QCborMap{{QStringLiteral("id"), id},
                    {QStringLiteral("index"), qint64(index)},
                    {QStringLiteral("total"), qint64(total)},
                    {QStringLiteral("file_bytes"), qint64(file_bytes)},
                    {QStringLiteral("sha256"), sha256},
                    {QStringLiteral("data"), data}};
}

std::optional<DeployModel> DeployModel::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("deploy_model"));
    DeployModel m;
    m.id = r.text("id", 64);
    m.index = r.integer("index", 0, kMaxCount);
    m.total = r.integer("total", 1, kMaxCount);
    m.file_bytes = r.integer("file_bytes", 0, kMaxCount);
    m.sha256 = r.bytes("sha256", kSha256Bytes);
    m.data = r.bytes("data", kChunkBytes);
    if (r.ok() && m.index >= m.total)
        r.fail(QStringLiteral("chunk %1 of %2 does not exist").arg(m.index).arg(m.total));
    return result(r, m, error);
}

QCborMap DeployStart::toCbor() const
{
    return QCborMap{{QStringLiteral("id"), id}, {QStringLiteral("grace_ms"), qint64(grace_ms)}};
}

std::optional<DeployStart> DeployStart::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("deploy_start"));
    DeployStart s;
    s.id = r.text("id", 64);
    s.grace_ms = r.integerOr("grace_ms", 10000, 0, std::int64_t(24) * 3600 * 1000);
    return result(r, s, error);
}

QCborMap DeployAccepted::toCbor() const
{
    return QCborMap{{QStringLiteral("id"), id}, {QStringLiteral("source"), source}};
}

std::optional<DeployAccepted> DeployAccepted::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("deploy_accepted"));
    DeployAccepted a;
    a.id = r.text("id", 64);
    a.source = r.text("source", 1024);
    return result(r, a, error);
}

QCborMap DeployReport::toCbor() const
{
    return QCborMap{{QStringLiteral("source"), source},
                    {QStringLiteral("jpeg"), jpeg},
                    {QStringLiteral("frame_detections"), qint64(frame_detections)},
                    {QStringLiteral("frames"), qint64(frames)},
                    {QStringLiteral("detections"), qint64(detections)},
                    {QStringLiteral("fps"), fps},
                    {QStringLiteral("latency_ms_p50"), latency_ms_p50},
                    {QStringLiteral("latency_ms_p95"), latency_ms_p95},
                    {QStringLiteral("cpu_percent"), cpu_percent},
                    {QStringLiteral("rss_bytes"), qint64(rss_bytes)}};
}

std::optional<DeployReport> DeployReport::fromCbor(const QCborMap &map, QString *error)
{
    FieldReader r(map, QStringLiteral("deploy_report"));
    DeployReport d;
    d.source = r.text("source", 1024);
    d.jpeg = r.bytes("jpeg", kMaxJpegBytes);
    d.frame_detections = r.integer("frame_detections", 0, kMaxCount);
    d.frames = r.integer("frames", 0, kMaxCount);
    d.detections = r.integer("detections", 0, kMaxCount);
    d.fps = r.number("fps", 0.0);
    d.latency_ms_p50 = r.number("latency_ms_p50", 0.0);
    d.latency_ms_p95 = r.number("latency_ms_p95", 0.0);
    d.cpu_percent = r.number("cpu_percent", 0.0);
    d.rss_bytes = r.integer("rss_bytes", 0, kMaxCount);
    return result(r, d, error);
}

} // namespace edgetrain::net

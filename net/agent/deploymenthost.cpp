#include "net/agent/deploymenthost.h"

#include "core/parallel.h"
#include "core/processmemory.h"
#include "net/protocol/controlchannel.h"
#include "net/protocol/messages/deploymessages.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"

#include <QCryptographicHash>
#include <QLoggingCategory>

#include <algorithm>
#include <deque>
#include <time.h>

namespace edgetrain::net {

Q_LOGGING_CATEGORY(lcDeploy, "edgetrain.node.deploy")

namespace {

/** Reports queued for a session and not sent yet, at most. */
constexpr qint64 kMaxUnsentBytes = qint64(1) << 20;

QString mib(qint64 bytes)
{
    return QStringLiteral("%1 MiB").arg(double(bytes) / double(1 << 20), 0, 'f', 1);
}

double processCpuSeconds()
{
    timespec t{};
    ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

/** The value below which `share` of the sorted values lie (nearest rank). */
double percentile(const std::vector<double> &sorted, double share)
{
    if (sorted.empty())
        return 0.0;
    const auto rank = std::size_t(std::max(0.0, std::ceil(share * double(sorted.size())) - 1.0));
    return sorted[std::min(rank, sorted.size() - 1)];
}

} // namespace

struct DeploymentHost::Upload
{
    QPointer<ControlChannel> channel;
    QString id;
    std::int64_t total = 0;
    std::int64_t next = 0;
    std::int64_t file_bytes = 0;
    QByteArray sha256;
    QByteArray data;      // grows with the chunks: an announced size is not trusted with memory
    bool refused = false; // its later chunks are dropped without a word
    bool complete = false;
};

DeploymentHost::DeploymentHost(std::shared_ptr<InferenceSource> source, DeploymentOptions options,
                               QObject *parent)
    : QObject(parent), m_source(std::move(source)), m_options(options), m_uploadExpiry(this),
      m_silence(this), m_grace(this)
{
    m_grace.setSingleShot(true);
    connect(&m_grace, &QTimer::timeout, this, [this] {
        qCInfo(lcDeploy).noquote()
            << "deployment" << m_id << "stops: its session is gone" << m_graceTime.count() << "ms";
        stop();
    });
    m_uploadExpiry.setSingleShot(true);
    connect(&m_uploadExpiry, &QTimer::timeout, this, [this] {
        if (m_upload)
            qCInfo(lcDeploy).noquote()
                << "model" << m_upload->id << "dropped: no deploy_start within"
                << m_options.upload_timeout.count() << "ms";
        m_upload.reset();
    });
    m_silence.setSingleShot(true);
    connect(&m_silence, &QTimer::timeout, this, [this] {
        if (running() && ownerPresent())
            ownerGone("has sent nothing for a while");
    });
}

DeploymentHost::~DeploymentHost()
{
    stop();
}

bool DeploymentHost::handles(const QString &type)
{
    return type == Message::DeployModel || type == Message::DeployStart ||
           type == Message::DeployStop;
}

void DeploymentHost::handle(ControlChannel *channel, const Frame &frame, const QString &busy)
{
    if (frame.type == Message::DeployModel)
        return handleChunk(channel, frame);
    if (frame.type == Message::DeployStart)
        return handleStart(channel, frame, busy);
    handleStop(channel);
}

void DeploymentHost::handleStop(ControlChannel *channel)
{
    if (!running())
        return channel->send(
            Message::Error,
            Failure{QStringLiteral("nothing to stop: no deployment runs on this node")}.toCbor());
    // Its own session stops a deployment; any session one whose session is gone.
    if (m_owner != channel && ownerPresent())
        return refuse(channel, QStringLiteral("deployment '%1' runs for %2: only that session "
                                              "stops it")
                                   .arg(m_id, m_owner->peer()));
    qCInfo(lcDeploy).noquote() << "deployment" << m_id << "asked to stop"
                               << (m_owner == channel ? "" : "(its session is gone)");
    stop();
    channel->send(Message::DeployStopped);
}

void DeploymentHost::refuse(ControlChannel *channel, const QString &message)
{
    qCWarning(lcDeploy).noquote() << "deployment from" << channel->peer() << "refused:" << message;
    channel->send(Message::DeployRefused, Failure{message}.toCbor());
}

void DeploymentHost::refuseUpload(const QString &message)
{
    m_upload->refused = true;
    m_upload->complete = false;
    m_upload->data = QByteArray();
    if (m_upload->channel)
        refuse(m_upload->channel, message);
}

void DeploymentHost::handleChunk(ControlChannel *channel, const Frame &frame)
{
    QString error;
    const auto chunk = DeployModel::fromCbor(frame.body, &error);
    if (!chunk)
        return refuse(channel, error);
    if (chunk->index == 0) {
        if (m_upload && m_upload->id != chunk->id && !m_upload->refused)
            qCInfo(lcDeploy).noquote() << "model" << m_upload->id << "dropped for" << chunk->id
                                       << "from" << channel->peer();
        m_upload = std::make_unique<Upload>();
        m_upload->channel = channel;
        m_upload->id = chunk->id;
        m_upload->total = chunk->total;
        m_upload->file_bytes = chunk->file_bytes;
        m_upload->sha256 = chunk->sha256;
        m_uploadExpiry.start(m_options.upload_timeout);
        if (chunk->file_bytes > m_options.max_model_bytes)
            return refuseUpload(QStringLiteral("the model file is %1, more than this node "
                                               "takes (%2)")
                                    .arg(mib(chunk->file_bytes), mib(m_options.max_model_bytes)));
    } else if (!m_upload || m_upload->channel != channel || m_upload->id != chunk->id) {
        return refuse(channel, QStringLiteral("chunk %1 of a model whose first chunk did not "
                                              "arrive, or was replaced by another upload")
                                   .arg(chunk->index));
    }
    Upload &upload = *m_upload;
    m_uploadExpiry.start(m_options.upload_timeout); // a chunk of the upload: it is not idle
    if (upload.refused)
        return;
    if (chunk->index != upload.next || chunk->total != upload.total ||
        chunk->file_bytes != upload.file_bytes || chunk->sha256 != upload.sha256)
        return refuseUpload(QStringLiteral("chunk %1 of the model does not follow chunk %2")
                                .arg(chunk->index)
                                .arg(upload.next - 1));
    if (upload.data.size() + chunk->data.size() > upload.file_bytes)
        return refuseUpload(QStringLiteral("the model file is larger than the %1 bytes it "
                                           "announced")
                                .arg(upload.file_bytes));
    upload.data.append(chunk->data);
    ++upload.next;
    if (upload.next < upload.total)
        return;
    if (upload.data.size() != upload.file_bytes)
        return refuseUpload(QStringLiteral("the model file is truncated: %1 of its %2 bytes "
                                           "arrived")
                                .arg(upload.data.size())
                                .arg(upload.file_bytes));
    if (QCryptographicHash::hash(upload.data, QCryptographicHash::Sha256) != upload.sha256)
        return refuseUpload(QStringLiteral("the model file's SHA-256 does not match its "
                                           "bytes: it was damaged on the way"));
    upload.complete = true;
    qCInfo(lcDeploy).noquote() << "model" << upload.id << "from" << channel->peer()
                               << "arrived:" << upload.data.size() << "bytes, SHA-256 checked";
}

void DeploymentHost::handleStart(ControlChannel *channel, const Frame &frame, const QString &busy)
{
    QString error;
    const auto start = DeployStart::fromCbor(frame.body, &error);
    if (!start)
        return refuse(channel, error);
    if (!m_source)
        return refuse(channel, QStringLiteral("this node has no camera: it runs a model only on "
                                              "one configured on the node (edgetrain-node "
                                              "--camera camera:0|FILE|FOLDER, or camera = in "
                                              "node.conf)"));
    if (!busy.isEmpty())
        return refuse(channel, busy);
    if (running() && ownerPresent())
        return refuse(
            channel,
            QStringLiteral("busy running deployment '%1' for %2").arg(m_id, m_owner->peer()));
    if (!m_upload || m_upload->channel != channel || m_upload->id != start->id ||
        !m_upload->complete)
        return refuse(channel, QStringLiteral("the model for deployment '%1' has not arrived "
                                              "whole")
                                   .arg(start->id));
    // A deployment whose session is gone, waiting out its grace period, gives way (before the
    // camera is opened again: a device may take one reader at a time).
    stop();
    const std::unique_ptr<Upload> upload = std::move(m_upload);
    m_uploadExpiry.stop();
    std::unique_ptr<Inference> inference;
    try {
        inference = m_source->open(upload->data);
    } catch (const std::exception &e) {
        return refuse(channel, QString::fromUtf8(e.what()));
    }
    m_owner = channel;
    m_ownerSilent = false;
    m_silence.start(m_options.owner_silence);
    m_id = start->id;
    m_graceTime = std::min(std::chrono::milliseconds(start->grace_ms), m_options.max_grace);
    m_inference = std::move(inference);
    m_thread = std::jthread(
        [this, threads = core::threadCount(), generation = m_generation](std::stop_token token) {
            run(std::move(token), *m_inference, threads, generation);
        });
    qCInfo(lcDeploy).noquote() << "deployment" << m_id << "from" << channel->peer() << "runs on"
                               << m_source->name();
    channel->send(Message::DeployAccepted, DeployAccepted{m_id, m_source->name()}.toCbor());
}

void DeploymentHost::sessionClosed(ControlChannel *channel)
{
    if (m_upload && m_upload->channel == channel) {
        m_upload.reset();
        m_uploadExpiry.stop();
    }
    if (running() && m_owner == channel) {
        const bool counting = m_ownerSilent;
        m_owner = nullptr;
        if (!counting) // a silent session's grace period runs already
            ownerGone("lost its session");
    }
}

void DeploymentHost::heard(ControlChannel *channel)
{
    if (!running() || m_owner != channel)
        return;
    m_silence.start(m_options.owner_silence);
    if (m_ownerSilent) {
        m_ownerSilent = false;
        m_grace.stop();
        qCInfo(lcDeploy).noquote() << "deployment" << m_id << "hears its session again";
    }
}

void DeploymentHost::ownerGone(const char *why)
{
    m_ownerSilent = m_owner != nullptr;
    m_silence.stop();
    qCInfo(lcDeploy).noquote() << "deployment" << m_id << why << "- it stops in"
                               << m_graceTime.count() << "ms unless a new one takes over";
    m_grace.start(m_graceTime);
}

void DeploymentHost::stop()
{
    m_grace.stop();
    m_silence.stop();
    m_ownerSilent = false;
    if (m_thread.joinable()) {
        m_thread.request_stop();
        m_thread.join();
    }
    m_thread = std::jthread();
    m_inference.reset();
    m_owner = nullptr;
    ++m_generation;
}

void DeploymentHost::post(quint64 generation, const QString &type, const QCborMap &body)
{
    QMetaObject::invokeMethod(
        this,
        [this, generation, type, body] {
            if (generation != m_generation)
                return; // an earlier deployment's, posted before it was stopped
            // A coordinator that does not read its reports gets none until it catches up.
            const bool backlog = type == Message::DeployReport && m_owner &&
                                 m_owner->unsentBytes() > kMaxUnsentBytes;
            if (m_owner && !backlog)
                m_owner->send(type, body);
            if (type == Message::DeployFailed) {
                qCWarning(lcDeploy).noquote()
                    << "deployment" << m_id << "failed:" << Failure::fromCbor(body).message;
                stop();
            }
        },
        Qt::QueuedConnection);
}

void DeploymentHost::run(std::stop_token stop, Inference &inference, int threads,
                         quint64 generation)
{
    // An exception out of this thread would end the node (std::terminate): whatever the model
    // or the camera throws ends this deployment alone, and its coordinator is told why.
    try {
        loop(stop, inference, threads, generation);
    } catch (const std::exception &e) {
        post(generation, Message::DeployFailed, Failure{QString::fromUtf8(e.what())}.toCbor());
    } catch (...) {
        post(generation, Message::DeployFailed,
             Failure{QStringLiteral("the model failed with an unknown error")}.toCbor());
    }
}

void DeploymentHost::loop(const std::stop_token &stop, Inference &inference, int threads,
                          quint64 generation)
{
    // The engine's threads are a per-thread setting: this thread takes the node's --threads.
    core::setThreadCount(threads);
    using Clock = std::chrono::steady_clock;
    const double interval_s = std::chrono::duration<double>(m_options.report_interval).count();
    std::deque<std::pair<Clock::time_point, double>> recent; // the last interval's latencies
    DeployReport report;
    report.source = m_source->name();
    Clock::time_point lastReport = Clock::now();
    double lastCpu = processCpuSeconds();
    while (!stop.stop_requested()) {
        InferenceFrame frame;
        QString error;
        if (!inference.step(&frame, &error))
            return post(generation, Message::DeployFailed, Failure{error}.toCbor());
        const Clock::time_point now = Clock::now();
        ++report.frames;
        report.detections += frame.detections;
        report.frame_detections = frame.detections;
        recent.emplace_back(now, frame.latency_ms);
        const double sinceReport = std::chrono::duration<double>(now - lastReport).count();
        if (sinceReport < interval_s)
            continue;
        while (!recent.empty() &&
               std::chrono::duration<double>(now - recent.front().first).count() > interval_s)
            recent.pop_front();
        std::vector<double> latencies;
        for (const auto &[at, ms] : recent)
            latencies.push_back(ms);
        std::sort(latencies.begin(), latencies.end());
        report.fps = double(recent.size()) / interval_s;
        report.latency_ms_p50 = percentile(latencies, 0.5);
        report.latency_ms_p95 = percentile(latencies, 0.95);
        const double cpu = processCpuSeconds();
        report.cpu_percent = 100.0 * (cpu - lastCpu) / sinceReport;
        lastCpu = cpu;
        report.rss_bytes = core::process_memory::residentBytes();
        report.jpeg = inference.snapshot();
        lastReport = now;
        post(generation, Message::DeployReport, report.toCbor());
    }
}

} // namespace edgetrain::net

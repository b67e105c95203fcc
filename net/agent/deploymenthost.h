#pragma once

#include "net/agent/inferencesource.h"
#include "net/protocol/frame.h"

#include <QByteArray>
#include <QObject>
#include <QPointer>
#include <QTimer>

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

namespace edgetrain::net {

class ControlChannel;

struct DeploymentOptions
{
    /** A model file larger than this is refused at its first chunk. */
    qint64 max_model_bytes = qint64(64) << 20;
    std::chrono::milliseconds report_interval{1000};
    /** An upload that has had no chunk and no deploy_start for this long is dropped. */
    std::chrono::milliseconds upload_timeout{30000};
    /** The longest grace period a deploy_start gets, whatever it asks for. */
    std::chrono::milliseconds max_grace{60000};
    /** A deployment's session that has sent nothing for this long (its coordinator pings every
     *  second) counts as gone, as if its connection had closed: the grace period starts. */
    std::chrono::milliseconds owner_silence{5000};
};

/**
 * The node's side of a deployment (the deploy_* messages, protocol.h): assembles the model a
 * session sends, checks its size and SHA-256, has the node's InferenceSource check the rest and
 * open the camera, and runs it on a thread of its own, sending the session a DeployReport every
 * report_interval. One deployment at a time; it ends on deploy_stop from its session (or from
 * any session once its own is gone), when that session has been gone longer than the grace
 * period its deploy_start gave (at most max_grace), or when the camera gives no more frames or
 * the model throws (deploy_failed). A session is gone when its connection closes or when it has
 * sent nothing for owner_silence (a link that died without a FIN). Every refusal is a
 * deploy_refused with a sentence the coordinator shows.
 *
 * One upload at a time on the node: a model's first chunk, from any session, replaces an upload
 * under way or waiting for its deploy_start (whose later chunks and start are then refused).
 * The upload's buffer grows with the chunks that arrived; it is freed when the upload is refused,
 * started, replaced, its session closes, or it has been idle for upload_timeout.
 * Lives on the node server's thread.
 */
class DeploymentHost : public QObject
{
    Q_OBJECT

public:
    /** `source` null: the node has no camera, and says so to every deploy_start. */
    DeploymentHost(std::shared_ptr<InferenceSource> source, DeploymentOptions options,
                   QObject *parent = nullptr);
    ~DeploymentHost() override;

    /** Whether `type` is a message handle() takes. */
    static bool handles(const QString &type);
    /** A deploy message from an authenticated session. `busy`: why the node cannot run a
     *  deployment now (its training job), empty when it can. */
    void handle(ControlChannel *channel, const Frame &frame, const QString &busy);
    /** The session on `channel` is gone: its upload is dropped, its deployment runs on for the
     *  grace period. */
    void sessionClosed(ControlChannel *channel);
    /** The node server heard a frame from the authenticated session on `channel`. */
    void heard(ControlChannel *channel);
    bool running() const { return m_thread.joinable(); }
    /** Ends the deployment, if any, and waits for its thread (at most about a frame's time). */
    void stop();

private:
    struct Upload;
    void handleChunk(ControlChannel *channel, const Frame &frame);
    void handleStart(ControlChannel *channel, const Frame &frame, const QString &busy);
    void handleStop(ControlChannel *channel);
    void refuse(ControlChannel *channel, const QString &message);
    /** Refuses the upload and frees its buffer; its later chunks are dropped without a word. */
    void refuseUpload(const QString &message);
    /** Whether the running deployment's session is there and has been heard from lately. */
    bool ownerPresent() const { return m_owner && !m_ownerSilent; }
    /** The owner's session is gone (closed or silent): the grace period starts. */
    void ownerGone(const char *why);
    /** The inference thread: loop(), and deploy_failed with the message of anything it throws. */
    void run(std::stop_token stop, Inference &inference, int threads, quint64 generation);
    /** Step, tally, report, until stopped or the camera gives out. */
    void loop(const std::stop_token &stop, Inference &inference, int threads, quint64 generation);
    /** From the inference thread: `type` and `body` to the deployment's session, if that
     *  deployment still runs; deploy_failed also ends it. */
    void post(quint64 generation, const QString &type, const QCborMap &body);

    std::shared_ptr<InferenceSource> m_source;
    DeploymentOptions m_options;
    std::unique_ptr<Upload> m_upload; // the one upload on the node, if any
    QTimer m_uploadExpiry;
    QPointer<ControlChannel> m_owner; // null once its session is gone
    bool m_ownerSilent = false;       // heard nothing from m_owner for owner_silence
    QTimer m_silence;
    QString m_id;
    std::chrono::milliseconds m_graceTime{0};
    /** Counts deployments: what the inference thread posts for an earlier one is dropped. */
    quint64 m_generation = 0;
    QTimer m_grace;
    std::unique_ptr<Inference> m_inference; // used by m_thread alone while it runs
    std::jthread m_thread;
};

} // namespace edgetrain::net

#pragma once

#include "net/agent/inferencesource.h"
#include "net/protocol/frame.h"

#include <QByteArray>
#include <QHash>
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
};

/**
 * The node's side of a deployment (the deploy_* messages, protocol.h): assembles the model a
 * session sends, checks its size and SHA-256, has the node's InferenceSource check the rest and
 * open the camera, and runs it on a thread of its own, sending the session a DeployReport every
 * report_interval. One deployment at a time; it ends on deploy_stop from its session, when that
 * session has been gone longer than the grace period its deploy_start gave, or when the camera
 * gives no more frames (deploy_failed). Every refusal is a deploy_refused with a sentence the
 * coordinator shows. Lives on the node server's thread.
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
    bool running() const { return m_thread.joinable(); }
    /** Ends the deployment, if any, and waits for its thread (at most about a frame's time). */
    void stop();

private:
    struct Upload;
    void handleChunk(ControlChannel *channel, const Frame &frame);
    void handleStart(ControlChannel *channel, const Frame &frame, const QString &busy);
    void refuse(ControlChannel *channel, const QString &message);
    /** The inference thread: loop(), and deploy_failed with the message of anything it throws. */
    void run(std::stop_token stop, Inference &inference, int threads, quint64 generation);
    /** Step, tally, report, until stopped or the camera gives out. */
    void loop(const std::stop_token &stop, Inference &inference, int threads, quint64 generation);
    /** From the inference thread: `type` and `body` to the deployment's session, if that
     *  deployment still runs; deploy_failed also ends it. */
    void post(quint64 generation, const QString &type, const QCborMap &body);

    std::shared_ptr<InferenceSource> m_source;
    DeploymentOptions m_options;
    QHash<ControlChannel *, std::shared_ptr<Upload>> m_uploads;
    QPointer<ControlChannel> m_owner; // null once its session is gone
    QString m_id;
    std::chrono::milliseconds m_graceTime{0};
    /** Counts deployments: what the inference thread posts for an earlier one is dropped. */
    quint64 m_generation = 0;
    QTimer m_grace;
    std::unique_ptr<Inference> m_inference; // used by m_thread alone while it runs
    std::jthread m_thread;
};

} // namespace edgetrain::net

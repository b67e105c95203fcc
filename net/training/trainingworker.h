#pragma once

#include "core/tensordataset.h"
#include "net/protocol/messages/trainingstatus.h"
#include "net/training/job.h"
#include "net/training/joblink.h"

#include <QCborMap>
#include <QLoggingCategory>

#include <memory>
#include <mutex>

namespace edgetrain::net {

Q_DECLARE_LOGGING_CATEGORY(lcWorker)

/** What the node gives its worker besides the job. */
struct WorkerContext
{
    std::string bind_address = "127.0.0.1"; // where this node's gloo endpoint listens
    std::int64_t memory_limit = -1;         // the node's --memory-limit (bytes)
    std::string data_dir;                   // the node's --data-dir (empty: the default)
    std::shared_ptr<const core::TensorDataset> train, test; // shipped data, if the job uses it
    // The device's power idle and busy for the planner (SystemSampler::powerFigures); < 0: not
    // known.
    double idle_watts = -1.0, busy_watts = -1.0;
    double cpu_quota_cores = 0.0;    // the node's cgroup CPU quota (0: none)
    double cpu_period_seconds = 0.0; // its period
    double busy_cores = 1.0; // the CPU busy_watts is for (SystemSampler::PowerFigures::busy_cores)
    std::string coordinator_host; // the control connection's peer (the link probe's host)
    QString power_source;
};

/**
 * One job on one node: runs on its own thread, talks to the coordinator only through the
 * JobLink (requests and posts) and to the other nodes only through gloo collectives. Never
 * throws: failures are reported to the coordinator ("job_failed") and logged.
 *
 * sync       every global batch is split across the ranks by their shares; the gradients,
 *            each weighted by its part of the batch, are summed with one ring allreduce, so the
 *            step equals one node's step on the whole batch (batch-norm aside).
 * local-sgd  the same split, no communication for local_steps steps, then the models are
 *            averaged (weighted by the ranks' shares) with one allreduce.
 * async      the epoch's samples are split by share; each rank pulls the parameter server's
 *            weights, pushes gradients and gets fresh weights back (the coordinator holds the
 *            replies of a rank that runs more than `staleness` pushes ahead).
 *
 * When a collective fails (a peer died), the worker asks the coordinator for the new group,
 * rebuilds it, and the ranks agree on the most advanced synchronised state (the rank with the
 * most completed steps broadcasts its weights, optimizer state and position), then continue.
 *
 * Its parts are in net/training/worker/: the loader, the memory guard, the device profiler, the
 * group session, one class per mode and the end of an epoch, over the run's shared state.
 */
class TrainingWorker
{
public:
    TrainingWorker(JobSpec job, std::shared_ptr<JobLink> link, WorkerContext context);
    ~TrainingWorker();

    void run(); // the worker thread's body
    TrainingStatus status() const;

private:
    void setStatus(const std::function<void(TrainingStatus &)> &update);

    JobSpec m_job;
    std::shared_ptr<JobLink> m_link;
    WorkerContext m_context;
    mutable std::mutex m_statusMutex;
    TrainingStatus m_status;
};

} // namespace edgetrain::net

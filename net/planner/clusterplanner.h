#pragma once

#include "core/batchshares.h"
#include "core/clusterplanner.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/job.h"

#include <QCborMap>
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain::net {

/**
 * The cluster planner on the nodes' messages: their job_ready bodies become the pure model's
 * inputs (core/clusterplanner.h, where the maths and its contract live) and its predictions
 * come back with Qt types and the training modes' names. Nothing here computes a figure.
 */

/**
 * What profiling measured on one device, on the real job (its model, its own data shard): the
 * costs the model reads (core::DeviceCost) and what the plan reports beside them — its name,
 * where its power figures come from, why a link or exchange could not be measured, and how
 * long profiling took.
 */
struct DeviceMeasurement : core::DeviceCost
{
    QString name;
    QString power_source; // "rapl", "hwmon" (measured) or "estimated: <profile>"
    QString link_error;   // the link could not be measured: the device trains alone or not at all
    // How exchange_seconds_per_byte was timed: over its link against the coordinator's rank
    // (measurePairExchange, "link"), or where the coordinator hosts none, on the device over
    // loopback (measureExchange, "loopback").
    enum class ExchangeOver { Unknown, Link, Loopback };
    ExchangeOver exchange_over = ExchangeOver::Unknown;
    QString exchange_link_error; // why not over the link, where the coordinator hosted a rank
    QString exchange_error;      // why it was not measured (then no such bound is known)
    // What profiling took on this device (from the start of its profile, after loading the
    // data, to its job_ready), and of it the link probe (its wait in line at the coordinator's
    // probe server included; asks for a turn that were refused are not).
    double profile_seconds = 0.0, link_probe_seconds = 0.0;

    /** The device as the model sees it. */
    core::PlanDevice planDevice() const;
};

/** The work the plan is for: what is left of the job once profiling is done. */
using PlanWork = core::PlanWork;

/** One candidate: a subset of the devices, a mode, and what the model predicts for it. */
struct PlanCandidate : core::CandidateFigures
{
    std::vector<int> devices; // indices into the measurements, ascending
    QStringList names;        // the devices' names, in the same order
    TrainingMode mode = TrainingMode::Sync;
    QString refused; // why this candidate cannot run (a device over its memory); empty: it can

    static PlanCandidate fromCore(const core::PlanCandidate &c);
    core::PlanCandidate toCore() const;
};

/** A device's measurement from its job_ready message (its profile: compute, memory, power and the
 *  link the node measured to the coordinator's LinkProbeServer). The compute line goes through the
 *  two measured batch sizes; noise that would give a negative slope or intercept falls back to
 *  the larger batch's time per sample; a profile without them (an older node) gives the node's
 *  speed as its time per sample. */
DeviceMeasurement measurementFromReady(const QString &name, const JobReady &ready);
/** The same from a job_ready body as it came, read with JobReady::fromCborLenient: a body from
 *  an older node, or a partial one, gives the figures it holds and defaults for the rest. */
DeviceMeasurement measurementFromReady(const QString &name, const QCborMap &ready);
/** What is left to train after profiling: the job's epochs over the ready node's data, and the
 *  model's sizes from its job_ready message (an older node's parameter count where it gives no
 *  exchange sizes). */
PlanWork workFromReady(const JobSpec &job, const JobReady &ready);

/** core::settledShares for measured devices (in rank order). */
std::vector<double> settledShares(const std::vector<const DeviceMeasurement *> &devices,
                                  std::int64_t batch);
using core::capShares;

/** The model's mode for a training mode, and back. */
core::PlanMode planMode(TrainingMode mode);
TrainingMode trainingMode(core::PlanMode mode);

/** What the user asks the plan to minimise, and under which limits (core::PlanObjective), read
 *  from and named in Qt's strings. */
struct PlanObjective : core::PlanObjective
{
    /** "time", "power", "energy", "edp" or "mix:time=1,energy=2" (the weights of a mix). */
    static std::optional<PlanObjective> parse(const QString &text, QString *error);
    QString name() const;
};

/** The planner's model (core::ClusterPlanner) over measured devices and training modes. */
class ClusterPlanner
{
public:
    /** Throws core::Error for no devices, more than kMaxDevices, or work without a batch. */
    ClusterPlanner(std::vector<DeviceMeasurement> devices, PlanWork work);

    /** Every non-empty subset of the devices in every given mode (at most 12 devices). */
    std::vector<PlanCandidate> candidates(const std::vector<TrainingMode> &modes) const;
    /** One candidate's prediction. */
    PlanCandidate predict(const std::vector<int> &devices, TrainingMode mode) const;
    /** Best first by the objective: candidates that can run and meet the limits, then the rest
     *  (refused, over a limit, or with unknown power for a power objective) in the same order. */
    static std::vector<PlanCandidate> rank(std::vector<PlanCandidate> candidates,
                                           const PlanObjective &objective);
    /** Whether the candidate can be chosen under the objective; the reason if not. */
    static QString unsuitable(const PlanCandidate &c, const PlanObjective &objective);

    /** Seconds of gloo's ring allreduce of `bytes` among `devices`. */
    double allreduceSeconds(const std::vector<int> &devices, double bytes) const;
    /** Shares of the global batch for `devices` (in their order), as the trainer settles them. */
    std::vector<double> shares(const std::vector<int> &devices) const;

    const std::vector<DeviceMeasurement> &devices() const { return m_devices; }
    const PlanWork &work() const { return m_model.work(); }

    static constexpr int kMaxDevices = core::ClusterPlanner::kMaxDevices;

private:
    std::vector<DeviceMeasurement> m_devices;
    core::ClusterPlanner m_model;
};

/** A plan made from the nodes' job_ready messages (in the coordinator's order). */
struct ClusterPlanResult
{
    std::vector<DeviceMeasurement> devices;
    std::vector<PlanCandidate> ranked;   // best first
    std::optional<PlanCandidate> chosen; // the best that can run within the limits
    // The longest node's profile (its link probe included), and the longest link probe (its
    // turn at the coordinator's probe server included).
    double profiling_seconds = 0.0;
    double link_probe_seconds = 0.0;
    QString error;           // why nothing could be planned (no or too many nodes)
    PlanObjective objective; // what it was ranked by
};
/** Whether a plan for `modes` needs the nodes' link rates (JobSpec::link_rates): async's pushes
 *  and pulls ride them, and the planner refuses async for a device without them; sync and
 *  local SGD read the exchange over the link. */
inline bool needsLinkRates(const std::vector<TrainingMode> &modes)
{
    return std::find(modes.begin(), modes.end(), TrainingMode::Async) != modes.end();
}

/** Measurements from each ready node (name, job_ready body, read as measurementFromReady reads
 *  it), the work from the job and the first node's sizes, every candidate in `modes`, ranked by
 *  `objective`. */
ClusterPlanResult planCluster(const std::vector<std::pair<QString, QCborMap>> &ready,
                              const JobSpec &job, const PlanObjective &objective,
                              const std::vector<TrainingMode> &modes);

} // namespace edgetrain::net

Q_DECLARE_METATYPE(edgetrain::net::ClusterPlanResult)

#pragma once

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
 * What profiling measured on one device, on the real job (its model, its own data shard):
 * forward + backward time against the local batch (a line through two measured batch sizes),
 * the optimizer's update, evaluation, the largest local batch its memory takes, its power idle
 * and busy, and its link to the coordinator (measured with timed transfers, not configured).
 */
struct DeviceMeasurement
{
    QString name;
    // Seconds of forward + backward for a local batch b: fixed + per_sample * b.
    double step_fixed_seconds = 0.0;
    double step_per_sample_seconds = 0.0;
    double update_seconds = 0.0;          // one optimizer step over the whole model
    double eval_per_sample_seconds = 0.0; // forward only
    /** The largest local batch that fits the device's memory; 0: not even one sample (the
     *  device is refused by every candidate that has it); -1: no limit known. */
    std::int64_t max_local_batch = -1;
    double idle_watts = -1.0; // < 0: not known
    double busy_watts = -1.0; // < 0: not known
    QString power_source;     // "rapl", "hwmon" (measured) or "estimated: <profile>"
    // The link, as the coordinator measured it: one-way rates and the round trip.
    double up_bytes_per_second = 0.0;   // device -> network
    double down_bytes_per_second = 0.0; // network -> device
    double rtt_seconds = 0.0;
    // What moving a byte keeps the device busy, in seconds at the utilisation busy_watts is for
    // (the link probe's CPU time per byte over the cores a job computes on): a device waiting
    // on its link is not idle, its network stack works (0: not measured). A lower bound: the
    // probe's thread CPU misses the kernel's receive work done in interrupt context, and a
    // stream one way at a time is timed where the ring sends and receives at once. Only the
    // power model uses it; busy time past the wall time is clamped (a device is busy at most
    // all the time).
    double up_busy_seconds_per_byte = 0.0;
    double down_busy_seconds_per_byte = 0.0;
    // Whether the link's transfers ran: a node whose exchange was timed over its link skips them
    // where the plan has no async (JobSpec::link_rates); the rates and the two figures above
    // are then 0, and async cannot be predicted for the device in a group.
    bool link_rates_timed = true;
    QString link_error; // the link could not be measured: the device trains alone or not at all
    // Wall seconds this device needs per byte of a ring round's chunk (send one, receive one,
    // add it): over its link against the coordinator's rank (measurePairExchange: the wire,
    // its CPU and the network stack together; exchange_over "link"), or where the coordinator
    // hosts none, on the device over loopback (measureExchange: its CPU's part; "loopback").
    // A ring round's hop lasts at least that long at its slower end (0: not measured).
    double exchange_seconds_per_byte = 0.0;
    // Over the link only: the device's CPU per byte of chunk sent and one received in it, over
    // the cores busy_watts is for — what a ring's byte each way keeps the device busy (its TCP
    // work, gloo's copies and the sum); the power model's ring takes it over the transfers'
    // figures (0: not measured; those then).
    double exchange_busy_seconds_per_byte = 0.0;
    enum class ExchangeOver { Unknown, Link, Loopback };
    ExchangeOver exchange_over = ExchangeOver::Unknown; // how it was timed
    QString exchange_link_error; // why not over the link, where the coordinator hosted a rank
    QString exchange_error;      // why it was not measured (then no such bound is known)
    // What profiling took on this device (from the start of its profile, after loading the
    // data, to its job_ready), and of it the link probe (its wait in line at the coordinator's
    // probe server included; asks for a turn that were refused are not).
    double profile_seconds = 0.0, link_probe_seconds = 0.0;

    /** Forward + backward seconds for a local batch of `batch` (0 for an empty part). */
    double stepSeconds(std::int64_t batch) const
    {
        return batch > 0 ? step_fixed_seconds + step_per_sample_seconds * double(batch) : 0.0;
    }
    bool powerKnown() const { return idle_watts >= 0.0 && busy_watts >= 0.0; }
};

/** The work the plan is for: what is left of the job once profiling is done. */
struct PlanWork
{
    std::int64_t train_samples = 0;
    std::int64_t test_samples = 0;
    int epochs = 1;
    std::int64_t batch = 64;          // the global batch
    std::int64_t gradient_floats = 0; // what a sync step allreduces (FlatState gradients)
    std::int64_t averaged_floats = 0; // what local SGD averages and async pulls
    std::int64_t buffer_floats = 0;   // batch-norm statistics (async pushes them)
    int local_steps = 8;              // local SGD
    // async: bytes per value pushed and pulled (the job's exchange): 2 for bfloat16 gradients
    // and weight deltas (batch-norm buffers stay 4), 4 for float32
    double async_value_bytes = 2.0;
};

/** One candidate: a subset of the devices, a mode, and what the model predicts for it. */
struct PlanCandidate
{
    std::vector<int> devices; // indices into the measurements, ascending
    QStringList names;        // the devices' names, in the same order
    TrainingMode mode = TrainingMode::Sync;
    std::vector<double> shares;         // of the global batch, as the trainer splits it
    double seconds = 0.0;               // to finish the work
    double watts = 0.0;                 // mean power of the candidate's devices while it trains
    double joules = 0.0;                // seconds x watts
    double edp = 0.0;                   // joules x seconds (J·s)
    double compute_seconds = 0.0;       // of it: the slowest device's computing
    double communication_seconds = 0.0; // of it: allreduce / pushes and pulls
    bool power_known = true;            // every device's idle and busy power was measured or
                                        // estimated
    QString refused; // why this candidate cannot run (a device over its memory); empty: it can
};

/** A device's measurement from its job_ready message (its "profile": compute, memory, power and the
 *  link the node measured to the coordinator's LinkProbeServer). The compute line goes through the
 * two measured batch sizes; noise that would give a negative slope or intercept falls back to the
 * larger batch's time per sample. */
DeviceMeasurement measurementFromReady(const QString &name, const QCborMap &ready);
/** What is left to train after profiling: the job's epochs over the ready node's data, and the
 *  model's sizes from its job_ready message. */
PlanWork workFromReady(const JobSpec &job, const QCborMap &ready);

/** The batch shares the trainer settles on for `devices` (in rank order) with a global batch of
 *  `batch`: proportional to each device's images/s at the part it trains (the fixed point of
 *  re-measuring every epoch), from their measured compute lines. Not yet capped by memory. */
std::vector<double> settledShares(const std::vector<const DeviceMeasurement *> &devices,
                                  std::int64_t batch);

/** Caps shares at `cap` (fractions of the batch), moving the excess to the uncapped ones by
 *  their shares (the coordinator's rule); where nobody has room the excess is dropped. */
void capShares(std::vector<double> &shares, const std::vector<double> &cap);

/** What the user asks the plan to minimise, and under which limits. */
struct PlanObjective
{
    enum class Kind { Time, Power, Energy, Edp, Mix };
    Kind kind = Kind::Time;
    // Mix: minimises the weighted sum of the figures, each divided by the best candidate's.
    double time_weight = 1.0, power_weight = 0.0, energy_weight = 0.0, edp_weight = 0.0;
    double max_watts = 0.0;        // > 0: candidates drawing more are out
    double deadline_seconds = 0.0; // > 0: candidates taking longer are out

    /** "time", "power", "energy", "edp" or "mix:time=1,energy=2" (the weights of a mix). */
    static std::optional<PlanObjective> parse(const QString &text, QString *error);
    QString name() const;
};

/**
 * The planner's model. For every subset of the devices and every mode it predicts the time to
 * finish the work, the mean power, the energy and the energy-delay product, from measurements
 * alone:
 *
 *  - the batch split the trainer uses (shares proportional to measured speed, re-measured each
 *    epoch: the fixed point of that rule at each device's own share), capped by memory;
 *  - sync: per step the slowest device's compute and update, plus gloo's ring allreduce of the
 *    gradients (2(n-1) rounds of 1/n of them, each round as slow as the ring's slowest hop:
 *    the lower of the sender's up- and the receiver's down-rate and half of both round trips,
 *    or the slower end's exchange for the chunk — its exchange_seconds_per_byte, measured over
 *    its link where it could be — if that is longer);
 *  - local SGD: the same compute every step, the allreduce of the model every local_steps;
 *  - async: each device computes its part of the data in its own local batches and pushes
 *    gradients up and pulls the model down through its own link; the epoch ends with the
 *    slowest;
 *  - per epoch the evaluation of the test set split by speed;
 *  - power per device: idle + (busy - idle) x the share of the time it computes; the
 *    candidate's power is its devices' sum (devices outside it are free for other work).
 */
class ClusterPlanner
{
public:
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
    const PlanWork &work() const { return m_work; }

    static constexpr int kMaxDevices = 12;

private:
    std::vector<DeviceMeasurement> m_devices;
    PlanWork m_work;
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

/** Measurements from each ready node (name, job_ready body), the work from the job, every
 *  candidate in `modes`, ranked by `objective`. */
ClusterPlanResult planCluster(const std::vector<std::pair<QString, QCborMap>> &ready,
                              const JobSpec &job, const PlanObjective &objective,
                              const std::vector<TrainingMode> &modes);

} // namespace edgetrain::net

Q_DECLARE_METATYPE(edgetrain::net::ClusterPlanResult)

#pragma once

#include "core/planobjective.h"

#include <cstdint>
#include <string>
#include <vector>

namespace edgetrain::core {

/**
 * What profiling measured on one device, as the planner's model reads it: forward + backward
 * time against the local batch (a line through two measured batch sizes), the optimizer's
 * update, evaluation, the largest local batch its memory takes, its power idle and busy, and
 * its link to the coordinator (measured with timed transfers, not configured).
 */
struct DeviceCost
{
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
    // Whether the link's transfers ran: a node whose exchange was timed over its link skips
    // them where the plan has no async; the rates and the two figures above are then 0, and
    // async cannot be predicted for the device in a group.
    bool link_rates_timed = true;
    // Wall seconds this device needs per byte of a ring round's chunk (send one, receive one,
    // add it): over its link against the coordinator's rank (the wire, its CPU and the network
    // stack together), or where the coordinator hosts none, on the device over loopback (its
    // CPU's part). A ring round's hop lasts at least that long at its slower end (0: not
    // measured).
    double exchange_seconds_per_byte = 0.0;
    // Over the link only: the device's CPU per byte of chunk sent and one received in it, over
    // the cores busy_watts is for — what a ring's byte each way keeps the device busy (its TCP
    // work, gloo's copies and the sum); the power model's ring takes it over the transfers'
    // figures (0: not measured; those then).
    double exchange_busy_seconds_per_byte = 0.0;

    /** Forward + backward seconds for a local batch of `batch` (0 for an empty part). */
    double stepSeconds(std::int64_t batch) const
    {
        return batch > 0 ? step_fixed_seconds + step_per_sample_seconds * double(batch) : 0.0;
    }
    bool powerKnown() const { return idle_watts >= 0.0 && busy_watts >= 0.0; }
};

/** A device as the planner sees it: its name (for the reasons it gives) and its costs. */
struct PlanDevice
{
    std::string name;
    DeviceCost cost;
    std::string link_error; // the link could not be measured: it trains alone or not at all
};

/** The work the plan is for: what is left of the job once profiling is done. */
struct PlanWork
{
    std::int64_t train_samples = 0;
    std::int64_t test_samples = 0;
    int epochs = 1;
    std::int64_t batch = 64;          // the global batch
    std::int64_t gradient_floats = 0; // what a sync step allreduces
    std::int64_t averaged_floats = 0; // what local SGD averages and async pulls
    std::int64_t buffer_floats = 0;   // batch-norm statistics (async pushes them)
    int local_steps = 8;              // local SGD
    // async: bytes per value pushed and pulled (the job's exchange): 2 for bfloat16 gradients
    // and weight deltas (batch-norm buffers stay 4), 4 for float32
    double async_value_bytes = 2.0;
};

/** How the devices of a candidate train together. */
enum class PlanMode { Sync, Async, LocalSgd };

/** What the model predicts for one candidate. */
struct CandidateFigures
{
    std::vector<double> shares;         // of the global batch, as the trainer splits it
    double seconds = 0.0;               // to finish the work
    double watts = 0.0;                 // mean power of the candidate's devices while it trains
    double joules = 0.0;                // seconds x watts
    double edp = 0.0;                   // joules x seconds (J·s)
    double compute_seconds = 0.0;       // of it: the slowest device's computing
    double communication_seconds = 0.0; // of it: allreduce / pushes and pulls
    bool power_known = true; // every device's idle and busy power was measured or estimated
};

/** One candidate: a subset of the devices, a mode, and what the model predicts for it. */
struct PlanCandidate : CandidateFigures
{
    std::vector<int> devices;       // indices into the planner's devices, ascending
    std::vector<std::string> names; // the devices' names, in the same order
    PlanMode mode = PlanMode::Sync;
    std::string refused; // why this candidate cannot run (a device over its memory); empty: it can
};

/** The batch shares the trainer settles on for `devices` (in rank order) with a global batch of
 *  `batch`: proportional to each device's images/s at the part it trains (the fixed point of
 *  re-measuring every epoch), from their measured compute lines. Not yet capped by memory. */
std::vector<double> settledShares(const std::vector<const DeviceCost *> &devices,
                                  std::int64_t batch);

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
 *
 * Pure: the same devices and work give the same figures. Throws core::Error from the
 * constructor for no devices, more than kMaxDevices, or work without a batch.
 */
class ClusterPlanner
{
public:
    ClusterPlanner(std::vector<PlanDevice> devices, PlanWork work);

    /** Every non-empty subset of the devices in every given mode (a single device once, as
     *  sync, where sync is among the modes: alone every mode is the same run). */
    std::vector<PlanCandidate> candidates(const std::vector<PlanMode> &modes) const;
    /** One candidate's prediction (`devices`: indices, in any order). */
    PlanCandidate predict(const std::vector<int> &devices, PlanMode mode) const;

    /** Indices of `candidates`, best first by the objective: those that can run and meet the
     *  limits, then the rest (refused, over a limit, or with unknown power for a power
     *  objective) in the same order; ties go to the faster. */
    static std::vector<std::size_t> rankOrder(const std::vector<PlanCandidate> &candidates,
                                              const PlanObjective &objective);
    /** The candidates in rankOrder. */
    static std::vector<PlanCandidate> rank(std::vector<PlanCandidate> candidates,
                                           const PlanObjective &objective);
    /** Why the candidate cannot be chosen under the objective; empty: it can. */
    static std::string unsuitable(const PlanCandidate &c, const PlanObjective &objective);

    /** Seconds of gloo's ring allreduce of `bytes` among `devices`. */
    double allreduceSeconds(const std::vector<int> &devices, double bytes) const;
    /** Shares of the global batch for `devices` (in their order), as the trainer settles them. */
    std::vector<double> shares(const std::vector<int> &devices) const;

    const std::vector<PlanDevice> &devices() const { return m_devices; }
    const PlanWork &work() const { return m_work; }

    static constexpr int kMaxDevices = 12;

private:
    /** Why `devices` (sorted) cannot train in `mode` at all; empty: they can. Fills `cap` with
     *  each device's largest share of the batch its memory takes. */
    std::string refusal(const std::vector<int> &devices, PlanMode mode,
                        std::vector<double> &cap) const;
    /** Fills the figures of `c`, whose devices can train. */
    void fillFigures(PlanCandidate &c) const;

    std::vector<PlanDevice> m_devices;
    PlanWork m_work;
};

} // namespace edgetrain::core

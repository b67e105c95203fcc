#pragma once

#include "core/json.h"

#include <QCborMap>
#include <QString>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain::net {

/** How replicas on several nodes combine their work. */
enum class TrainingMode { Sync, Async, LocalSgd };
QString modeName(TrainingMode mode);
std::optional<TrainingMode> parseMode(const QString &text);

/**
 * A training job as it travels to the nodes: data only (a ModelSpec, hyper-parameters, which
 * data to use), never code. The receiving node validates every field before it allocates
 * anything and refuses the job with the field's name otherwise.
 */
struct JobSpec
{
    static constexpr int kMaxStaleness = 64;
    static constexpr int kMaxLocalSteps = 10000;
    static constexpr int kMaxProfileSteps = 1000;

    QString id; // chosen by the coordinator, names the run in logs and reports
    TrainingMode mode = TrainingMode::Sync;
    core::Json model;       // a ModelSpec (strictly validated on arrival)
    std::uint64_t seed = 0; // weights, shuffling, dropout: the same on every node
    int epochs = 1;
    std::int64_t batch = 64; // the global batch: split across the nodes each step
    double lr = 0.05;
    double momentum = 0.9;
    double weight_decay = 0.0;
    bool nesterov = false;
    // sync and local-sgd: a moving average of the weights over the steps (core::WeightAverage),
    // 0 for none. Each node keeps one; the ranks average theirs at every epoch's end; the
    // epoch's validation, the best epoch's and the final weights are then the average's.
    double average_decay = 0.0;
    QString schedule = QStringLiteral("constant");
    int staleness = 4; // async: how far the fastest worker may run ahead of the slowest
    // async: how pushes and replies travel. "bf16": gradients up in bfloat16 with error
    // feedback, weights down as bfloat16 deltas against the server's mirror of the node's copy
    // (net::CompressedExchange; half the bytes, the rounding carried over). "float32": full
    // gradients up, full weights down (what a job from an older coordinator means).
    QString exchange = QStringLiteral("bf16");
    // async: a node sends its push and computes the next batch while the push travels and the
    // reply comes back (one push in flight; its gradients one version staler). Off by default:
    // on 3 local nodes it trained 10-20 % more images/s but ended 3-8 points lower after 3
    // epochs (LeNet-5), and on four emulated Pi 3Bs at 100 Mbit/s it was no faster. What it
    // could be for, a link whose round trip is long against a step, has not been measured.
    bool pipelined = false;
    int local_steps = 8; // local-sgd: steps between model averages
    int collective_timeout_ms = 10000;
    // Before it joins, each node times this many forward + backward passes of the job's model on
    // its own data at two local batch sizes (its speed, and the planner's compute line).
    int profile_steps = 3;
    // Where the coordinator's link probe listens (its address is the control connection's
    // peer); 0: no probe. Set by a coordinator that plans.
    int link_probe_port = 0;
    QString link_probe_token; // what the probe sends first (LinkProbeServer::token)
    // The probe server answers "is it my turn?" ('T': measureLinkIfFree); absent from older
    // coordinators' jobs, whose servers do not.
    bool link_probe_turns = false;
    // The coordinator hosts the other rank of a two-rank allreduce a profile times over the
    // node's real path (exchange_probe; measurePairExchange), during the node's link turn;
    // absent from older coordinators' jobs: the node times its exchange on itself.
    bool exchange_probe = false;
    // Whether the link probe's transfers run even where the exchange was timed over the link
    // (their rates predict async's pushes and pulls; for sync and local SGD the exchange over
    // the link bounds a ring round, and its CPU per byte stands for theirs). False from a
    // coordinator that plans no async: a lab Pi 3B's transfers took 0.67-0.70 s of its profile.
    // Absent from older coordinators' jobs: true.
    bool link_rates = true;
    /** What both ranks of the exchange probe wait for each other, at most: it runs in the node's
     *  link turn, and the nodes in line behind it wait 30 s before they give up. */
    int exchangeProbeTimeoutMs() const { return std::min(collective_timeout_ms, 8000); }
    std::int64_t memory_budget_bytes = -1; // per node, bytes; -1: the node's own limit only
    // Each node runs its model's first `tiled_stages` stages as a fused tile group on a
    // tile_rows x tile_cols grid (core::TiledStage) over its part of every batch; 0: untiled
    // (and what an older coordinator's job means).
    int tiled_stages = 0;
    int tile_rows = 1;
    int tile_cols = 1;
    // sync with tiled_stages: the nodes split the group's tiles of every image of each batch
    // (the paper's across-device method) instead of each tiling its own part of the batch.
    bool tiles_across = false;

    // The data: "fashion-mnist" (every node reads its own copy, from its --data-dir) or "shipped"
    // (the coordinator sends it first, in checksummed chunks, under these shipment ids).
    QString dataset = QStringLiteral("fashion-mnist");
    std::int64_t train_limit = 0;
    std::int64_t test_limit = 0;
    QString train_shipment, test_shipment;

    QCborMap toCbor() const;
    /** The job as the nodes get it: in async mode without the weight average (the parameter
     *  server keeps it; a node's own would be the wrong model to evaluate). */
    JobSpec forNodes() const;
    /** The id a job's body names, however the rest reads (a node busy with a job compares it
     *  before it reads the new one). */
    static QString idOf(const QCborMap &map);
    /** Validates; nothing with a message naming the field otherwise. */
    static std::optional<JobSpec> fromCbor(const QCborMap &map, QString *error);
};

/** One generation of the training group: who is rank what, and how each batch is split. */
struct GroupSpec
{
    int generation = 0;
    int rank = 0;
    int size = 1;
    std::vector<double> shares; // per rank, summing to 1: the part of each global batch
    QString prefix() const { return QStringLiteral("gen-%1").arg(generation); }

    bool operator==(const GroupSpec &other) const = default;
    QCborMap toCbor() const;
    static std::optional<GroupSpec> fromCbor(const QCborMap &map, QString *error);
};

} // namespace edgetrain::net

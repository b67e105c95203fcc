#pragma once

#include "net/protocol/messages/profilereport.h"

#include <QByteArray>
#include <QCborMap>
#include <QString>

#include <cstdint>
#include <optional>

namespace edgetrain::net {

/*
 * What a node's training worker sends its coordinator (through JobLink; the message types are
 * in protocol.h). Each body reads back with fromCbor(map, &error): a body that lacks a field
 * its type promises, or holds one of the wrong type, is refused with a sentence naming the
 * message and the field (FieldReader), and the reader decides what a refused body costs the
 * sender. Counts and figures that a diverged run can make NaN are read as they come.
 */

/** "job_ready": the worker loaded its data, built its model and profiled it; it waits for the
 *  coordinator's `start` (TrainingReply) with its group. */
struct JobReady
{
    double images_per_second = 0.0; // at a typical local batch (the first group's split)
    std::int64_t train_samples = 0;
    std::int64_t test_samples = 0;
    std::int64_t parameters = 0;
    std::int64_t gradient_floats = 0; // FlatState's sizes: what travels in an exchange
    std::int64_t averaged_floats = 0;
    std::int64_t buffer_floats = 0;
    /** async: it trains a lost node's rest of an epoch when asked (ReplyAction::More). */
    bool takes_more = true;
    /** It evaluates a part of the test set a lost node left (ReplyAction::Evaluate). */
    bool evaluates_more = true;
    ProfileReport profile;

    bool operator==(const JobReady &other) const = default;
    QCborMap toCbor() const;
    static std::optional<JobReady> fromCbor(const QCborMap &map, QString *error);
    /** The planner's reading, which takes a job_ready from any node, older ones and partial
     *  bodies included: never refused, a field that is absent or not of its type reads as its
     *  default (takes_more and evaluates_more as false, as fromCbor has them when absent; the
     *  profile as ProfileReport::fromCborLenient). A body fromCbor accepts reads as there. */
    static JobReady fromCborLenient(const QCborMap &map);
};

/** "epoch_done": the end of an epoch's training on this node; answered with a TrainingReply
 *  (evaluate a part of the test set, train more, regroup or stop). */
struct EpochDone
{
    int epoch = 0;
    // The epoch's sums: the whole cluster's (`global`, the collective modes) or this node's.
    double loss_sum = 0.0; // loss times samples
    double correct = 0.0;
    double seen = 0.0;    // samples
    double targets = 0.0; // what accuracy is over (samples; a detector's objects)
    bool global = false;
    double seconds = 0.0; // the epoch's wall time on this node
    double compute_images_per_second = 0.0;
    /** async: the fingerprint of the weights the node holds (CompressedExchange::fingerprint),
     *  for the parameter server to check against its mirror; empty otherwise. */
    QString held_fingerprint;

    bool operator==(const EpochDone &other) const = default;
    QCborMap toCbor() const;
    static std::optional<EpochDone> fromCbor(const QCborMap &map, QString *error);
};

/** "epoch_eval": this node's part of the test set, evaluated; answered with a TrainingReply
 *  (continue, finish, stop, or evaluate another part). */
struct EpochEval
{
    int epoch = 0;
    double loss_sum = 0.0; // loss times count
    std::int64_t correct = 0;
    std::int64_t count = 0;

    bool operator==(const EpochEval &other) const = default;
    QCborMap toCbor() const;
    static std::optional<EpochEval> fromCbor(const QCborMap &map, QString *error);
};

/** "ps_push": async's gradients for the parameter server, computed on weights of `version`;
 *  answered with a WeightsReply ("ps_pull" has an empty body and the same answer). */
struct GradientPush
{
    std::int64_t version = 0;
    double lr = 0.0;        // the rate the node's schedule gives this step
    std::int64_t count = 0; // samples the gradients are over
    /** bfloat16 gradients with the buffers in float32 (the job's exchange "bf16"), else the
     *  gradients and buffers in float32 together (`gradient`). */
    bool compressed = false;
    QByteArray gradient_bf16; // compressed: CompressedExchange's encoding
    QByteArray buffers;       // compressed: float32
    QByteArray gradient;      // not compressed: float32 gradients then buffers

    bool operator==(const GradientPush &other) const = default;
    QCborMap toCbor() const;
    static std::optional<GradientPush> fromCbor(const QCborMap &map, QString *error);
};

/** "exchange_probe": host the other rank of a two-rank allreduce of `floats` floats under the
 *  store keys `prefix`; answered at once with an ExchangeProbeReply. */
struct ExchangeProbeRequest
{
    QString prefix;
    std::int64_t floats = 0;

    bool operator==(const ExchangeProbeRequest &other) const = default;
    QCborMap toCbor() const;
    static std::optional<ExchangeProbeRequest> fromCbor(const QCborMap &map, QString *error);
};

/** "weights" (the model at the end of a run) and "best_weights" (the best epoch's, when the
 *  coordinator asks): one chunk of the model's float32 bytes, chunks in order. */
struct WeightsChunk
{
    static constexpr qsizetype kMaxBytes = qsizetype(4) << 20;

    int index = 0;
    int total = 1;
    std::int64_t epoch = 0; // best_weights: the epoch they are of; weights: 0
    QByteArray data;

    bool operator==(const WeightsChunk &other) const = default;
    QCborMap toCbor() const;
    static std::optional<WeightsChunk> fromCbor(const QCborMap &map, QString *error);
};

/** "collective_failed": a collective of the group failed at `step` (a peer is gone); answered
 *  with a TrainingReply (regroup, or stop). */
struct CollectiveFailed
{
    std::int64_t step = 0;
    QString message;

    bool operator==(const CollectiveFailed &other) const = default;
    QCborMap toCbor() const;
    static std::optional<CollectiveFailed> fromCbor(const QCborMap &map, QString *error);
};

/** "job_done": the job ended (all its epochs, or stopped). */
struct JobDone
{
    bool cancelled = false;
    std::int64_t steps = 0;
    int rank = 0;
    QString fingerprint; // of the final weights (ranks of a collective run hold the same)

    bool operator==(const JobDone &other) const = default;
    QCborMap toCbor() const;
    static std::optional<JobDone> fromCbor(const QCborMap &map, QString *error);
};

/** Why something a node was given did not happen: "job_failed" (the worker), "job_refused"
 *  and "data_refused" (the node server), and "error" (a message the node does not know). */
struct Failure
{
    QString message;

    bool operator==(const Failure &other) const = default;
    QCborMap toCbor() const;
    /** Never refused: whatever the body holds, the thing failed (a message that is not text
     *  reads as empty). */
    static Failure fromCbor(const QCborMap &map);
};

/** "job_accepted" and "data_received": the node took the job or the shipment `id`. */
struct Receipt
{
    QString id;

    bool operator==(const Receipt &other) const = default;
    QCborMap toCbor() const;
    static Receipt fromCbor(const QCborMap &map);
};

} // namespace edgetrain::net

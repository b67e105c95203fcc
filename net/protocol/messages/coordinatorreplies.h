#pragma once

#include "net/protocol/messages/jobspec.h"

#include <QByteArray>
#include <QCborMap>
#include <QString>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace edgetrain::net {

/** What the coordinator tells a worker to do next, in answer to its job_ready, epoch_done,
 *  epoch_eval and collective_failed (the replies' "action"). */
enum class ReplyAction {
    Start,    // the group is formed: train
    Continue, // the next epoch
    /** Validate this epoch's model on a part of the test set, then report it (epoch_eval); also
     *  in answer to an epoch_eval: a part a lost node left (JobReady::evaluates_more). */
    Evaluate,
    Regroup, // a member was lost: join the new group
    Stop,    // the job ends
    /** The job ends after this epoch as if it were the last (the coordinator's patience ran
     *  out): not a cancellation, the final weights are sent as at the end. */
    Finish,
    /** async, in answer to an epoch's end: train these ranges of the epoch's sample order too (a
     *  node lost mid-epoch left them), then end the epoch again (JobReady::takes_more). */
    More,
};
QString actionName(ReplyAction action);
std::optional<ReplyAction> parseAction(const QString &text);

/**
 * The coordinator's answer to a worker's step in the job (a "reply" naming the request). Which
 * fields an action carries: Start a group and the epoch to begin at; Regroup a group; Evaluate
 * a part of the test set (and, async, the parameter server's weights to evaluate); Continue
 * perhaps the next epoch's group and a request for this epoch's weights (a new best); More the
 * ranges to train.
 */
struct TrainingReply
{
    ReplyAction action = ReplyAction::Continue;
    std::optional<GroupSpec> group;
    std::optional<int> epoch; // Start: the epoch the node begins at (async)
    std::optional<GroupSpec> next_group;
    std::optional<std::int64_t> send_weights; // the epoch whose weights to send (best_weights)
    /** The test samples [first, second) to evaluate. */
    std::optional<std::pair<std::int64_t, std::int64_t>> test_part;
    std::optional<QByteArray> weights; // float32, FlatState's averaged layout
    /** (first, count) ranges of the epoch's sample order. */
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;

    bool operator==(const TrainingReply &other) const = default;
    QCborMap toCbor() const;
    /** Refuses an unknown action, a malformed group or a field of the wrong type. */
    static std::optional<TrainingReply> fromCbor(const QCborMap &map, QString *error);
};

/** The parameter server's answer to "ps_pull" and "ps_push": its weights as of `version`, or
 *  stop (the job ended, or the node is out of it). */
struct WeightsReply
{
    bool stop = false;
    std::int64_t version = 0;
    /** `weights` holds a bfloat16 delta against the node's copy as the server mirrors it
     *  (CompressedExchange); else the float32 weights whole. */
    bool delta = false;
    QByteArray weights;

    bool operator==(const WeightsReply &other) const = default;
    QCborMap toCbor() const;
    static std::optional<WeightsReply> fromCbor(const QCborMap &map, QString *error);
};

/** The answer to "exchange_probe", at once: the coordinator's rank is queued (no error), or why
 *  it is not. */
struct ExchangeProbeReply
{
    QString error;

    bool operator==(const ExchangeProbeReply &other) const = default;
    QCborMap toCbor() const;
    static ExchangeProbeReply fromCbor(const QCborMap &map);
};

} // namespace edgetrain::net

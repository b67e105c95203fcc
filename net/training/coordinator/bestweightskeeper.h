#pragma once

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/training/coordinator/member.h"

#include <QByteArray>

#include <cstdint>
#include <vector>

namespace edgetrain::net {

/**
 * Keep-best and patience: remembers the epoch with the lowest validation loss and gets its model
 * (the parameter server's, at once, in async mode; else one node that holds the synchronised
 * model sends it in chunks, asked in its answer to the epoch's end), so that the run's result
 * can be that epoch's weights rather than the last's; with a patience, says when that many epochs
 * have gone by without a new lowest loss (early stopping). Off by default: nothing is kept.
 */
class BestWeightsKeeper
{
public:
    void setKeep(bool keep) { m_keep = keep; }
    /** Epochs without a lower validation loss after which the run ends; 0: never. */
    void setPatience(int epochs) { m_patience = epochs; }
    bool keeps() const { return m_keep; }
    int patience() const { return m_patience; }

    /** Whether an epoch that evaluated `testCount` samples to a mean loss of `testLoss` is a
     *  new best (keep-best on, something evaluated, the lowest loss so far). */
    bool improves(std::int64_t testCount, double testLoss) const;
    /** Epoch `epoch` (mean validation loss `testLoss`) is the kept one now: its weights are
     *  `held` (async: the parameter server's), or, when empty, a node must send them (ask it with
     *  askForWeights() in its answer). */
    void keep(int epoch, double testLoss, const QByteArray &held = {});
    /** Asks the node this answer goes to for the kept epoch's model. */
    void askForWeights(TrainingReply &answer) const;
    /** A best_weights chunk; a late chunk of an earlier best is dropped. */
    void received(const WeightsChunk &chunk);
    /** Whether the patience ran out after `epoch` (keep-best and a patience set). */
    bool patienceRanOut(int epoch) const;

    /** The epoch kept (0: none). */
    int bestEpoch() const { return m_bestEpoch; }
    double bestLoss() const { return m_bestLoss; }
    /** Puts the kept model in `weights` when it came whole and has their size: returns its
     *  epoch, else 0 and `weights` as they were (the last epoch's). */
    int apply(std::vector<float> &weights) const;

private:
    bool m_keep = false;
    int m_patience = 0;
    double m_bestLoss = 0.0;
    int m_bestEpoch = 0; // the best epoch so far (0: none), whose weights were asked for
    WeightChunks m_best; // that epoch's weights, as they arrive in chunks
};

} // namespace edgetrain::net

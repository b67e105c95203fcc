#pragma once

#include "net/training/worker/collectivemode.h"

namespace edgetrain::net::worker {

/**
 * sync: every global batch is split across the ranks by their shares; the gradients, each
 * weighted by its part of the batch, are summed with one ring allreduce (the epoch's sums and
 * the stop vote behind them: EpochTally's trailer), so the step equals one node's step on the
 * whole batch (batch-norm aside).
 */
class SyncMode : public CollectiveMode
{
public:
    using CollectiveMode::CollectiveMode;

protected:
    bool step(std::int64_t b) override;

private:
    /** Batch-norm statistics were computed on each rank's part; average them. */
    void averageBuffers();
};

} // namespace edgetrain::net::worker

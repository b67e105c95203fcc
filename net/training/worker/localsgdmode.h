#pragma once

#include "net/training/worker/collectivemode.h"

namespace edgetrain::net::worker {

/**
 * local-sgd: the same split as sync, no communication for local_steps steps, then the models
 * are averaged (weighted by the ranks' shares) with one allreduce, the epoch's sums since the
 * last average and the stop vote behind them (EpochTally's trailer). A regroup goes back to
 * the state of the last average (GroupSession's snapshot).
 */
class LocalSgdMode : public CollectiveMode
{
public:
    using CollectiveMode::CollectiveMode;

protected:
    bool step(std::int64_t b) override;
    void stepDone() override;

private:
    bool m_averaged = false; // the last step ended with an average
};

} // namespace edgetrain::net::worker

#pragma once

#include "net/training/worker/epochtally.h"

#include <cstdint>
#include <vector>

namespace edgetrain::net::worker {

struct WorkerState;

/** local-sgd: the state as of the last average, which a regroup goes back to (the local steps
 *  since then exist on one node only; sync mode's state is always synchronised). */
class LocalSgdSnapshot
{
public:
    /** Copies the model with its optimizer state, the position and the epoch's global sums. */
    void take(const WorkerState &state);
    /** Puts the last snapshot back, this node's unshared sums cleared; nothing if none. */
    void restore(WorkerState &state) const;

private:
    std::vector<float> m_full;
    std::int64_t m_step = 0, m_epochsDone = 0;
    EpochTally m_tally;
};

} // namespace edgetrain::net::worker

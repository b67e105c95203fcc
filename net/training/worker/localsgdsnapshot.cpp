#include "net/training/worker/localsgdsnapshot.h"

#include "net/training/worker/workerstate.h"

namespace edgetrain::net::worker {

void LocalSgdSnapshot::take(const WorkerState &state)
{
    m_full.resize(state.loaded.flat->fullSize());
    state.loaded.flat->copyFull(m_full.data());
    m_step = state.step;
    m_epochsDone = state.epochsDone;
    m_tally = state.tally;
}

void LocalSgdSnapshot::restore(WorkerState &state) const
{
    if (m_full.empty())
        return;
    state.loaded.flat->setFull(m_full.data());
    state.step = m_step;
    state.epochsDone = m_epochsDone;
    state.tally = m_tally;
    state.pending = EpochTally{};
}

} // namespace edgetrain::net::worker

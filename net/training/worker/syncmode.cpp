#include "net/training/worker/syncmode.h"

#include "net/training/worker/groupsession.h"
#include "net/training/worker/tileteamstep.h"
#include "net/training/worker/workerstate.h"

#include <chrono>

namespace edgetrain::net::worker {

bool SyncMode::step(std::int64_t b)
{
    WorkerState &s = m_state;
    core::FlatState &flat = *s.loaded.flat;
    const auto [total, offset, mine] = part(b);
    const std::size_t g = flat.gradientSize();
    s.buffer.assign(g + EpochTally::kTrailerFloats, 0.0f);
    EpochTally own;
    const float weight = float(double(mine) / double(total));
    if (s.job.tiles_across) {
        // The tile group's gradients are this rank's tiles' share of the whole batch's: only
        // the rest's, of this rank's part, are weighted (and none without a part).
        const auto start = std::chrono::steady_clock::now();
        const core::StepResult r = tileTeamStep(s, m_session.collectives(), s.order->indices(b),
                                                total, offset, mine, weight);
        s.computeSeconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        s.computed += double(mine);
        flat.copyGradients(s.buffer.data());
        const std::size_t group = tileGroupGradientFloats(*s.loaded.model);
        for (std::size_t i = group; i < g; ++i)
            s.buffer[i] = mine > 0 ? s.buffer[i] * weight : 0.0f;
        if (mine > 0)
            own = EpochTally::of(r, mine);
    } else if (mine > 0) {
        const core::StepResult r = s.compute(s.order->indices(b) + offset, mine);
        flat.copyGradients(s.buffer.data());
        for (std::size_t i = 0; i < g; ++i)
            s.buffer[i] *= weight;
        own = EpochTally::of(r, mine);
    }
    s.link.throwIfClosed(); // abandoned: leave the group, never vote it into stopping
    own.packTrailer(s.buffer.data() + g, s.link.stopRequested());
    m_session.collectives().allreduceSum(s.buffer.data(), s.buffer.size());
    flat.setGradients(s.buffer.data());
    s.loaded.optimizer->step(s.rate());
    if (s.loaded.average)
        s.loaded.average->update(*s.loaded.model);
    const EpochTally::Trailer group = EpochTally::unpackTrailer(s.buffer.data() + g);
    s.tally += group.tally;
    s.report(group.tally.meanLoss(), group.tally.accuracy());
    if (b + 1 == s.batches)
        averageBuffers();
    return group.stop;
}

void SyncMode::averageBuffers()
{
    core::FlatState &flat = *m_state.loaded.flat;
    const std::size_t n = flat.bufferSize();
    if (n == 0 || m_session.group().size == 1)
        return;
    m_state.buffer.assign(n, 0.0f);
    flat.copyBuffers(m_state.buffer.data());
    weightByShare(n);
    m_session.collectives().allreduceSum(m_state.buffer.data(), n);
    flat.setBuffers(m_state.buffer.data());
}

} // namespace edgetrain::net::worker

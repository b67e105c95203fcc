#include "net/training/worker/localsgdmode.h"

#include "net/training/worker/groupsession.h"
#include "net/training/worker/workerstate.h"

namespace edgetrain::net::worker {

bool LocalSgdMode::step(std::int64_t b)
{
    WorkerState &s = m_state;
    core::FlatState &flat = *s.loaded.flat;
    const auto [total, offset, mine] = part(b);
    if (mine > 0) {
        const core::StepResult r = s.compute(s.order->indices(b) + offset, mine);
        s.loaded.optimizer->step(s.rate());
        if (s.loaded.average)
            s.loaded.average->update(*s.loaded.model);
        s.pending += EpochTally::of(r, mine);
        s.report(r.loss, double(r.correct) / double(std::max<std::int64_t>(r.count, 1)));
    }
    const bool lastOfEpoch = b + 1 == s.batches;
    m_averaged = false;
    if ((s.step + 1) % s.job.local_steps != 0 && !lastOfEpoch)
        return false;
    const std::size_t n = flat.averagedSize();
    s.buffer.assign(n + EpochTally::kTrailerFloats, 0.0f);
    flat.copyAveraged(s.buffer.data());
    weightByShare(n);
    s.link.throwIfClosed(); // abandoned: leave the group, never vote it into stopping
    s.pending.packTrailer(s.buffer.data() + n, s.link.stopRequested());
    m_session.collectives().allreduceSum(s.buffer.data(), s.buffer.size());
    flat.setAveraged(s.buffer.data());
    const EpochTally::Trailer group = EpochTally::unpackTrailer(s.buffer.data() + n);
    s.tally += group.tally;
    s.pending = EpochTally{};
    m_averaged = true;
    return group.stop;
}

void LocalSgdMode::stepDone()
{
    if (m_averaged)
        m_session.markSynchronised();
}

} // namespace edgetrain::net::worker

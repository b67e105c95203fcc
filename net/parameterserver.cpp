#include "parameterserver.h"

#include "core/flatstate.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace edgetrain::net {

ParameterServer::ParameterServer(const core::ModelSpec &spec, std::uint64_t seed,
                                 const core::SgdOptions &sgd, int staleness,
                                 std::int64_t globalBatch)
    : m_model(std::make_unique<core::Model>(spec, seed)),
      m_optimizer(std::make_unique<core::Sgd>(*m_model, sgd)),
      m_flat(std::make_unique<core::FlatState>(*m_model, m_optimizer.get())),
      m_staleness(staleness), m_globalBatch(std::max<std::int64_t>(globalBatch, 1)),
      m_momentum(sgd.momentum)
{}

ParameterServer::~ParameterServer() = default;

std::vector<float> ParameterServer::weights() const
{
    std::vector<float> w(m_flat->averagedSize());
    m_flat->copyAveraged(w.data());
    return w;
}

std::size_t ParameterServer::pushSize() const
{
    return m_flat->gradientSize() + m_flat->bufferSize();
}

void ParameterServer::addWorker(int id)
{
    // A newcomer starts level with the slowest, so it neither waits nor holds anyone back.
    std::int64_t slowest = std::numeric_limits<std::int64_t>::max();
    for (const auto &[other, w] : m_workers)
        if (w.running)
            slowest = std::min(slowest, w.clock);
    m_workers[id] = Worker{slowest == std::numeric_limits<std::int64_t>::max() ? 0 : slowest, true};
}

void ParameterServer::removeWorker(int id)
{
    m_workers.erase(id);
}

void ParameterServer::setRunning(int id, bool running)
{
    const auto it = m_workers.find(id);
    if (it != m_workers.end())
        it->second.running = running;
}

void ParameterServer::resetClocks()
{
    for (auto &[id, w] : m_workers)
        w = Worker{0, true};
}

ParameterServer::Push ParameterServer::push(int id, std::uint64_t basedOn, const float *data,
                                            std::size_t count, double lr, std::int64_t samples)
{
    Push p;
    const auto it = m_workers.find(id);
    if (it == m_workers.end() || count != pushSize() || basedOn > m_version || samples < 1)
        return p;
    p.staleness = int(std::min<std::uint64_t>(m_version - basedOn, 1u << 30));
    const double n =
        std::max(1.0, double(std::count_if(m_workers.begin(), m_workers.end(),
                                           [](const auto &w) { return w.second.running; })));
    // A round of n pushes stands for one synchronous step: each push is a step on its share of
    // the global batch at the job's rate times that share, so a round's steady-state
    // displacement (rate / (1 - momentum) per push) equals one synchronous step's. The momentum
    // is the job's per push, not spread over a round: asynchrony adds momentum of its own (stale
    // gradients keep pushing the way the model went), and a momentum that remembered ~n times
    // longer collapsed 4-node LeNet-5 runs to chance (test accuracy 0.105 and 0.553 in CI, 0.41
    // in 1 of 16 runs here; with this, 8 of 8 runs 0.73-0.80).
    m_optimizer->setMomentum(m_momentum);
    p.lr = lr * double(samples) / double(m_globalBatch);
    if (double(p.staleness) >= n)
        p.lr *= n / double(p.staleness + 1);
    m_flat->setGradients(data);
    m_flat->setBuffers(data + m_flat->gradientSize());
    m_optimizer->step(p.lr);
    ++m_version;
    ++m_pushes;
    ++it->second.clock;
    m_maxStaleness = std::max(m_maxStaleness, p.staleness);
    p.applied = true;
    return p;
}

bool ParameterServer::mayProceed(int id) const
{
    const auto it = m_workers.find(id);
    if (it == m_workers.end())
        return true;
    std::int64_t slowest = std::numeric_limits<std::int64_t>::max();
    for (const auto &[other, w] : m_workers)
        if (w.running)
            slowest = std::min(slowest, w.clock);
    return !it->second.running || slowest == std::numeric_limits<std::int64_t>::max() ||
           it->second.clock <= slowest + m_staleness;
}

} // namespace edgetrain::net

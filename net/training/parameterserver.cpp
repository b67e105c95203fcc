#include "net/training/parameterserver.h"

#include "core/flatstate.h"
#include "net/training/compressedexchange.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace edgetrain::net {

bool readPush(const GradientPush &push, std::size_t gradientFloats, std::size_t bufferFloats,
              std::vector<float> &out)
{
    out.resize(gradientFloats + bufferFloats);
    if (push.compressed) {
        if (std::size_t(push.buffers.size()) != bufferFloats * sizeof(float) ||
            !CompressedExchange::decode(push.gradient_bf16, out.data(), gradientFloats))
            return false;
        if (bufferFloats > 0)
            std::memcpy(out.data() + gradientFloats, push.buffers.constData(),
                        std::size_t(push.buffers.size()));
        return true;
    }
    if (std::size_t(push.gradient.size()) != out.size() * sizeof(float))
        return false;
    if (!out.empty())
        std::memcpy(out.data(), push.gradient.constData(), std::size_t(push.gradient.size()));
    return true;
}

bool readPush(const QCborMap &body, std::size_t gradientFloats, std::size_t bufferFloats,
              std::vector<float> &out)
{
    QString error;
    const auto push = GradientPush::fromCbor(body, &error);
    return push && readPush(*push, gradientFloats, bufferFloats, out);
}

ParameterServer::ParameterServer(const core::ModelSpec &spec, std::uint64_t seed,
                                 const core::SgdOptions &sgd, int staleness,
                                 std::int64_t globalBatch, double averageDecay)
    : m_model(std::make_unique<core::Model>(spec, seed)),
      m_optimizer(std::make_unique<core::Sgd>(*m_model, sgd)),
      m_flat(std::make_unique<core::FlatState>(*m_model, m_optimizer.get())),
      m_staleness(staleness), m_globalBatch(std::max<std::int64_t>(globalBatch, 1)),
      m_momentum(sgd.momentum)
{
    if (averageDecay > 0.0)
        m_average.emplace(averageDecay);
}

ParameterServer::~ParameterServer() = default;

std::vector<float> ParameterServer::weights() const
{
    std::vector<float> w(m_flat->averagedSize());
    m_flat->copyAveraged(w.data());
    return w;
}

std::vector<float> ParameterServer::resultWeights()
{
    if (!m_average || m_average->updates() == 0)
        return weights();
    m_average->swap(*m_model);
    std::vector<float> w = weights();
    m_average->swap(*m_model);
    return w;
}

std::size_t ParameterServer::pushSize() const
{
    return m_flat->gradientSize() + m_flat->bufferSize();
}

std::size_t ParameterServer::gradientSize() const
{
    return m_flat->gradientSize();
}

std::vector<float> ParameterServer::pull(int id)
{
    std::vector<float> w = weights();
    const auto it = m_workers.find(id);
    if (it != m_workers.end())
        it->second.mirror = w;
    return w;
}

QByteArray ParameterServer::delta(int id)
{
    const auto it = m_workers.find(id);
    if (it == m_workers.end() || it->second.mirror.size() != m_flat->averagedSize())
        return {};
    std::vector<float> &mirror = it->second.mirror;
    std::vector<float> d = weights();
    for (std::size_t i = 0; i < d.size(); ++i)
        d[i] -= mirror[i];
    QByteArray bytes = CompressedExchange::encode(d.data(), d.size());
    CompressedExchange::addDecoded(bytes, mirror.data(), mirror.size());
    return bytes;
}

QString ParameterServer::mirrorFingerprint(int id) const
{
    const auto it = m_workers.find(id);
    if (it == m_workers.end() || it->second.mirror.empty())
        return {};
    return CompressedExchange::fingerprint(it->second.mirror.data(), it->second.mirror.size());
}

void ParameterServer::addWorker(int id)
{
    // A newcomer starts level with the slowest, so it neither waits nor holds anyone back.
    std::int64_t slowest = std::numeric_limits<std::int64_t>::max();
    for (const auto &[other, w] : m_workers)
        if (w.running)
            slowest = std::min(slowest, w.clock);
    Worker w;
    w.clock = slowest == std::numeric_limits<std::int64_t>::max() ? 0 : slowest;
    m_workers[id] = std::move(w);
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
    for (auto &[id, w] : m_workers) {
        w.clock = 0;
        w.running = true;
    }
}

ParameterServer::Push ParameterServer::push(int id, std::uint64_t basedOn, const float *data,
                                            std::size_t count, double lr, std::int64_t samples)
{
    Push p;
    const auto it = m_workers.find(id);
    if (it == m_workers.end() || count != pushSize() || basedOn > m_version || samples < 1 ||
        samples > m_globalBatch + 1 || !std::isfinite(lr) || lr < 0.0 || lr > m_maxRate ||
        !std::all_of(data, data + count, [](float v) { return std::isfinite(v); }))
        return p;
    p.staleness = int(std::min<std::uint64_t>(m_version - basedOn, 1u << 30));
    // Each push is a step on its share of the global batch at the job's rate times that share,
    // with the job's momentum per push (a momentum spread over a round, ~n times longer,
    // collapsed 4-node LeNet-5 runs: asynchrony adds momentum of its own), divided by the push's
    // staleness (Zhang et al., "Staleness-aware Async-SGD", 2016): a gradient computed on
    // weights tau pushes old moves the model 1/tau as far. Without that division, 4-node LeNet-5
    // runs (b64, lr 0.05, 3 epochs) ended at test accuracy 0.64-0.82, collapsed to chance in CI
    // and in 3 of 8 runs at lr 0.1; with it 0.69-0.83 with train loss 0.51-0.58, and 0 of 8 at
    // lr 0.1 (0.70-0.81, sync 0.73), on 6 nodes 0.74-0.78 every run.
    m_optimizer->setMomentum(m_momentum);
    p.lr = lr * double(samples) / double(m_globalBatch) / double(std::max(1, p.staleness));
    m_flat->setGradients(data);
    m_flat->setBuffers(data + m_flat->gradientSize());
    m_optimizer->step(p.lr);
    if (m_average) {
        m_samplesSinceAverage += samples;
        if (m_samplesSinceAverage >= m_globalBatch) { // a synchronous step's worth of samples
            m_samplesSinceAverage -= m_globalBatch;
            m_average->update(*m_model);
        }
    }
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

#include "net/training/coordinator/bestweightskeeper.h"

#include <cstring>

namespace edgetrain::net {

bool BestWeightsKeeper::improves(std::int64_t testCount, double testLoss) const
{
    return m_keep && testCount > 0 && (m_bestEpoch == 0 || testLoss < m_bestLoss);
}

void BestWeightsKeeper::keep(int epoch, double testLoss, const QByteArray &held)
{
    m_bestLoss = testLoss;
    m_bestEpoch = epoch;
    m_best.bytes = held;
    m_best.whole = !held.isEmpty();
}

void BestWeightsKeeper::askForWeights(TrainingReply &answer) const
{
    answer.send_weights = m_bestEpoch;
}

void BestWeightsKeeper::received(const WeightsChunk &chunk)
{
    if (chunk.epoch != m_bestEpoch)
        return;
    m_best.add(chunk);
}

bool BestWeightsKeeper::patienceRanOut(int epoch) const
{
    return m_keep && m_patience > 0 && m_bestEpoch > 0 && epoch - m_bestEpoch >= m_patience;
}

int BestWeightsKeeper::apply(std::vector<float> &weights) const
{
    if (!m_keep || !m_best.whole || m_bestEpoch <= 0 || weights.empty() ||
        m_best.bytes.size() != qsizetype(weights.size() * sizeof(float)))
        return 0;
    std::memcpy(weights.data(), m_best.bytes.constData(), std::size_t(m_best.bytes.size()));
    return m_bestEpoch;
}

} // namespace edgetrain::net

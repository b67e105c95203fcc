#include "memoryaccountant.h"

namespace edgetrain::core {

namespace {
void raiseTo(std::atomic<std::int64_t> &peak, std::int64_t value)
{
    std::int64_t seen = peak.load(std::memory_order_relaxed);
    while (value > seen && !peak.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
    }
}
} // namespace

std::string_view memoryCategoryName(MemoryCategory category)
{
    switch (category) {
    case MemoryCategory::Weights:
        return "weights";
    case MemoryCategory::Gradients:
        return "gradients";
    case MemoryCategory::OptimizerState:
        return "optimizer";
    case MemoryCategory::Activations:
        return "activations";
    case MemoryCategory::Workspace:
        return "workspace";
    case MemoryCategory::Recompute:
        return "recompute";
    }
    return "unknown";
}

MemoryAccountant &MemoryAccountant::global()
{
    static MemoryAccountant accountant;
    return accountant;
}

namespace Internal {
extern thread_local MemoryAccountant *t_simulationAccountant;
}

MemoryAccountant &MemoryAccountant::current()
{
    return Internal::t_simulationAccountant ? *Internal::t_simulationAccountant : global();
}

void MemoryAccountant::allocated(MemoryCategory category, std::int64_t bytes)
{
    const auto i = static_cast<int>(category);
    raiseTo(m_peak[i], m_current[i].fetch_add(bytes, std::memory_order_relaxed) + bytes);
    raiseTo(m_peakTotal, m_total.fetch_add(bytes, std::memory_order_relaxed) + bytes);
}

void MemoryAccountant::released(MemoryCategory category, std::int64_t bytes)
{
    m_current[static_cast<int>(category)].fetch_sub(bytes, std::memory_order_relaxed);
    m_total.fetch_sub(bytes, std::memory_order_relaxed);
}

MemorySnapshot MemoryAccountant::snapshot() const
{
    MemorySnapshot s;
    for (int i = 0; i < kMemoryCategoryCount; ++i) {
        s.current_bytes[i] = m_current[i].load(std::memory_order_relaxed);
        s.peak_bytes[i] = m_peak[i].load(std::memory_order_relaxed);
    }
    s.current_total_bytes = m_total.load(std::memory_order_relaxed);
    s.peak_total_bytes = m_peakTotal.load(std::memory_order_relaxed);
    return s;
}

std::int64_t MemoryAccountant::currentBytes(MemoryCategory category) const
{
    return m_current[static_cast<int>(category)].load(std::memory_order_relaxed);
}

std::int64_t MemoryAccountant::peakBytes(MemoryCategory category) const
{
    return m_peak[static_cast<int>(category)].load(std::memory_order_relaxed);
}

void MemoryAccountant::resetPeaks()
{
    for (int i = 0; i < kMemoryCategoryCount; ++i)
        m_peak[i].store(m_current[i].load(std::memory_order_relaxed), std::memory_order_relaxed);
    m_peakTotal.store(m_total.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

} // namespace edgetrain::core

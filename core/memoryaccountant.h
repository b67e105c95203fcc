#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace edgetrain::core {

/** What a buffer holds; peaks are tracked per category and in total. */
enum class MemoryCategory : int {
    Weights,
    Gradients,
    OptimizerState,
    Activations, // stored activations, activation gradients, outputs of first forwards
    Workspace,
    Recompute, // activations made by re-running a stage for checkpointing
};
inline constexpr int kMemoryCategoryCount = 6;

std::string_view memoryCategoryName(MemoryCategory category); // "weights", "gradients", ...

/** A copy of the counters at one moment (bytes). */
struct MemorySnapshot
{
    std::array<std::int64_t, kMemoryCategoryCount> current_bytes{};
    std::array<std::int64_t, kMemoryCategoryCount> peak_bytes{}; // per category, each its own max
    std::int64_t current_total_bytes = 0;
    std::int64_t peak_total_bytes = 0; // max of the sum: what the process really needed at once
};

/**
 * Counts every byte the engine allocates for tensors, by category, so that peak memory is
 * measured rather than guessed. Thread-safe (atomics). Tensors report to the accountant they
 * were created with; global() is the default one.
 */
class MemoryAccountant
{
public:
    static MemoryAccountant &global();
    /** The accountant new tensors on this thread report to: a MemorySimulation's, or global(). */
    static MemoryAccountant &current();

    void allocated(MemoryCategory category, std::int64_t bytes);
    void released(MemoryCategory category, std::int64_t bytes);

    MemorySnapshot snapshot() const;
    std::int64_t currentBytes(MemoryCategory category) const;
    std::int64_t peakBytes(MemoryCategory category) const;
    std::int64_t currentTotalBytes() const { return m_total.load(std::memory_order_relaxed); }
    std::int64_t peakTotalBytes() const { return m_peakTotal.load(std::memory_order_relaxed); }

    /** Starts a new measurement window: every peak becomes the current value. */
    void resetPeaks();

private:
    std::array<std::atomic<std::int64_t>, kMemoryCategoryCount> m_current{};
    std::array<std::atomic<std::int64_t>, kMemoryCategoryCount> m_peak{};
    std::atomic<std::int64_t> m_total{0};
    std::atomic<std::int64_t> m_peakTotal{0};
};

} // namespace edgetrain::core

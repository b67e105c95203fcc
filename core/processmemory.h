#pragma once

#include "memoryplanner.h"
#include "model.h"

#include <cstdint>

namespace edgetrain::core {

/** The process's memory as the kernel counts it (/proc/self/status); -1 where unavailable. */
namespace process_memory {
std::int64_t residentBytes();     // VmRSS
std::int64_t peakResidentBytes(); // VmHWM
std::int64_t fileResidentBytes(); // RssFile: code and mapped files, not data
/** Restarts the kernel's peak (VmHWM) at the present RSS; false where the kernel refuses. */
bool resetPeak();
/** Memory this process may still take: the kernel's MemAvailable, or less where the process's
 *  memory cgroup (v1 or v2) limits it (limit - usage). -1 if unknown. */
std::int64_t availableBytes();
/** Hands the C heap's free pages back to the kernel (glibc keeps them for reuse otherwise: the
 *  memory planner's tables stayed resident, 14 MiB for ResNet-56, after it returned). */
void giveBackFreePages();
} // namespace process_memory

/**
 * A memory budget that is the process's, not the engine's accounting.
 *
 * A training step makes the process grow by more than the engine's tensors: the GEMM backends'
 * code and packing buffers (oneDNN's JIT kernels and scratch, Eigen's blocks), per-thread state,
 * the allocator's own pages. On this machine that is 3-4 MiB with Eigen and 7-9 MiB with oneDNN
 * for ResNet-56, whatever the batch: a fixed cost per process and model, not a share of the
 * budget. fit() measures it on the model's own step and plans the engine's part within what is
 * left, so the process's RSS growth over a step stays within the budget.
 */
struct ProcessBudgetPlan
{
    MemoryPlan plan; // its process_overhead_bytes is the measured overhead
    std::int64_t measured_overhead_bytes = -1; // -1: the kernel's counters are unavailable
    int measuring_steps = 0;
};

/**
 * Plans `model` at `batch` for a process budget: measures the overhead with two passes at batch 1,
 * plans within budget - overhead, then measures one step of that plan at the real batch (the
 * process's growth since before the first) and plans again if that was more. The model's batch-norm
 * statistics are restored afterwards; the gradients it leaves are overwritten by the next step.
 * Sets the buffer pool's limit to budget - overhead (the blocks it keeps for reuse are the engine's
 * memory too). Without /proc (or where nothing fits), the plan is the engine's alone.
 */
ProcessBudgetPlan fitProcessBudget(Model &model, std::int64_t batch, std::int64_t budget_bytes);

/**
 * Bytes the process grew by over `steps` forward-backward passes of `schedule` at `batch`
 * beyond what the engine's accountant counted (0 if the engine counted everything, -1 without
 * the kernel's counters), from its RSS now or from `since_rss_bytes` if given (an earlier
 * measurement's start). Runs the model itself; its batch-norm statistics are restored.
 */
std::int64_t measureStepOverhead(Model &model, std::int64_t batch, const Schedule &schedule,
                                 int steps = 1, std::int64_t since_rss_bytes = -1);

} // namespace edgetrain::core

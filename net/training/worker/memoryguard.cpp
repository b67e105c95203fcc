#include "net/training/worker/memoryguard.h"

#include "core/bufferpool.h"
#include "core/error.h"
#include "core/numbertext.h"
#include "core/processmemory.h"
#include "net/training/trainingworker.h"

#include <QByteArray>
#include <QString>

#include <algorithm>

namespace edgetrain::net::worker {

MemoryGuard::MemoryGuard(const JobSpec &job, core::Model &model, std::int64_t nodeLimitBytes)
    : m_job(job), m_model(model), m_nodeLimitBytes(nodeLimitBytes)
{
    const QByteArray fault = qgetenv("EDGETRAIN_FAULT_JOB_GROWTH_BYTES");
    if (!fault.isEmpty())
        m_faultGrowthBytes = std::max<qint64>(0, fault.toLongLong());
}

std::int64_t MemoryGuard::budgetBytes() const
{
    return m_job.memory_budget_bytes >= 0 ? m_job.memory_budget_bytes : m_nodeLimitBytes;
}

/** In copies of the parameters at the phase that holds most: async with pipelining (the push,
 *  its bf16 encoding, the frame, the reply's delta and the mirror: up to 9); sync and local SGD
 *  hold fewer (the flat buffer, gloo's scratch, a regroup's broadcast, the weights posted at the
 *  end, the local-SGD snapshot, an average), profiling 4 (its own model, the exchange's buffer;
 *  the exchange's timing, before that model exists, 3: its two ranks' data and gloo's scratch).
 *  The fixed part is for the threads' stacks, the control frames and the kernels' generated code
 *  (what fitProcessBudget measured is inside the budget already). The model's own weights,
 *  gradients and optimizer state were allocated before the limit began. */
std::int64_t MemoryGuard::allowanceBytes() const
{
    return kFixedAllowanceBytes +
           kParameterCopies * m_model.parameterCount() * std::int64_t(sizeof(float));
}

void MemoryGuard::hold()
{
    const std::int64_t budget = budgetBytes();
    if (budget < 0)
        return;
    std::int64_t limit = budget + allowanceBytes();
    m_limitWhy = "its budget " + core::NumberText::bytes(budget) + " + " +
                 core::NumberText::bytes(allowanceBytes()) + " outside the step's plan";
    const std::int64_t available = core::process_memory::availableBytes();
    if (available > 0 && available - kAgentReserveBytes < limit) {
        limit = std::max<std::int64_t>(available - kAgentReserveBytes, 1 << 20);
        m_limitByDevice = true;
        m_limitWhy = "what this device had left when the job began, less " +
                     core::NumberText::bytes(kAgentReserveBytes) + " for the agent";
    }
    // Free pages the C heap kept from earlier work are handed back first: reused, they would be
    // growth the limit never sees.
    core::process_memory::giveBackFreePages();
    m_limit = std::make_unique<JobMemoryLimit>(limit);
    qCInfo(lcWorker).noquote()
        << QStringLiteral("job %1 may grow this process by %2 (%3), held by %4")
               .arg(m_job.id,
                    QString::fromStdString(core::NumberText::bytes(m_limit->limitBytes())),
                    QString::fromStdString(m_limitWhy),
                    QString::fromStdString(m_limit->description()));
}

void MemoryGuard::check() const
{
    if (m_limit && m_limit->exceeded())
        throw JobMemoryError(m_limit->overrunMessage() + " - " + m_limitWhy +
                             (m_limitByDevice
                                  ? ": this device cannot hold the job; a smaller batch or "
                                    "budget, or a device with more memory"
                                  : ": the job takes more here than its plan counted; a "
                                    "smaller batch or a larger budget"));
}

void MemoryGuard::afterStep()
{
    if (m_faultGrowthBytes > 0)
        m_faultGrowth.emplace_back(std::size_t(m_faultGrowthBytes), char(1));
    check();
}

core::MemoryPlan MemoryGuard::plan(core::Model &model, std::int64_t batch)
{
    // Every plan leaves the process's own overhead out of the budget, so the budget is the
    // process's: measured once, on the job's model.
    const std::int64_t budget = budgetBytes();
    if (m_processOverhead < 0 && budget >= 0) {
        const core::ProcessBudgetPlan fit = core::fitProcessBudget(m_model, m_job.batch, budget);
        m_processOverhead = std::max<std::int64_t>(0, fit.measured_overhead_bytes);
        qCInfo(lcWorker).noquote()
            << "a step grows this process by"
            << QString::fromStdString(core::NumberText::bytes(m_processOverhead))
            << "beyond the engine's tensors: the engine plans within the rest of"
            << QString::fromStdString(core::NumberText::bytes(budget));
    }
    core::MemoryPlanner planner(model, batch);
    planner.setProcessOverhead(std::max<std::int64_t>(0, m_processOverhead));
    return planner.plan(budget);
}

std::int64_t MemoryGuard::largestLocalBatch()
{
    if (budgetBytes() < 0) {
        m_maxLocalBatch = -1;
        return -1;
    }
    const core::MemoryPlan p = plan(m_model, m_job.batch + 1);
    m_maxLocalBatch = p.fits ? m_job.batch + 1 : p.max_batch;
    return m_maxLocalBatch;
}

std::int64_t MemoryGuard::evaluationBatch() const
{
    constexpr std::int64_t kEvaluationBatch = 500;
    return m_maxLocalBatch >= 1 ? std::min(kEvaluationBatch, m_maxLocalBatch) : kEvaluationBatch;
}

void MemoryGuard::planSteps(std::int64_t localBatch)
{
    const std::int64_t budget = budgetBytes();
    m_checkpointing.reset();
    if (budget < 0) {
        // No budget for this job: the pool's limit is the node's again, not what an earlier
        // job's budget made it (core::fitProcessBudget sets it).
        core::BufferPool::instance().setLimit(m_nodeLimitBytes);
        return;
    }
    if (localBatch < 1)
        return;
    const core::MemoryPlan p = plan(m_model, localBatch);
    if (!p.fits)
        throw core::Error("a batch of " + std::to_string(localBatch) + " does not fit the " +
                          core::NumberText::bytes(budget) +
                          " this node may use (the smallest budget that fits is " +
                          core::NumberText::bytes(p.min_budget_bytes) + ")");
    if (p.schedule.name() != "store-all")
        m_checkpointing = p.schedule;
    qCInfo(lcWorker).noquote() << "memory plan for a local batch of" << localBatch << ":"
                               << QString::fromStdString(p.schedule.name());
}

} // namespace edgetrain::net::worker

#include "plannerworker.h"

#include "core/bufferpool.h"
#include "core/parallel.h"
#include "core/processmemory.h"
#include "core/zoo.h"
#include "vision/framestudenttrainer.h"

namespace edgetrain::app {

core::ModelSpec PlanRequest::spec() const
{
    if (model == QLatin1String("detector"))
        return vision::FrameStudentTrainer::spec(cv::Size(width, height));
    return core::Zoo::resolve(model.toStdString()).withInputShape(core::Shape{3, height, width});
}

void PlannerWorker::plan(const PlanRequest &r)
{
    PlanView v;
    v.request = r;
    try {
        const bool sameChain = m_model && m_key.model == r.model && m_key.width == r.width &&
                               m_key.height == r.height && m_key.deviceBatch == r.deviceBatch;
        if (!sameChain) {
            m_planner.reset();
            m_model.reset();
            core::setThreadCount(1); // the demo's nodes and small devices run one thread
            m_model = std::make_unique<core::Model>(r.spec(), 1);
            m_planner = std::make_unique<core::MemoryPlanner>(*m_model, r.deviceBatch);
            m_storeAllBytes =
                m_planner->evaluate(core::Schedule::storeAll(int(m_model->stageCount())))
                    .predicted_peak_bytes;
            // A node's budget is its process's: it measures what a step grows it by beyond the
            // engine's tensors and plans within the rest (net::TrainingWorker). Here, in the
            // app's busy process (other threads allocate meanwhile), the same measurement at the
            // device batch read 19-29 MiB where the demo's nodes read 4.2; two passes at batch 1
            // with the buffer pool keeping nothing read close to the nodes' figure, so the plans
            // shown are near the ones the nodes make (theirs may recompute a little more).
            core::BufferPool &pool = core::BufferPool::instance();
            const std::int64_t poolLimit = pool.limit();
            pool.setLimit(0);
            const std::int64_t overhead = core::measureStepOverhead(
                *m_model, 1, core::Schedule::storeAll(int(m_model->stageCount())), 2);
            pool.setLimit(poolLimit);
            m_overheadBytes = std::max<std::int64_t>(0, overhead);
            m_planner->setProcessOverhead(m_overheadBytes);
            m_sweep.clear();
            for (const core::MemoryPlan &p : m_planner->sweep())
                m_sweep.push_back({p.predicted_recompute_factor, p.predicted_peak_bytes,
                                   QString::fromStdString(p.schedule.name())});
            m_minimumBytes = m_planner->minimumBudget();
            m_key = r;
        }
        v.plan = r.budgetBytes >= 0
                     ? m_planner->plan(r.budgetBytes)
                     : m_planner->evaluate(core::Schedule::storeAll(int(m_model->stageCount())));
        v.schedule = QString::fromStdString(v.plan.schedule.name());
        v.program = QString::fromStdString(v.plan.schedule.toString());
        v.sweep = m_sweep;
        v.storeAllPeak = m_storeAllBytes;
        v.minimumBudget = m_minimumBytes;
        v.processOverhead = m_overheadBytes;
        v.parameters = m_model->parameterCount();
    } catch (const std::exception &e) {
        v.error = QString::fromStdString(e.what());
        m_model.reset();
        m_planner.reset();
    }
    Q_EMIT ready(v);
}

} // namespace edgetrain::app

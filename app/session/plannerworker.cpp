#include "plannerworker.h"

#include "core/parallel.h"
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
            m_sweep.clear();
            for (const core::MemoryPlan &p : m_planner->sweep())
                m_sweep.push_back({p.predicted_recompute_factor, p.predicted_peak_bytes,
                                   QString::fromStdString(p.schedule.name())});
            m_storeAllBytes =
                m_planner->evaluate(core::Schedule::storeAll(int(m_model->stageCount())))
                    .predicted_peak_bytes;
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
        v.parameters = m_model->parameterCount();
    } catch (const std::exception &e) {
        v.error = QString::fromStdString(e.what());
        m_model.reset();
        m_planner.reset();
    }
    Q_EMIT ready(v);
}

} // namespace edgetrain::app

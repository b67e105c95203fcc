#include "plannerworker.h"

#include "core/bufferpool.h"
#include "core/parallel.h"
#include "core/processmemory.h"
#include "core/zoo.h"
#include "tilingsearch.h"
#include "vision/framestudenttrainer.h"

namespace edgetrain::app {

core::ModelSpec PlanRequest::spec() const
{
    if (model == QLatin1String("detector"))
        return vision::FrameStudentTrainer::spec(cv::Size(width, height));
    return core::Zoo::resolve(model.toStdString()).withInputShape(core::Shape{3, height, width});
}

struct PlannerWorker::Chain
{
    PlanRequest key; // model, input and batch (its budget is not the chain's)
    std::unique_ptr<core::Model> model;
    std::unique_ptr<core::MemoryPlanner> planner;
    std::unique_ptr<TilingSearch> tiling;
    std::vector<PlanPoint> sweep;
    std::int64_t storeAllBytes = 0, minimumBytes = 0, overheadBytes = 0;
    double forwardFlops = 0.0;

    bool holds(const PlanRequest &r) const
    {
        return key.model == r.model && key.width == r.width && key.height == r.height &&
               key.deviceBatch == r.deviceBatch;
    }
};

PlannerWorker::PlannerWorker() = default;
PlannerWorker::~PlannerWorker() = default;

PlannerWorker::Chain &PlannerWorker::chain(const PlanRequest &r)
{
    for (auto it = m_chains.begin(); it != m_chains.end(); ++it)
        if ((*it)->holds(r)) {
            std::rotate(m_chains.begin(), it, it + 1);
            return *m_chains.front();
        }
    auto c = std::make_unique<Chain>();
    c->key = r;
    c->key.budgetBytes = -1;
    core::setThreadCount(1); // the demo's nodes and small devices run one thread
    c->model = std::make_unique<core::Model>(r.spec(), 1);
    c->planner = std::make_unique<core::MemoryPlanner>(*c->model, r.deviceBatch);
    const core::Schedule storeAll = core::Schedule::storeAll(int(c->model->stageCount()));
    c->storeAllBytes = c->planner->evaluate(storeAll).predicted_peak_bytes;
    // A node's budget is its process's: it measures what a step grows it by beyond the
    // engine's tensors and plans within the rest (net::TrainingWorker). Here, in the
    // app's busy process (other threads allocate meanwhile), the same measurement at the
    // device batch read 19-29 MiB where the demo's nodes read 4.2; two passes at batch 1
    // with the buffer pool keeping nothing read close to the nodes' figure, so the plans
    // shown are near the ones the nodes make (theirs may recompute a little more).
    core::BufferPool &pool = core::BufferPool::instance();
    const std::int64_t poolLimit = pool.limit();
    pool.setLimit(0);
    const std::int64_t overhead = core::measureStepOverhead(*c->model, 1, storeAll, 2);
    pool.setLimit(poolLimit);
    c->overheadBytes = std::max<std::int64_t>(0, overhead);
    c->planner->setProcessOverhead(c->overheadBytes);
    for (const core::MemoryPlan &p : c->planner->sweep())
        c->sweep.push_back({p.predicted_recompute_factor, p.predicted_peak_bytes,
                            QString::fromStdString(p.schedule.name())});
    c->minimumBytes = c->planner->minimumBudget();
    c->forwardFlops = c->model->forwardFlops(r.deviceBatch);
    c->tiling = std::make_unique<TilingSearch>(c->model->spec(), r.deviceBatch, c->overheadBytes);
    m_chains.insert(m_chains.begin(), std::move(c));
    if (m_chains.size() > 2)
        m_chains.pop_back();
    return *m_chains.front();
}

std::pair<core::MemoryPlan, std::optional<core::TiledPlan>>
PlannerWorker::planFor(Chain &c, std::int64_t budgetBytes)
{
    if (budgetBytes < 0)
        return {c.planner->evaluate(core::Schedule::storeAll(int(c.model->stageCount()))), {}};
    core::MemoryPlan plan = c.planner->plan(budgetBytes);
    std::optional<core::TiledPlan> tiled;
    try {
        tiled = c.tiling->choose(budgetBytes, plan);
    } catch (const core::SpecError &) { // the untiled plan stands alone
    }
    return {std::move(plan), std::move(tiled)};
}

void PlannerWorker::plan(const PlanRequest &r)
{
    PlanView v;
    v.request = r;
    try {
        Chain &c = chain(r);
        std::tie(v.plan, v.tiled) = planFor(c, r.budgetBytes);
        v.schedule = QString::fromStdString(v.plan.schedule.name());
        v.program = QString::fromStdString(v.plan.schedule.toString());
        v.sweep = c.sweep;
        v.storeAllPeak = c.storeAllBytes;
        v.minimumBudget = c.minimumBytes;
        v.processOverhead = c.overheadBytes;
        v.parameters = c.model->parameterCount();
        v.forwardFlops = c.forwardFlops;
        if (v.tiled && v.tiled->tiling.active()) {
            try {
                for (const TiledPoint &p : c.tiling->sweep(v.tiled->tiling))
                    v.tiledSweep.push_back(
                        {p.stepFactor, p.peakBytes, QString::fromStdString(p.schedule)});
            } catch (const core::SpecError &) { // the tiled choice is shown without its curve
            }
        }
    } catch (const std::exception &e) {
        v.error = QString::fromStdString(e.what());
        m_chains.clear();
    }
    if (v.error.isEmpty() && r.alternativeWidth > 0 && r.alternativeHeight > 0 &&
        (r.alternativeWidth != r.width || r.alternativeHeight != r.height)) {
        InputPlan &a = v.alternative.emplace();
        a.width = r.alternativeWidth;
        a.height = r.alternativeHeight;
        PlanRequest other = r;
        other.width = a.width;
        other.height = a.height;
        try {
            Chain &c = chain(other);
            std::tie(a.plan, a.tiled) = planFor(c, r.budgetBytes);
            a.storeAllPeak = c.storeAllBytes;
            a.minimumBudget = c.minimumBytes;
            a.forwardFlops = c.forwardFlops;
        } catch (const std::exception &e) {
            a.error = QString::fromStdString(e.what());
        }
    }
    Q_EMIT ready(v);
}

} // namespace edgetrain::app

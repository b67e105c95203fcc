#pragma once

#include "core/memoryplanner.h"
#include "core/model.h"
#include "core/modelspec.h"

#include <QMetaType>
#include <QObject>
#include <QString>

#include <cstdint>
#include <memory>
#include <vector>

namespace edgetrain::app {

/** What the Plan step asks for: a model at a per-device batch under a budget. */
struct PlanRequest
{
    QString model = QStringLiteral("detector");
    int width = 256,
        height = 192; // the student's input, in pixels (the frame dataset's, or the crops')
    std::int64_t deviceBatch = 32;
    std::int64_t budgetBytes = -1; // -1: no budget (store every activation)
    bool operator==(const PlanRequest &) const = default;

    /** The zoo's model at this input ("detector": FrameStudentTrainer's spec). Throws
     *  core::SpecError for a model the zoo does not know. */
    core::ModelSpec spec() const;
};

/** One point of the budget sweep: a schedule's recompute factor against its peak. */
struct PlanPoint
{
    double recomputeFactor = 1.0;
    std::int64_t peakBytes = 0;
    QString schedule;
};

/** The planner's answer to one PlanRequest, a value sent across threads. */
struct PlanView
{
    PlanRequest request;
    QString error; // the model or batch cannot be planned
    core::MemoryPlan plan;
    QString schedule; // the plan's schedule, by name
    QString program;  // and as its program of forward / backward operations
    std::vector<PlanPoint> sweep;
    std::int64_t storeAllPeak = 0;  // the engine's tensors, without a checkpoint
    std::int64_t minimumBudget = 0; // the smallest budget that fits, processOverhead included
    /** What a step grows a node's process by beyond the engine's tensors (measured on this
     *  model: core::fitProcessBudget); every budget holds it besides the plan's peak. */
    std::int64_t processOverhead = 0;
    std::int64_t parameters = 0;
};

/**
 * The memory planner, on a thread of its own (the Workflow moves it there): keeps the model and
 * its planner while model, input and batch stay, so moving the budget slider only re-plans.
 * plan() never throws: a model or batch that cannot be planned answers with PlanView::error.
 */
class PlannerWorker : public QObject
{
    Q_OBJECT

public:
    /** Plans `request` and emits ready() with the answer (on the worker's thread). */
    void plan(const PlanRequest &request);

Q_SIGNALS:
    void ready(const edgetrain::app::PlanView &view);

private:
    PlanRequest m_key; // the request the kept model and planner were built for
    std::unique_ptr<core::Model> m_model;
    std::unique_ptr<core::MemoryPlanner> m_planner;
    std::vector<PlanPoint> m_sweep;
    std::int64_t m_storeAllBytes = 0, m_minimumBytes = 0, m_overheadBytes = 0;
};

} // namespace edgetrain::app

Q_DECLARE_METATYPE(edgetrain::app::PlanView)

#pragma once

#include "core/memoryplanner.h"
#include "core/model.h"
#include "core/modelspec.h"
#include "core/tilingplanner.h"

#include <QMetaType>
#include <QObject>
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
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
    /** Another input of the same model to plan beside, in pixels (the camera's full frame
     *  beside the dataset's, for the Plan step's choice of input); 0: none. */
    int alternativeWidth = 0, alternativeHeight = 0;
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

/** The same model planned at another input (PlanRequest::alternativeWidth), in short. */
struct InputPlan
{
    int width = 0, height = 0;
    QString error; // it cannot be planned at this input
    core::MemoryPlan plan;
    std::optional<core::TiledPlan> tiled; // as PlanView::tiled
    std::int64_t storeAllPeak = 0;
    std::int64_t minimumBudget = 0;
    double forwardFlops = 0.0; // one step's at the device batch
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
    double forwardFlops = 0.0; // one step's at the device batch (to weigh inputs against)
    /** The cheapest plan with the early stages allowed to run on tiles (core::planTiling's free
     *  choice for the same budget and process overhead): untiled where tiling buys nothing.
     *  The schedule above is the untiled one. Empty without a budget or when the search
     *  failed. */
    std::optional<core::TiledPlan> tiled;
    /** The tiled choice's schedules (its tiling at every budget): peak against the whole
     *  step's cost, untiled store-all = 1. Empty when the choice is untiled. */
    std::vector<PlanPoint> tiledSweep;
    std::optional<InputPlan> alternative; // the request's alternative input, if it named one
};

/**
 * The memory planner, on a thread of its own (the Workflow moves it there): keeps the model, its
 * planner and its tiling search for the two inputs last asked for (the request's and its
 * alternative) while model and batch stay, so moving the budget slider only re-plans.
 * plan() never throws: a model or batch that cannot be planned answers with PlanView::error.
 */
class PlannerWorker : public QObject
{
    Q_OBJECT

public:
    PlannerWorker();
    ~PlannerWorker() override;

    /** Plans `request` and emits ready() with the answer (on the worker's thread). */
    void plan(const PlanRequest &request);

Q_SIGNALS:
    void ready(const edgetrain::app::PlanView &view);

private:
    struct Chain; // one model at one input and batch, with what planning it needs
    /** The kept chain for the request's model, input and batch, built if it is not kept; the
     *  one used longest ago is dropped beyond two. */
    Chain &chain(const PlanRequest &request);
    /** The untiled plan and the tiled choice for a budget (the tiled one empty without one). */
    static std::pair<core::MemoryPlan, std::optional<core::TiledPlan>>
    planFor(Chain &c, std::int64_t budgetBytes);

    std::vector<std::unique_ptr<Chain>> m_chains; // the most recently used first
};

} // namespace edgetrain::app

Q_DECLARE_METATYPE(edgetrain::app::PlanView)

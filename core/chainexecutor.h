#pragma once

#include "model.h"
#include "schedule.h"

namespace edgetrain::core {

/**
 * Runs a Schedule on a model: one forward and backward pass that keeps what the schedule says
 * and recomputes the rest from the nearest stored stage input. Every schedule yields the same
 * loss and the same gradients, bit for bit (a recomputed stage sees the same input, the same
 * dropout masks, and does not update batch-norm statistics a second time).
 */
class ChainExecutor
{
public:
    /**
     * Throws ShapeError if x does not fit the model, and Error naming the op if the schedule
     * is not a valid program for this chain (uses a state it dropped, wrong stage count, ...).
     */
    static StepResult run(Model &model, const Schedule &schedule, const Tensor &x,
                          const std::int32_t *labels, const PassContext &ctx);
};

} // namespace edgetrain::core

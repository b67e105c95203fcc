#include "chainexecutor.h"

#include "error.h"
#include "loss.h"

#include <optional>

namespace edgetrain::core {

StepResult ChainExecutor::run(Model &model, const Schedule &schedule, const Tensor &x,
                              const std::int32_t *labels, const PassContext &ctx)
{
    const int L = int(model.stageCount());
    if (schedule.stageCount() != L)
        throw Error("schedule '" + schedule.name() + "' is for " +
                    std::to_string(schedule.stageCount()) + " stages, model '" +
                    model.spec().name() + "' has " + std::to_string(L));
    if (x.shape() != model.batchShape(x.dim(0)))
        throw ShapeError("model '" + model.spec().name() + "' expects input " +
                         model.batchShape(x.dim(0)).toString() + "; got " + x.shape().toString());

    std::vector<Tensor> xs(std::size_t(L) + 1);
    std::vector<StageCache> caches(static_cast<std::size_t>(L));
    std::vector<char> cached(std::size_t(L), 0), evaluated(std::size_t(L), 0);
    Tensor grad;
    int gradAt = -1;
    StepResult result;
    xs[0] = x;

    std::size_t index = 0;
    auto fail = [&](const std::string &what) -> Error {
        return Error("schedule '" + schedule.name() + "', op " + std::to_string(index) + ": " +
                     what);
    };
    for (; index < schedule.ops().size(); ++index) {
        const ScheduleOp &op = schedule.ops()[index];
        const auto i = std::size_t(op.stage);
        if (op.kind != ScheduleOp::Loss &&
            (op.stage < 0 || op.stage > L || (op.stage == L && op.kind != ScheduleOp::Discard)))
            throw fail("stage " + std::to_string(op.stage) + " is outside the chain");
        switch (op.kind) {
        case ScheduleOp::ForwardKeep:
        case ScheduleOp::ForwardCache: {
            if (!xs[i].defined())
                throw fail("stage " + std::to_string(i) + " needs x[" + std::to_string(i) +
                           "], which is not stored");
            if (gradAt >= 0 && gradAt <= int(i))
                throw fail("forward of stage " + std::to_string(i) + " after its backward");
            PassContext c = ctx;
            c.recompute = evaluated[i] != 0; // a re-run: no second running-statistics update
            const bool keep = op.kind == ScheduleOp::ForwardCache;
            std::optional<Tensor::RecomputeScope> recomputing;
            if (c.recompute)
                recomputing.emplace(); // what a re-run makes counts as recompute memory
            xs[i + 1] = model.stage(i).forward(xs[i], keep ? &caches[i] : nullptr, c);
            evaluated[i] = 1;
            cached[i] = keep ? 1 : cached[i];
            break;
        }
        case ScheduleOp::Discard:
            if (i == 0)
                throw fail("x[0] is the caller's input and cannot be discarded");
            xs[i] = Tensor();
            break;
        case ScheduleOp::Loss: {
            if (!xs[std::size_t(L)].defined())
                throw fail("the loss needs the logits x[" + std::to_string(L) + "]");
            const auto r = Loss::compute(model.spec().loss(), xs[std::size_t(L)], labels, &grad);
            result.loss = r.loss;
            result.correct = r.correct;
            result.count = r.count;
            gradAt = L;
            xs[std::size_t(L)] = Tensor();
            break;
        }
        case ScheduleOp::Backward:
            if (gradAt != int(i) + 1)
                throw fail("backward of stage " + std::to_string(i) + " needs the gradient at " +
                           std::to_string(i + 1) + (gradAt < 0 ? " (no loss yet)" : ""));
            if (!cached[i])
                throw fail("backward of stage " + std::to_string(i) + " without its activations");
            grad = model.stage(i).backward(grad, caches[i], ctx, i > 0);
            caches[i] = StageCache();
            cached[i] = 0;
            gradAt = int(i);
            xs[i + 1] = Tensor();
            break;
        }
    }
    if (gradAt != 0)
        throw fail("the program ends before the gradient reaches the input");
    return result;
}

} // namespace edgetrain::core

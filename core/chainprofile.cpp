#include "chainprofile.h"

#include "memorysimulation.h"
#include "random.h"

#include <algorithm>
#include <chrono>

namespace edgetrain::core {

std::int64_t fixedTrainingBytes(Model &model, bool momentum)
{
    std::int64_t params = 0, state = 0;
    for (const auto &p : model.parameters())
        params += p.parameter->value.numel();
    for (const auto &b : model.buffers())
        if (b.buffer.tensor)
            state += b.buffer.tensor->numel();
    return 4 * (params * (momentum ? 3 : 2) + state);
}

ChainProfile ChainProfile::simulate(Model &model, std::int64_t batch)
{
    ChainProfile profile;
    profile.m_batch = batch;
    profile.m_fixedBytes = fixedTrainingBytes(model);
    Shape shape = model.batchShape(batch);
    PassContext ctx;
    ctx.recompute = true; // no side effects while profiling
    const std::size_t L = model.stageCount();
    for (std::size_t i = 0; i < L; ++i) {
        Stage &stage = model.stage(i);
        const Shape outShape = stage.outputShape(shape);
        StageProfile p;
        p.input_bytes = 4 * shape.numel();
        p.output_bytes = 4 * outShape.numel();
        p.forward_cost = stage.forwardFlops(shape);
        p.backward_cost = 2.0 * p.forward_cost;

        MemorySimulation sim;
        MemoryAccountant &acc = sim.accountant();
        const Tensor x(shape, MemoryCategory::Activations);
        const std::int64_t base = acc.currentTotalBytes();
        std::int64_t forwardWorkspace = 0;
        {
            acc.resetPeaks();
            const Tensor y = stage.forward(x, nullptr, ctx);
            forwardWorkspace = acc.peakTotalBytes() - base - p.output_bytes;
        }
        StageCache cache;
        Tensor y;
        {
            acc.resetPeaks();
            y = stage.forward(x, &cache, ctx);
            const std::int64_t held = acc.currentTotalBytes() - base;
            p.cache_bytes = std::max<std::int64_t>(0, held - p.output_bytes);
            forwardWorkspace = std::max(forwardWorkspace, acc.peakTotalBytes() - base - held);
        }
        p.forward_workspace_bytes = std::max<std::int64_t>(0, forwardWorkspace);
        {
            const Tensor dy(outShape, MemoryCategory::Activations);
            const std::int64_t before = acc.currentTotalBytes();
            acc.resetPeaks();
            const Tensor dx = stage.backward(dy, cache, ctx, i > 0);
            const std::int64_t peak = acc.peakTotalBytes() - before;
            p.backward_workspace_bytes =
                std::max<std::int64_t>(0, peak - (i > 0 ? p.input_bytes : 0));
        }
        profile.m_stages.push_back(p);
        shape = outShape;
    }
    return profile;
}

void ChainProfile::measureTimes(Model &model, int repeats)
{
    using Clock = std::chrono::steady_clock;
    Shape shape = model.batchShape(m_batch);
    Tensor x(shape, MemoryCategory::Activations);
    Rng rng(17);
    for (std::int64_t k = 0; k < x.numel(); ++k)
        x.data()[k] = rng.uniform(-1.0f, 1.0f);
    PassContext ctx;
    ctx.recompute = true;
    for (std::size_t i = 0; i < model.stageCount(); ++i) {
        Stage &stage = model.stage(i);
        std::vector<double> fwd, bwd;
        Tensor next;
        for (int r = 0; r < std::max(1, repeats); ++r) {
            auto t0 = Clock::now();
            StageCache cache;
            Tensor y = stage.forward(x, &cache, ctx);
            auto t1 = Clock::now();
            Tensor dy(y.shape(), MemoryCategory::Activations);
            dy.fill(1e-3f);
            auto t2 = Clock::now();
            stage.backward(dy, cache, ctx, i > 0);
            auto t3 = Clock::now();
            fwd.push_back(std::chrono::duration<double>(t1 - t0).count());
            bwd.push_back(std::chrono::duration<double>(t3 - t2).count());
            next = y;
        }
        std::sort(fwd.begin(), fwd.end());
        std::sort(bwd.begin(), bwd.end());
        m_stages[i].forward_cost = fwd[fwd.size() / 2];
        m_stages[i].backward_cost = bwd[bwd.size() / 2];
        x = next;
    }
    m_measured = true;
}

double ChainProfile::baseCost() const
{
    double c = 0.0;
    for (const auto &s : m_stages)
        c += s.forward_cost + s.backward_cost;
    return c;
}

double ChainProfile::cost(const Schedule &schedule) const
{
    double c = 0.0;
    for (const auto &op : schedule.ops()) {
        if (op.kind == ScheduleOp::ForwardKeep || op.kind == ScheduleOp::ForwardCache)
            c += m_stages[std::size_t(op.stage)].forward_cost;
        else if (op.kind == ScheduleOp::Backward)
            c += m_stages[std::size_t(op.stage)].backward_cost;
    }
    return c;
}

} // namespace edgetrain::core

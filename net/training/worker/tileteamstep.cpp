#include "net/training/worker/tileteamstep.h"

#include "core/error.h"
#include "core/tiledstage.h"
#include "net/training/worker/memoryguard.h"
#include "net/training/worker/workerstate.h"

#include <cstring>

namespace edgetrain::net::worker {

namespace {

core::TiledStage &groupOf(core::Model &model)
{
    auto *group = dynamic_cast<core::TiledStage *>(&model.stage(0));
    if (!group)
        throw core::Error("the job splits tiles across the nodes, but its model is not tiled");
    return *group;
}

/** Images [from, from + count) of an [N, ...] tensor, as their own tensor. */
core::Tensor rows(const core::Tensor &t, std::int64_t from, std::int64_t count)
{
    const std::int64_t per = t.numel() / t.dim(0);
    std::vector<std::int64_t> dims = t.shape().dims();
    dims[0] = count;
    core::Tensor out(core::Shape(dims), core::MemoryCategory::Activations);
    std::memcpy(out.data(), t.data() + from * per, std::size_t(count * per) * sizeof(float));
    return out;
}

} // namespace

std::size_t tileGroupGradientFloats(core::Model &model)
{
    std::size_t n = 0;
    groupOf(model).forEachLayer([&](const std::string &, core::Layer &layer) {
        for (const core::Parameter *p : layer.parameters())
            n += std::size_t(p->grad.numel());
    });
    return n;
}

core::StepResult tileTeamStep(WorkerState &s, CollectiveGroup &team, const std::int64_t *indices,
                              std::int64_t total, std::int64_t offset, std::int64_t mine,
                              float weight)
{
    core::Model &model = *s.loaded.model;
    core::TiledStage &group = groupOf(model);
    group.setTeam(core::TiledStage::TileTeam{
        team.rank(), team.size(), [&team](double *d, std::size_t n) { team.allreduceSum(d, n); },
        [&team](float *d, std::size_t n) { team.allreduceSum(d, n); }});
    struct Leave // the group runs alone again whatever happens
    {
        core::TiledStage &g;
        ~Leave() { g.setTeam(std::nullopt); }
    } leave{group};

    // Every rank reads the whole batch: its tiles are of every image.
    const int width = model.spec().labelWidth();
    core::Tensor x(model.batchShape(total), core::MemoryCategory::Activations);
    std::vector<std::int32_t> labels(std::size_t(total * width));
    s.loaded.train->gather(indices, total, x.data(), labels.data());
    core::PassContext ctx;
    ctx.training = true;
    ctx.seed = s.job.seed;
    ctx.step = std::uint64_t(s.step);
    core::StageCache cache;
    const core::Tensor y = group.forward(x, &cache, ctx);

    core::Tensor dy = core::Tensor::zeros(y.shape(), core::MemoryCategory::Activations);
    core::StepResult r;
    if (mine > 0) {
        core::Tensor dh;
        r = model.forwardBackwardFrom(1, rows(y, offset, mine), labels.data() + offset * width, ctx,
                                      &dh);
        const std::int64_t per = y.numel() / y.dim(0);
        float *into = dy.data() + offset * per;
        for (std::int64_t i = 0; i < dh.numel(); ++i)
            into[i] = dh.data()[i] * weight;
    }
    team.allreduceSum(dy.data(), std::size_t(dy.numel()));
    group.backward(dy, cache, ctx, false);
    s.memory->afterStep();
    return r;
}

} // namespace edgetrain::net::worker

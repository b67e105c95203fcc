#include "model.h"

#include "chainexecutor.h"
#include "error.h"
#include "loss.h"
#include "random.h"
#include "tiledstage.h"

namespace edgetrain::core {

Model::Model(ModelSpec spec, std::uint64_t seed) : m_spec(std::move(spec))
{
    m_stages = m_spec.buildStages();
    Shape s = batchShape(2);
    for (const auto &stage : m_stages)
        s = stage->outputShape(s);
    m_classes = int(s[1]);
    // One generator in a fixed layer order: the same seed gives the same weights everywhere.
    Rng rng(seed);
    for (auto &stage : m_stages)
        stage->forEachLayer([&](const std::string &, Layer &layer) { layer.initialize(rng); });
}

Shape Model::batchShape(std::int64_t batch) const
{
    std::vector<std::int64_t> dims{batch};
    dims.insert(dims.end(), sampleShape().dims().begin(), sampleShape().dims().end());
    return Shape(std::move(dims));
}

void Model::checkInput(const Tensor &x) const
{
    if (x.shape().rank() < 1 || x.shape() != batchShape(x.dim(0)) || x.dim(0) < 1)
        throw ShapeError("model '" + m_spec.name() + "' expects input " +
                         batchShape(x.shape().rank() ? x.dim(0) : 1).toString() + "; got " +
                         x.shape().toString());
}

Tensor Model::forward(const Tensor &x, const PassContext &ctx)
{
    checkInput(x);
    Tensor h = x;
    for (auto &stage : m_stages)
        h = stage->forward(h, nullptr, ctx);
    return h;
}

StepResult Model::forwardBackward(const Tensor &x, const std::int32_t *labels,
                                  const PassContext &ctx, const Schedule *schedule)
{
    checkInput(x);
    if (schedule)
        return ChainExecutor::run(*this, *schedule, x, labels, ctx);
    if (m_storeAll.stageCount() != int(m_stages.size()))
        m_storeAll = Schedule::storeAll(int(m_stages.size()));
    return ChainExecutor::run(*this, m_storeAll, x, labels, ctx);
}

void Model::setTiling(int stages, int rows, int cols)
{
    if (m_tiling.active()) { // back to the plain chain first
        auto *group = static_cast<TiledStage *>(m_stages.front().get());
        auto inner = group->release();
        m_stages.erase(m_stages.begin());
        m_stages.insert(m_stages.begin(), std::make_move_iterator(inner.begin()),
                        std::make_move_iterator(inner.end()));
        m_tiling = Tiling{};
    }
    if (stages <= 0 || rows * cols <= 1)
        return;
    if (stages >= int(m_stages.size()))
        throw SpecError("model '" + m_spec.name() + "' has " + std::to_string(m_stages.size()) +
                        " stages: a tile group of " + std::to_string(stages) +
                        " leaves none for the rest of the network");
    for (int i = 0; i < stages; ++i)
        if (const std::string why = TiledStage::refusal(*m_stages[std::size_t(i)]); !why.empty())
            throw SpecError("model '" + m_spec.name() + "': cannot tile " + why);
    Shape out = batchShape(1);
    for (int i = 0; i < stages; ++i)
        out = m_stages[std::size_t(i)]->outputShape(out);
    if (out.rank() != 4 || rows > out[2] || cols > out[3])
        throw SpecError("model '" + m_spec.name() + "': a grid of " + std::to_string(rows) + "x" +
                        std::to_string(cols) + " tiles does not fit the output " + out.toString() +
                        " of its first " + std::to_string(stages) + " stages");
    std::vector<std::unique_ptr<Stage>> inner(std::make_move_iterator(m_stages.begin()),
                                              std::make_move_iterator(m_stages.begin() + stages));
    m_stages.erase(m_stages.begin(), m_stages.begin() + stages);
    auto group = std::make_unique<TiledStage>(std::move(inner), rows, cols);
    m_stages.insert(m_stages.begin(), std::move(group));
    m_tiling = Tiling{stages, rows, cols};
}

StepResult Model::forwardBackwardFrom(std::size_t first, const Tensor &h,
                                      const std::int32_t *labels, const PassContext &ctx,
                                      Tensor *inputGrad)
{
    const std::size_t L = m_stages.size();
    if (first < 1 || first >= L)
        throw Error("model '" + m_spec.name() + "': no stage " + std::to_string(first) +
                    " to start a pass from");
    std::vector<StageCache> caches(L - first);
    std::vector<Tensor> xs{h};
    for (std::size_t i = first; i < L; ++i)
        xs.push_back(m_stages[i]->forward(xs.back(), &caches[i - first], ctx));
    Tensor grad;
    const auto r = Loss::compute(m_spec.loss(), xs.back(), labels, &grad);
    xs.back() = Tensor();
    for (std::size_t i = L; i-- > first;) {
        grad = m_stages[i]->backward(grad, caches[i - first], ctx, i > first || inputGrad);
        caches[i - first] = StageCache();
        xs[i - first + 1] = Tensor();
    }
    if (inputGrad)
        *inputGrad = grad;
    return {r.loss, r.correct, r.count};
}

std::vector<NamedParameter> Model::parameters()
{
    std::vector<NamedParameter> out;
    for (auto &stage : m_stages)
        stage->forEachLayer([&](const std::string &prefix, Layer &layer) {
            for (Parameter *p : layer.parameters())
                out.push_back({prefix.empty() ? p->name : prefix + "." + p->name, p});
        });
    return out;
}

std::vector<NamedBuffer> Model::buffers()
{
    std::vector<NamedBuffer> out;
    for (auto &stage : m_stages)
        stage->forEachLayer([&](const std::string &prefix, Layer &layer) {
            for (const LayerBuffer &b : layer.buffers())
                out.push_back({prefix.empty() ? b.name : prefix + "." + b.name, b});
        });
    return out;
}

std::int64_t Model::parameterCount()
{
    std::int64_t n = 0;
    for (const auto &p : parameters())
        n += p.parameter->value.numel();
    return n;
}

double Model::forwardFlops(std::int64_t batch) const
{
    double flops = 0.0;
    Shape s = batchShape(batch);
    for (const auto &stage : m_stages) {
        flops += stage->forwardFlops(s);
        s = stage->outputShape(s);
    }
    return flops;
}

} // namespace edgetrain::core

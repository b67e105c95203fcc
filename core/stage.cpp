#include "stage.h"

#include "batchnorm2d.h"
#include "relu.h"

namespace edgetrain::core {

namespace {
thread_local bool t_unfused = false; // set by setFusedStages(false) on this thread
} // namespace

bool fusedStages()
{
    return !t_unfused;
}

void setFusedStages(bool fused)
{
    t_unfused = !fused;
}

std::string Stage::childName(const std::string &layer) const
{
    if (m_name.empty())
        return layer;
    if (layer.empty())
        return m_name;
    return m_name + "." + layer;
}

SequentialStage::SequentialStage(std::string name, std::vector<std::unique_ptr<Layer>> layers,
                                 bool writeAsSingleLayer)
    : Stage(std::move(name)), m_layers(std::move(layers)), m_single(writeAsSingleLayer)
{
    m_normThenRelu.assign(m_layers.size(), false);
    for (std::size_t i = 0; i + 1 < m_layers.size(); ++i)
        m_normThenRelu[i] = dynamic_cast<BatchNorm2d *>(m_layers[i].get()) &&
                            dynamic_cast<ReLU *>(m_layers[i + 1].get());
}

bool SequentialStage::fusesWithNext(std::size_t i) const
{
    return m_normThenRelu[i] && fusedStages();
}

Shape SequentialStage::outputShape(const Shape &input) const
{
    Shape s = input;
    for (const auto &layer : m_layers)
        s = layer->outputShape(s);
    return s;
}

Tensor SequentialStage::forward(const Tensor &x, StageCache *cache, const PassContext &ctx)
{
    if (cache)
        cache->layers.assign(m_layers.size(), LayerCache{});
    Tensor h = x;
    for (std::size_t i = 0; i < m_layers.size(); ++i) {
        if (fusesWithNext(i)) {
            // The ReLU's cache holds its output, as ReLU::forward leaves it.
            h = static_cast<BatchNorm2d &>(*m_layers[i])
                    .forwardRelu(h, cache ? &cache->layers[i] : nullptr, ctx);
            m_layers[i + 1]->outputShape(h.shape());
            if (cache)
                cache->layers[i + 1].tensors = {h};
            ++i;
            continue;
        }
        h = m_layers[i]->forward(h, cache ? &cache->layers[i] : nullptr, ctx);
    }
    return h;
}

Tensor SequentialStage::backward(const Tensor &dy, const StageCache &cache, const PassContext &ctx,
                                 bool needInputGrad)
{
    Tensor g = dy;
    for (std::size_t i = m_layers.size(); i-- > 0;) {
        if (i > 0 && fusesWithNext(i - 1)) { // i is the ReLU after a batch norm
            const Tensor &y = cache.layers.at(i).tensors.at(0);
            --i;
            g = static_cast<BatchNorm2d &>(*m_layers[i])
                    .backwardRelu(g, y, cache.layers.at(i), ctx, i > 0 || needInputGrad);
            continue;
        }
        g = m_layers[i]->backward(g, cache.layers.at(i), ctx, i > 0 || needInputGrad);
    }
    return g;
}

void SequentialStage::forEachLayer(const std::function<void(const std::string &, Layer &)> &fn)
{
    for (auto &layer : m_layers)
        fn(childName(layer->name()), *layer);
}

double SequentialStage::forwardFlops(const Shape &input) const
{
    double flops = 0.0;
    Shape s = input;
    for (const auto &layer : m_layers) {
        flops += layer->forwardFlops(s);
        s = layer->outputShape(s);
    }
    return flops;
}

Json SequentialStage::spec() const
{
    if (m_single && m_layers.size() == 1)
        return m_layers.front()->spec();
    Json layers = Json::array();
    for (const auto &layer : m_layers) {
        Json l = layer->spec();
        l.set("name", layer->name());
        layers.push(std::move(l));
    }
    Json j;
    j.set("type", "sequential").set("name", name()).set("layers", std::move(layers));
    return j;
}

} // namespace edgetrain::core

#include "relu.h"

#include "parallel.h"

#include <algorithm>

namespace edgetrain::core {

namespace Internal {

namespace {
int workersFor(std::int64_t n)
{
    // Below ~32k values a parallel region costs more than it saves.
    return int(std::clamp<std::int64_t>(n / 32768, 1, threadCount()));
}
} // namespace

void reluForward(const float *x, float *y, std::int64_t n)
{
    if (!x || !y)
        return; // virtual tensors (memory simulation)
#pragma omp parallel for schedule(static) num_threads(workersFor(n))
    for (std::int64_t i = 0; i < n; ++i)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void reluBackward(const float *dy, const float *y, float *dx, std::int64_t n)
{
    if (!dy || !y || !dx)
        return; // virtual tensors (memory simulation)
#pragma omp parallel for schedule(static) num_threads(workersFor(n))
    for (std::int64_t i = 0; i < n; ++i)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

} // namespace Internal

Tensor ReLU::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    Tensor y(x.shape(), MemoryCategory::Activations);
    if (!y.isVirtual())
        Internal::reluForward(x.data(), y.data(), x.numel());
    if (cache)
        cache->tensors = {y};
    return y;
}

Tensor ReLU::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                      bool needInputGrad)
{
    const Tensor &y = cache.tensors.at(0);
    if (dy.shape() != y.shape())
        shapeError("gradient of shape " + dy.shape().toString() + " does not match", y.shape());
    if (!needInputGrad)
        return {};
    Tensor dx(y.shape(), MemoryCategory::Activations);
    if (!dx.isVirtual())
        Internal::reluBackward(dy.data(), y.data(), dx.data(), y.numel());
    return dx;
}

Json ReLU::spec() const
{
    Json j;
    j.set("type", "relu");
    return j;
}

} // namespace edgetrain::core

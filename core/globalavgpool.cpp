#include "globalavgpool.h"

#include "error.h"
#include "parallel.h"

#include <algorithm>

namespace edgetrain::core {

Shape GlobalAvgPool::outputShape(const Shape &input) const
{
    if (input.rank() != 4)
        shapeError("expected [N, C, H, W]", input);
    return Shape{input[0], input[1], 1, 1};
}

Json GlobalAvgPool::spec() const
{
    Json j;
    j.set("type", "global_avg_pool");
    return j;
}

Tensor GlobalAvgPool::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    const Shape out = outputShape(x.shape());
    const std::int64_t planes = out[0] * out[1], HW = x.dim(2) * x.dim(3);
    Tensor y(out, MemoryCategory::Activations);
    if (y.isVirtual()) {
        if (cache)
            cache->inputShape = x.shape();
        return y;
    }
    for (std::int64_t p = 0; p < planes; ++p) {
        const float *src = x.data() + p * HW;
        float sum = 0.0f;
        for (std::int64_t i = 0; i < HW; ++i)
            sum += src[i];
        y.data()[p] = sum / float(HW);
    }
    if (cache)
        cache->inputShape = x.shape();
    return y;
}

Tensor GlobalAvgPool::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                               bool needInputGrad)
{
    const Shape &in = cache.inputShape;
    if (dy.numel() != in[0] * in[1])
        shapeError("gradient of shape " + dy.shape().toString() + " does not match the output", in);
    if (!needInputGrad)
        return {};
    const std::int64_t planes = in[0] * in[1], HW = in[2] * in[3];
    Tensor dx(in, MemoryCategory::Activations);
    if (dx.isVirtual())
        return dx;
    for (std::int64_t p = 0; p < planes; ++p) {
        const float v = dy.data()[p] / float(HW);
        std::fill(dx.data() + p * HW, dx.data() + (p + 1) * HW, v);
    }
    return dx;
}

} // namespace edgetrain::core

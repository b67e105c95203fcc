#include "flatten.h"

namespace edgetrain::core {

Shape Flatten::outputShape(const Shape &input) const
{
    if (input.rank() < 2)
        shapeError("expected [N, ...]", input);
    return Shape{input[0], input.numel() / input[0]};
}

Tensor Flatten::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    if (cache)
        cache->inputShape = x.shape();
    return x.reshaped(outputShape(x.shape()));
}

Tensor Flatten::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                         bool needInputGrad)
{
    if (dy.numel() != cache.inputShape.numel())
        shapeError("gradient of shape " + dy.shape().toString() + " does not match",
                   cache.inputShape);
    return needInputGrad ? dy.reshaped(cache.inputShape) : Tensor();
}

Json Flatten::spec() const
{
    Json j;
    j.set("type", "flatten");
    return j;
}

} // namespace edgetrain::core

#pragma once

#include "layer.h"

namespace edgetrain::core {

/** max(x, 0). Keeps its output for backward (which the next layer usually keeps anyway). */
class ReLU : public Layer
{
public:
    explicit ReLU(std::string name) : Layer(std::move(name)) {}

    std::string_view type() const override { return "relu"; }
    Shape outputShape(const Shape &input) const override { return input; }
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    Json spec() const override;
};

namespace Internal {
/** y = max(x, 0) over n values, threaded. Null pointers (virtual tensors): nothing to do. */
void reluForward(const float *x, float *y, std::int64_t n);
/** dx = dy where y > 0, else 0 (y is the ReLU output), threaded. dx may alias dy. */
void reluBackward(const float *dy, const float *y, float *dx, std::int64_t n);
} // namespace Internal

} // namespace edgetrain::core

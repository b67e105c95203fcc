#pragma once

#include "layer.h"

namespace edgetrain::core {

/** Mean over H and W: [N, C, H, W] -> [N, C, 1, 1] (adaptive_avg_pool2d to 1). */
class GlobalAvgPool : public Layer
{
public:
    explicit GlobalAvgPool(std::string name) : Layer(std::move(name)) {}

    std::string_view type() const override { return "global_avg_pool"; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    Json spec() const override;
};

} // namespace edgetrain::core

#pragma once

#include "layer.h"

namespace edgetrain::core {

/** [N, C, H, W] -> [N, C*H*W] as a view of the same buffer (no copy either way). */
class Flatten : public Layer
{
public:
    explicit Flatten(std::string name) : Layer(std::move(name)) {}

    std::string_view type() const override { return "flatten"; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    Json spec() const override;
};

} // namespace edgetrain::core

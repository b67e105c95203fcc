#pragma once

#include "layer.h"

namespace edgetrain::core {

/**
 * Nearest-neighbour upsampling by an integer factor: [N, C, H, W] -> [N, C, H*f, W*f], each
 * input value repeated over an f x f block (PyTorch's nn.Upsample(scale_factor=f)). Backward
 * sums the gradient over each block. Keeps nothing but the input shape for backward.
 */
class Upsample2d : public Layer
{
public:
    /** Throws SpecError unless 1 <= factor <= 16. */
    Upsample2d(std::string name, int factor);

    std::string_view type() const override { return "upsample2d"; }
    int factor() const { return m_factor; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    double forwardFlops(const Shape &input) const override;
    Json spec() const override;

private:
    int m_factor;
};

} // namespace edgetrain::core

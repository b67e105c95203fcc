#pragma once

#include "layer.h"

namespace edgetrain::core {

/**
 * Inverted dropout: in training each value is zeroed with probability p and the rest scaled by
 * 1/(1-p); identity in evaluation. The mask is a hash of (seed, step, layer, index), so a
 * recomputed forward pass draws the same mask and backward stores nothing.
 */
class Dropout : public Layer
{
public:
    Dropout(std::string name, double p);

    std::string_view type() const override { return "dropout"; }
    Shape outputShape(const Shape &input) const override { return input; }
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    Json spec() const override;

private:
    /** Multiplies values[i] by the mask scale for element i (0 or 1/(1-p)). */
    void applyMask(const float *in, float *out, std::int64_t n, const PassContext &ctx) const;

    double m_p;
    std::uint64_t m_salt; // distinguishes the layer's mask from other dropout layers'
};

} // namespace edgetrain::core

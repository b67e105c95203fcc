#pragma once

#include "layer.h"

namespace edgetrain::core {

/**
 * Fully connected layer, weight [out, in] (PyTorch's layout). The input is [N, in] or any
 * [N, ...] whose trailing dimensions hold `in` values; dL/dx keeps the input's shape.
 */
class Linear : public Layer
{
public:
    Linear(std::string name, std::int64_t inFeatures, std::int64_t outFeatures, bool bias = true);

    std::string_view type() const override { return "linear"; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    std::vector<Parameter *> parameters() override;
    void initialize(Rng &rng) override;
    double forwardFlops(const Shape &input) const override;
    Json spec() const override;

private:
    std::int64_t m_in;
    std::int64_t m_out;
    bool m_hasBias;
    Parameter m_weight;
    Parameter m_bias;
};

} // namespace edgetrain::core

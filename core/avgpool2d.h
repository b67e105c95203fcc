#pragma once

#include "layer.h"
#include "pool2doptions.h"

namespace edgetrain::core {

/** Average pooling (PyTorch's AvgPool2d, padding counted in the divisor); keeps nothing. */
class AvgPool2d : public Layer
{
public:
    AvgPool2d(std::string name, const Pool2dOptions &options);

    std::string_view type() const override { return "avgpool2d"; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    Json spec() const override;

    const Pool2dOptions &options() const { return m_options; }

private:
    Pool2dOptions m_options;
};

} // namespace edgetrain::core

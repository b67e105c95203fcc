#pragma once

#include "layer.h"
#include "pool2doptions.h"

namespace edgetrain::core {

/** Max pooling (PyTorch's MaxPool2d, floor mode); keeps the argmax indices for backward. */
class MaxPool2d : public Layer
{
public:
    MaxPool2d(std::string name, const Pool2dOptions &options);

    std::string_view type() const override { return "maxpool2d"; }
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

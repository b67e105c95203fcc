#pragma once

#include "layer.h"

namespace edgetrain::core {

struct Pool2dOptions
{
    int kernel = 2;
    int stride = 2;
    int padding = 0;
};

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

private:
    Pool2dOptions m_options;
};

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

private:
    Pool2dOptions m_options;
};

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

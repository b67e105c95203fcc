#pragma once

#include "batchnorm2d.h"
#include "conv2d.h"
#include "stage.h"

namespace edgetrain::core {

/** How the shortcut of a residual block matches shapes when they change. */
enum class Shortcut {
    Identity,   // shapes equal
    PadA,       // option A of He et al.: subsample by the stride, zero-pad channels (CIFAR ResNets)
    Projection, // option B: 1x1 conv with the stride + batch norm, as "downsample.0/1"
                // (torchvision)
};

/**
 * A residual block as one stage: Basic (3x3, 3x3) or Bottleneck (1x1, 3x3 with the stride, 1x1
 * expanding to out_channels, torchvision v1.5), each conv followed by batch norm, a ReLU after the
 * first convs and after the sum with the shortcut. Parameter names follow PyTorch: conv1, bn1,
 * conv2, bn2[, conv3, bn3][, downsample.0, downsample.1].
 */
class ResidualBlock : public Stage
{
public:
    enum class Kind { Basic, Bottleneck };

    struct Options
    {
        Kind kind = Kind::Basic;
        int out_channels = 16;
        int width = 0; // bottleneck inner width (out_channels / 4 when 0)
        int stride = 1;
        Shortcut shortcut = Shortcut::Identity;
    };

    ResidualBlock(std::string name, int inChannels, const Options &options);

    std::string_view type() const override;
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, StageCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const StageCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    void forEachLayer(const std::function<void(const std::string &, Layer &)> &fn) override;
    double forwardFlops(const Shape &input) const override;
    Json spec() const override;

private:
    Tensor shortcutForward(const Tensor &x, StageCache *cache, const PassContext &ctx);
    /** Adds the shortcut's dL/dx into dx (allocating it when undefined). */
    void shortcutBackward(const Tensor &dsum, const StageCache &cache, const PassContext &ctx,
                          Tensor &dx);

    int m_inChannels;
    Options m_options;
    std::vector<std::unique_ptr<Conv2d>> m_convs;
    std::vector<std::unique_ptr<BatchNorm2d>> m_norms;
    std::unique_ptr<Conv2d> m_projConv;
    std::unique_ptr<BatchNorm2d> m_projNorm;
};

std::string_view shortcutName(Shortcut s); // "identity", "pad", "projection"

} // namespace edgetrain::core

#pragma once

#include "layer.h"

#include <memory>
#include <string_view>
#include <vector>

namespace edgetrain::core {

namespace Internal {
class DnnlConvolution;
struct ConvShape;
} // namespace Internal

/**
 * How Conv2d layers compute. Im2col: im2col + GEMM per image (portable, NEON on ARM through
 * Eigen; the reference). Dnnl: oneDNN's direct convolution primitives on the whole batch,
 * without a materialised im2col, where libdnnl is built in — the default there, because it
 * measured faster on x86 (README, "Convolution backends"). Winograd: Dnnl, with Winograd
 * F(4x4, 3x3) for the layers where it measured faster still
 * (Internal::DnnlConvolution::winogradSuits), at 6.5-10.5 MiB of scratchpad per call: not the
 * default, because it raises the smallest budget a model trains in. Chosen at start-up by
 * EDGETRAIN_CONV (im2col, dnnl or winograd) and `--conv` of the CLI; for the whole process.
 */
enum class ConvBackend { Im2col, Dnnl, Winograd };

std::vector<ConvBackend> availableConvBackends();
ConvBackend convBackend();
/** Selects the backend; throws SpecError if it was not built in. */
void setConvBackend(ConvBackend backend);
std::string_view convBackendName(ConvBackend backend); // "im2col", "dnnl", "winograd"
/** "im2col" / "dnnl" / "winograd" -> backend; throws SpecError for anything else. */
ConvBackend parseConvBackend(std::string_view name);

struct Conv2dOptions
{
    int out_channels = 1;
    int kernel = 3;
    int stride = 1;
    int padding = 0;
    /** Spacing of the kernel's taps (1: adjacent). A 3x3 kernel at dilation 2 covers 5x5 with
     *  nine weights: a wider view at the same cost (the detector's later blocks). */
    int dilation = 1;
    bool bias = true;
    /** Initial bias: empty = PyTorch's default (U(-1/sqrt(fan_in), 1/sqrt(fan_in))); one value =
     *  every channel; else one value per output channel (e.g. a detector's heatmap prior). */
    std::vector<double> bias_init;
};

/**
 * 2-D convolution, weight OIHW (PyTorch's layout), input and output NCHW.
 * With ConvBackend::Im2col: im2col + GEMM per image, images split across the engine threads;
 * weight gradients are summed per thread and combined in thread order (deterministic). With
 * ConvBackend::Dnnl: oneDNN's primitives over the batch (Internal::DnnlConvolution), falling
 * back to im2col + GEMM for a shape oneDNN has no primitive for.
 */
class Conv2d : public Layer
{
public:
    /** Throws SpecError for invalid options (bias_init without a bias, or of the wrong size). */
    Conv2d(std::string name, int inChannels, const Conv2dOptions &options);

    std::string_view type() const override { return "conv2d"; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    std::vector<Parameter *> parameters() override;
    void initialize(Rng &rng) override;
    double forwardFlops(const Shape &input) const override;
    Json spec() const override;

    const Conv2dOptions &options() const { return m_options; }
    /** This layer's call on `input` as oneDNN sees it (direct convolution; Winograd is the
     *  backend's choice). Throws ShapeError for an input the layer does not take. */
    Internal::ConvShape convShape(const Shape &input) const;
    int inChannels() const { return m_inChannels; }

private:
    /** Sizes of one call: batch, input and output planes, im2col rows K and columns P. */
    struct Geometry
    {
        std::int64_t N;
        int C, H, W, O, OH, OW;
        std::int64_t K, P, inStride;
    };
    Geometry geometry(const Shape &input, const Shape &output) const;
    bool isPointwise() const; // 1x1, stride 1, no padding: the input is its own im2col matrix
    int reach() const;        // the kernel's extent in input pixels: dilation * (kernel - 1) + 1
    /** oneDNN's primitives for this call, or null to use im2col + GEMM. */
    std::shared_ptr<const Internal::DnnlConvolution> dnnlFor(const Shape &input) const;

    int m_inChannels;
    Conv2dOptions m_options;
    Parameter m_weight;
    Parameter m_bias;
};

namespace Internal {
/**
 * Unfolds one image [C, H, W] into col [C*k*k, OH*OW] (zero padding; taps `dilation` apart).
 * `scratch` holds im2colScratchSize() floats (the zero-padded copy of the image); unused without
 * padding.
 */
void im2col(const float *image, int channels, int height, int width, int kernel, int stride,
            int padding, int outHeight, int outWidth, float *col, float *scratch, int dilation = 1);
std::int64_t im2colScratchSize(int channels, int height, int width, int padding);
/** Adds col [C*k*k, OH*OW] back into image [C, H, W] (the adjoint of im2col). */
void col2imAdd(const float *col, int channels, int height, int width, int kernel, int stride,
               int padding, int outHeight, int outWidth, float *image, int dilation = 1);
} // namespace Internal

} // namespace edgetrain::core

#pragma once

#include "layer.h"

namespace edgetrain::core {

/**
 * Batch normalisation over N, H, W per channel (PyTorch's BatchNorm2d): in training the batch
 * statistics normalise and the running statistics follow with `momentum` (unbiased variance);
 * in evaluation the running statistics normalise. Parameters weight (gamma) and bias (beta);
 * buffers running_mean, running_var, num_batches_tracked.
 */
class BatchNorm2d : public Layer
{
public:
    BatchNorm2d(std::string name, int channels, double eps = 1e-5, double momentum = 0.1);

    std::string_view type() const override { return "batchnorm2d"; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    std::vector<Parameter *> parameters() override;
    std::vector<LayerBuffer> buffers() override;
    void initialize(Rng &rng) override;
    double forwardFlops(const Shape &input) const override;
    Json spec() const override;

    std::int64_t batchesTracked() const { return m_batchesTracked; }
    int channels() const { return m_channels; }
    double eps() const { return m_eps; }
    /**
     * What forward() does to the running statistics in training, for statistics gathered
     * elsewhere (a tile group sums them over its tiles): `mean` and the biased `variance` per
     * channel over `count` values each.
     */
    void trackStatistics(const double *mean, const double *variance, std::int64_t count);

    /**
     * forward() with a ReLU after it, in the same pass over memory: y = max(bn(x), 0), or with
     * `residual` (a tensor of the same shape) y = max(bn(x) + residual, 0) — a residual block's
     * end. The batch norm's own output is never materialised. The cache is forward()'s; the
     * ReLU's backward needs y, which the caller keeps (its next layer's input).
     */
    Tensor forwardRelu(const Tensor &x, LayerCache *cache, const PassContext &ctx,
                       const Tensor *residual = nullptr);
    /**
     * backward() of forwardRelu() without a residual: dy is masked where y (its output) is 0
     * inside the batch norm's own passes, so the ReLU's gradient is never materialised.
     */
    Tensor backwardRelu(const Tensor &dy, const Tensor &y, const LayerCache &cache,
                        const PassContext &ctx, bool needInputGrad);

private:
    /** forward() and forwardRelu(): `relu` and `residual` add the epilogue. */
    Tensor forwardImpl(const Tensor &x, LayerCache *cache, const PassContext &ctx, bool relu,
                       const Tensor *residual);
    /** backward() and backwardRelu(): with `mask` (the ReLU's output) dy counts where it is > 0. */
    Tensor backwardImpl(const Tensor &dy, const Tensor *mask, const LayerCache &cache,
                        const PassContext &ctx, bool needInputGrad);

    void resetState(); // gamma 1, beta 0, running mean 0, var 1, counter 0

    int m_channels;
    double m_eps;
    double m_momentum;
    Parameter m_weight;
    Parameter m_bias;
    Tensor m_runningMean;
    Tensor m_runningVar;
    std::int64_t m_batchesTracked = 0;
};

} // namespace edgetrain::core

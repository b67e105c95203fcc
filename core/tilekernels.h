#pragma once

#include "tensor.h"
#include "tilegeometry.h"

#include <cstdint>
#include <vector>

namespace edgetrain::core::tiles {

/** A window of a tensor's last two axes, relative to the tensor. */
struct Window
{
    Span rows;
    Span cols;
};

/** The window of `from` (an [N, C, H, W] tensor) as a new tensor (virtual under simulation). */
Tensor crop(const Tensor &from, const Window &window, MemoryCategory category);
/** Writes `part` into the window of `into` (overwriting). */
void place(const Tensor &part, Tensor &into, const Window &window);
/** Adds `part` into the window of `into`. */
void addInto(const Tensor &part, Tensor &into, const Window &window);
/** A zero tensor of `shape` with `part` in its window: a kept part's gradient on the whole
 *  output a layer produced. */
Tensor padded(const Tensor &part, const Shape &shape, const Window &window);

/**
 * Per-channel count, mean and sum of squared deviations, merged over parts of a map (Chan's
 * pairwise update: exact in double whatever the order of the tiles).
 */
struct ChannelMoments
{
    explicit ChannelMoments(std::int64_t channels = 0)
        : count(0), mean(std::size_t(channels), 0.0), m2(std::size_t(channels), 0.0)
    {}
    std::int64_t count;
    std::vector<double> mean;
    std::vector<double> m2;
    /** Adds the values of x's window (over every image). */
    void add(const Tensor &x, const Window &window);
    std::vector<double> variance() const; // biased: m2 / count
};

/** Whole-map normalisation of one batch norm: mean and 1/sqrt(var + eps) per channel. */
struct NormStatistics
{
    std::vector<float> mean;
    std::vector<float> invStd;
};

/** y = gamma (x - mean) invStd + beta, per channel (with `relu`, max(that, 0)). */
Tensor normalize(const Tensor &x, const NormStatistics &s, const float *gamma, const float *beta,
                 bool relu);
/** The same into y (may be x itself). */
void normalizeInto(const Tensor &x, Tensor &y, const NormStatistics &s, const float *gamma,
                   const float *beta, bool relu);

/** Adds sum(dy) and sum(dy * xhat) per channel over the whole tensors to the two sums. */
void addGradientSums(const Tensor &dy, const Tensor &x, const NormStatistics &s,
                     std::vector<double> &sumDy, std::vector<double> &sumDyXhat);

/** The same sums for a batch norm followed only by ReLUs, from the group's output y = max(bn, 0)
 *  and its gradient: dy counts where y > 0, and there xhat = (y - beta) / gamma (gamma != 0). */
void addTailGradientSums(const Tensor &dy, const Tensor &y, const float *gamma, const float *beta,
                         std::vector<double> &sumDy, std::vector<double> &sumDyXhat);

/**
 * One tile's share of a batch norm's input gradient: gamma invStd dy everywhere, less
 * gamma invStd (mean(dy) + xhat mean(dy xhat)) on the window the tile owns — the whole map's
 * means, so that the tiles' shares sum to the untiled gradient.
 */
Tensor normBackward(const Tensor &dy, const Tensor &x, const NormStatistics &s, const float *gamma,
                    const std::vector<double> &meanDy, const std::vector<double> &meanDyXhat,
                    const Window &owned);

} // namespace edgetrain::core::tiles

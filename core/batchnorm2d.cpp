#include "batchnorm2d.h"

#include "eigentypes.h"
#include "error.h"
#include "parallel.h"

#include <algorithm>
#include <cmath>

namespace edgetrain::core {

BatchNorm2d::BatchNorm2d(std::string name, int channels, double eps, double momentum)
    : Layer(std::move(name)), m_channels(channels), m_eps(eps), m_momentum(momentum)
{
    if (channels <= 0 || !(eps > 0.0) || !(momentum >= 0.0 && momentum <= 1.0))
        throw SpecError("layer '" + this->name() + "' (batchnorm2d): invalid options");
    m_weight = {"weight", Tensor::zeros({channels}, MemoryCategory::Weights),
                Tensor::zeros({channels}, MemoryCategory::Gradients)};
    m_bias = {"bias", Tensor::zeros({channels}, MemoryCategory::Weights),
              Tensor::zeros({channels}, MemoryCategory::Gradients)};
    m_runningMean = Tensor::zeros({channels}, MemoryCategory::Weights);
    m_runningVar = Tensor::zeros({channels}, MemoryCategory::Weights);
    resetState();
}

Shape BatchNorm2d::outputShape(const Shape &input) const
{
    if (input.rank() != 4 || input[1] != m_channels)
        shapeError("expected [N, " + std::to_string(m_channels) + ", H, W]", input);
    return input;
}

std::vector<Parameter *> BatchNorm2d::parameters()
{
    return {&m_weight, &m_bias};
}

std::vector<LayerBuffer> BatchNorm2d::buffers()
{
    return {{"running_mean", &m_runningMean, nullptr},
            {"running_var", &m_runningVar, nullptr},
            {"num_batches_tracked", nullptr, &m_batchesTracked}};
}

void BatchNorm2d::initialize(Rng &)
{
    resetState();
}

void BatchNorm2d::resetState()
{
    m_weight.value.fill(1.0f);
    m_bias.value.fill(0.0f);
    m_runningMean.fill(0.0f);
    m_runningVar.fill(1.0f);
    m_batchesTracked = 0;
}

double BatchNorm2d::forwardFlops(const Shape &input) const
{
    return 2.0 * double(input.numel());
}

Json BatchNorm2d::spec() const
{
    Json j;
    j.set("type", "batchnorm2d").set("eps", m_eps).set("momentum", m_momentum);
    return j;
}

void BatchNorm2d::trackStatistics(const double *mean, const double *variance, std::int64_t count)
{
    for (int c = 0; c < m_channels; ++c) {
        float &rm = m_runningMean.data()[c];
        float &rv = m_runningVar.data()[c];
        rm = float((1.0 - m_momentum) * rm + m_momentum * mean[c]);
        rv = float((1.0 - m_momentum) * rv +
                   m_momentum * variance[c] * double(count) / double(count - 1));
    }
    ++m_batchesTracked;
}

Tensor BatchNorm2d::forward(const Tensor &x, LayerCache *cache, const PassContext &ctx)
{
    return forwardImpl(x, cache, ctx, false, nullptr);
}

Tensor BatchNorm2d::forwardRelu(const Tensor &x, LayerCache *cache, const PassContext &ctx,
                                const Tensor *residual)
{
    return forwardImpl(x, cache, ctx, true, residual);
}

Tensor BatchNorm2d::backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                             bool needInputGrad)
{
    return backwardImpl(dy, nullptr, cache, ctx, needInputGrad);
}

Tensor BatchNorm2d::backwardRelu(const Tensor &dy, const Tensor &y, const LayerCache &cache,
                                 const PassContext &ctx, bool needInputGrad)
{
    if (y.shape() != dy.shape())
        shapeError("the ReLU's output of shape " + y.shape().toString() + " does not match",
                   dy.shape());
    return backwardImpl(dy, &y, cache, ctx, needInputGrad);
}

Tensor BatchNorm2d::forwardImpl(const Tensor &x, LayerCache *cache, const PassContext &ctx,
                                bool relu, const Tensor *residual)
{
    outputShape(x.shape());
    if (residual && residual->shape() != x.shape())
        shapeError("the residual of shape " + residual->shape().toString() + " does not match",
                   x.shape());
    const std::int64_t N = x.dim(0), C = m_channels, HW = x.dim(2) * x.dim(3);
    const std::int64_t M = N * HW;
    Tensor y(x.shape(), MemoryCategory::Activations);
    const float *gamma = m_weight.value.data();
    const float *beta = m_bias.value.data();
    Tensor stats;
    if (ctx.training) {
        stats = Tensor({2, C}, MemoryCategory::Activations); // mean, 1/std
        if (M < 2)
            shapeError("training needs more than one value per channel", x.shape());
    }
    const bool updateRunning = ctx.training && !ctx.recompute;
    if (y.isVirtual()) {
        if (cache)
            cache->tensors = {x, stats};
        return y;
    }
    const int channelWorkers = int(std::min<std::int64_t>(threadCount(), C));

#pragma omp parallel for schedule(static) num_threads(channelWorkers)
    for (std::int64_t c = 0; c < C; ++c) {
        float mean, invStd;
        if (ctx.training) {
            // One pass: sums of (x - s) and (x - s)^2 with s the channel's first value, which
            // keeps the E[x^2] - E[x]^2 form accurate when the mean is far from 0.
            const float shift = x.data()[c * HW];
            double sum = 0.0, sq = 0.0;
            for (std::int64_t n = 0; n < N; ++n) {
                const auto d = ConstArrayMap(x.data() + (n * C + c) * HW, HW) - shift;
                sum += d.sum();
                sq += d.square().sum();
            }
            const double mShifted = sum / double(M);
            const double m = mShifted + shift;
            const double var = std::max(0.0, sq / double(M) - mShifted * mShifted);
            mean = float(m);
            invStd = float(1.0 / std::sqrt(var + m_eps));
            stats.data()[c] = mean;
            stats.data()[C + c] = invStd;
            if (updateRunning) {
                float &rm = m_runningMean.data()[c];
                float &rv = m_runningVar.data()[c];
                rm = float((1.0 - m_momentum) * rm + m_momentum * m);
                rv = float((1.0 - m_momentum) * rv + m_momentum * var * double(M) / double(M - 1));
            }
        } else {
            mean = m_runningMean.data()[c];
            invStd = float(1.0 / std::sqrt(double(m_runningVar.data()[c]) + m_eps));
        }
        const float scale = gamma[c] * invStd;
        const float offset = beta[c] - mean * scale;
        for (std::int64_t n = 0; n < N; ++n) {
            const std::int64_t at = (n * C + c) * HW;
            const float *in = x.data() + at;
            float *out = y.data() + at;
            // forward() then a ReLU layer (and the residual block's sum before it), the values
            // never stored in between: the layer-by-layer results within float rounding.
            if (residual) {
                const float *r = residual->data() + at;
#pragma omp simd
                for (std::int64_t i = 0; i < HW; ++i) {
                    const float v = (in[i] * scale + offset) + r[i];
                    out[i] = v > 0.0f ? v : 0.0f;
                }
            } else if (relu) {
#pragma omp simd
                for (std::int64_t i = 0; i < HW; ++i) {
                    const float v = in[i] * scale + offset;
                    out[i] = v > 0.0f ? v : 0.0f;
                }
            } else {
                ArrayMap(out, HW) = ConstArrayMap(in, HW) * scale + offset;
            }
        }
    }
    if (updateRunning)
        ++m_batchesTracked;
    if (cache)
        cache->tensors = {x, stats};
    return y;
}

Tensor BatchNorm2d::backwardImpl(const Tensor &dy, const Tensor *mask, const LayerCache &cache,
                                 const PassContext &ctx, bool needInputGrad)
{
    const Tensor &x = cache.tensors.at(0);
    if (dy.shape() != x.shape())
        shapeError("gradient of shape " + dy.shape().toString() + " does not match", x.shape());
    const std::int64_t N = x.dim(0), C = m_channels, HW = x.dim(2) * x.dim(3);
    const std::int64_t M = N * HW;
    Tensor dx;
    if (needInputGrad)
        dx = Tensor(x.shape(), MemoryCategory::Activations);
    const float *gamma = m_weight.value.data();
    if (dy.isVirtual())
        return dx;
    const int channelWorkers = int(std::min<std::int64_t>(threadCount(), C));

#pragma omp parallel for schedule(static) num_threads(channelWorkers)
    for (std::int64_t c = 0; c < C; ++c) {
        float mean, invStd;
        if (ctx.training) {
            mean = cache.tensors.at(1).data()[c];
            invStd = cache.tensors.at(1).data()[C + c];
        } else {
            mean = m_runningMean.data()[c];
            invStd = float(1.0 / std::sqrt(double(m_runningVar.data()[c]) + m_eps));
        }
        // With a mask, dy counts only where the ReLU passed its input (y > 0): what the ReLU
        // layer's backward would have written, taken as it is read.
        double sumDy = 0.0, sumDyXhat = 0.0;
        for (std::int64_t n = 0; n < N; ++n) {
            const std::int64_t at = (n * C + c) * HW;
            if (mask) {
                const float *g = dy.data() + at, *y = mask->data() + at, *xs = x.data() + at;
                float s = 0.0f, sx = 0.0f;
#pragma omp simd reduction(+ : s, sx)
                for (std::int64_t i = 0; i < HW; ++i) {
                    const float gi = y[i] > 0.0f ? g[i] : 0.0f;
                    s += gi;
                    sx += gi * (xs[i] - mean);
                }
                sumDy += s;
                sumDyXhat += double(sx) * invStd;
            } else {
                const ConstArrayMap g(dy.data() + at, HW);
                sumDy += g.sum();
                sumDyXhat += double((g * (ConstArrayMap(x.data() + at, HW) - mean)).sum()) * invStd;
            }
        }
        m_weight.grad.data()[c] = float(sumDyXhat);
        m_bias.grad.data()[c] = float(sumDy);
        if (!needInputGrad)
            continue;
        const float k = gamma[c] * invStd;
        if (ctx.training) {
            // dx = gamma/std * (dy - mean(dy) - xhat * mean(dy * xhat))
            const float meanDy = float(sumDy / double(M));
            const float meanDyXhat = float(sumDyXhat / double(M));
            // dx = k * (dy - meanDy - (x - mean) * invStd * meanDyXhat), as a * dy + b * x + c0.
            const float a = k, b = -k * invStd * meanDyXhat;
            const float c0 = -k * meanDy + k * invStd * meanDyXhat * mean;
            for (std::int64_t n = 0; n < N; ++n) {
                const std::int64_t at = (n * C + c) * HW;
                if (mask) {
                    const float *g = dy.data() + at, *y = mask->data() + at, *xs = x.data() + at;
                    float *q = dx.data() + at;
#pragma omp simd
                    for (std::int64_t i = 0; i < HW; ++i)
                        q[i] = (y[i] > 0.0f ? g[i] : 0.0f) * a + xs[i] * b + c0;
                    continue;
                }
                ArrayMap(dx.data() + at, HW) = ConstArrayMap(dy.data() + at, HW) * a +
                                               ConstArrayMap(x.data() + at, HW) * b + c0;
            }
        } else {
            for (std::int64_t n = 0; n < N; ++n) {
                const std::int64_t at = (n * C + c) * HW;
                const float *g = dy.data() + at;
                float *q = dx.data() + at;
                if (mask) {
                    const float *y = mask->data() + at;
                    for (std::int64_t i = 0; i < HW; ++i)
                        q[i] = k * (y[i] > 0.0f ? g[i] : 0.0f);
                    continue;
                }
                for (std::int64_t i = 0; i < HW; ++i)
                    q[i] = k * g[i];
            }
        }
    }
    return dx;
}

} // namespace edgetrain::core

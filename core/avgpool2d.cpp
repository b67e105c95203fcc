#include "avgpool2d.h"

#include "error.h"
#include "parallel.h"

#include <algorithm>
#include <cstring>

namespace edgetrain::core {

AvgPool2d::AvgPool2d(std::string name, const Pool2dOptions &options)
    : Layer(std::move(name)), m_options(options)
{
    Internal::checkPoolOptions(this->name(), "avgpool2d", options);
}

Shape AvgPool2d::outputShape(const Shape &input) const
{
    return Internal::pooledShape(*this, m_options, input);
}

Json AvgPool2d::spec() const
{
    return Internal::poolSpec("avgpool2d", m_options);
}

Tensor AvgPool2d::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    const Shape out = outputShape(x.shape());
    const std::int64_t planes = out[0] * out[1];
    const int H = int(x.dim(2)), W = int(x.dim(3)), OH = int(out[2]), OW = int(out[3]);
    const int k = m_options.kernel, s = m_options.stride, pad = m_options.padding;
    const float scale = 1.0f / float(k * k);
    Tensor y(out, MemoryCategory::Activations);
    if (y.isVirtual()) {
        if (cache)
            cache->inputShape = x.shape();
        return y;
    }
#pragma omp parallel for schedule(static) num_threads(Internal::planeWorkers(planes))
    for (std::int64_t p = 0; p < planes; ++p) {
        const float *src = x.data() + p * H * W;
        float *dst = y.data() + p * OH * OW;
        for (int oh = 0; oh < OH; ++oh) {
            const int h0 = std::max(oh * s - pad, 0), h1 = std::min(oh * s - pad + k, H);
            for (int ow = 0; ow < OW; ++ow) {
                const int w0 = std::max(ow * s - pad, 0), w1 = std::min(ow * s - pad + k, W);
                float sum = 0.0f;
                for (int h = h0; h < h1; ++h)
                    for (int w = w0; w < w1; ++w)
                        sum += src[h * W + w];
                dst[oh * OW + ow] = sum * scale;
            }
        }
    }
    if (cache)
        cache->inputShape = x.shape();
    return y;
}

Tensor AvgPool2d::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                           bool needInputGrad)
{
    const Shape &in = cache.inputShape;
    if (dy.shape() != outputShape(in))
        shapeError("gradient of shape " + dy.shape().toString() + " does not match the output", in);
    if (!needInputGrad)
        return {};
    const std::int64_t planes = in[0] * in[1];
    const int H = int(in[2]), W = int(in[3]), OH = int(dy.dim(2)), OW = int(dy.dim(3));
    const int k = m_options.kernel, s = m_options.stride, pad = m_options.padding;
    const float scale = 1.0f / float(k * k);
    Tensor dx(in, MemoryCategory::Activations);
    if (dx.isVirtual())
        return dx;
#pragma omp parallel for schedule(static) num_threads(Internal::planeWorkers(planes))
    for (std::int64_t p = 0; p < planes; ++p) {
        float *d = dx.data() + p * H * W;
        std::memset(d, 0, sizeof(float) * std::size_t(H) * std::size_t(W));
        const float *g = dy.data() + p * OH * OW;
        for (int oh = 0; oh < OH; ++oh) {
            const int h0 = std::max(oh * s - pad, 0), h1 = std::min(oh * s - pad + k, H);
            for (int ow = 0; ow < OW; ++ow) {
                const int w0 = std::max(ow * s - pad, 0), w1 = std::min(ow * s - pad + k, W);
                const float v = g[oh * OW + ow] * scale;
                for (int h = h0; h < h1; ++h)
                    for (int w = w0; w < w1; ++w)
                        d[h * W + w] += v;
            }
        }
    }
    return dx;
}

} // namespace edgetrain::core

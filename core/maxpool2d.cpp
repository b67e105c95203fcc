#include "maxpool2d.h"

#include "error.h"
#include "parallel.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace edgetrain::core {

MaxPool2d::MaxPool2d(std::string name, const Pool2dOptions &options)
    : Layer(std::move(name)), m_options(options)
{
    Internal::checkPoolOptions(this->name(), "maxpool2d", options);
}

Shape MaxPool2d::outputShape(const Shape &input) const
{
    return Internal::pooledShape(*this, m_options, input);
}

Json MaxPool2d::spec() const
{
    return Internal::poolSpec("maxpool2d", m_options);
}

Tensor MaxPool2d::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    const Shape out = outputShape(x.shape());
    const std::int64_t planes = out[0] * out[1];
    const int H = int(x.dim(2)), W = int(x.dim(3)), OH = int(out[2]), OW = int(out[3]);
    const int k = m_options.kernel, s = m_options.stride, pad = m_options.padding;
    Tensor y(out, MemoryCategory::Activations);
    Tensor argmax;
    if (cache)
        argmax = Tensor(out, MemoryCategory::Activations); // int32 indices in the same bytes
    if (y.isVirtual()) {
        if (cache) {
            cache->tensors = {argmax};
            cache->inputShape = x.shape();
        }
        return y;
    }
#pragma omp parallel for schedule(static) num_threads(Internal::planeWorkers(planes))
    for (std::int64_t p = 0; p < planes; ++p) {
        const float *src = x.data() + p * H * W;
        float *dst = y.data() + p * OH * OW;
        std::int32_t *idx = cache ? argmax.intData() + p * OH * OW : nullptr;
        for (int oh = 0; oh < OH; ++oh) {
            const int h0 = std::max(oh * s - pad, 0), h1 = std::min(oh * s - pad + k, H);
            for (int ow = 0; ow < OW; ++ow) {
                const int w0 = std::max(ow * s - pad, 0), w1 = std::min(ow * s - pad + k, W);
                float best = -std::numeric_limits<float>::infinity();
                int where = h0 * W + w0;
                for (int h = h0; h < h1; ++h)
                    for (int w = w0; w < w1; ++w)
                        if (src[h * W + w] > best) {
                            best = src[h * W + w];
                            where = h * W + w;
                        }
                dst[oh * OW + ow] = best;
                if (idx)
                    idx[oh * OW + ow] = where;
            }
        }
    }
    if (cache) {
        cache->tensors = {argmax};
        cache->inputShape = x.shape();
    }
    return y;
}

Tensor MaxPool2d::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                           bool needInputGrad)
{
    const Tensor &argmax = cache.tensors.at(0);
    if (dy.shape() != argmax.shape())
        shapeError("gradient of shape " + dy.shape().toString() + " does not match the output",
                   cache.inputShape);
    if (!needInputGrad)
        return {};
    const Shape &in = cache.inputShape;
    const std::int64_t planes = in[0] * in[1];
    const std::int64_t inPlane = in[2] * in[3], outPlane = dy.dim(2) * dy.dim(3);
    Tensor dx(in, MemoryCategory::Activations);
    if (dx.isVirtual())
        return dx;
#pragma omp parallel for schedule(static) num_threads(Internal::planeWorkers(planes))
    for (std::int64_t p = 0; p < planes; ++p) {
        float *d = dx.data() + p * inPlane;
        std::memset(d, 0, sizeof(float) * std::size_t(inPlane));
        const float *g = dy.data() + p * outPlane;
        const std::int32_t *idx = argmax.intData() + p * outPlane;
        for (std::int64_t i = 0; i < outPlane; ++i)
            d[idx[i]] += g[i];
    }
    return dx;
}

} // namespace edgetrain::core

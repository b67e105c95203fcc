#include "pool2d.h"

#include "error.h"
#include "parallel.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace edgetrain::core {

namespace {

Shape pooledShape(const Layer &layer, const Pool2dOptions &o, const Shape &input)
{
    if (input.rank() != 4)
        throw ShapeError("layer '" + layer.name() + "' (" + std::string(layer.type()) +
                         "): expected [N, C, H, W]; got input of shape " + input.toString());
    if (input[2] + 2 * o.padding < o.kernel || input[3] + 2 * o.padding < o.kernel)
        throw ShapeError("layer '" + layer.name() + "' (" + std::string(layer.type()) +
                         "): input " + input.toString() + " is smaller than the window");
    return Shape{input[0], input[1], (input[2] + 2 * o.padding - o.kernel) / o.stride + 1,
                 (input[3] + 2 * o.padding - o.kernel) / o.stride + 1};
}

void checkOptions(const std::string &name, const char *type, const Pool2dOptions &o)
{
    if (o.kernel <= 0 || o.stride <= 0 || o.padding < 0 || 2 * o.padding > o.kernel)
        throw SpecError("layer '" + name + "' (" + type +
                        "): invalid options (kernel > 0, stride > 0, padding <= kernel / 2)");
}

Json poolSpec(const char *type, const Pool2dOptions &o)
{
    Json j;
    j.set("type", type).set("kernel", o.kernel).set("stride", o.stride).set("padding", o.padding);
    return j;
}

int planeWorkers(std::int64_t planes)
{
    return int(std::clamp<std::int64_t>(planes, 1, threadCount()));
}

} // namespace

MaxPool2d::MaxPool2d(std::string name, const Pool2dOptions &options)
    : Layer(std::move(name)), m_options(options)
{
    checkOptions(this->name(), "maxpool2d", options);
}

Shape MaxPool2d::outputShape(const Shape &input) const
{
    return pooledShape(*this, m_options, input);
}

Json MaxPool2d::spec() const
{
    return poolSpec("maxpool2d", m_options);
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
#pragma omp parallel for schedule(static) num_threads(planeWorkers(planes))
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
#pragma omp parallel for schedule(static) num_threads(planeWorkers(planes))
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

AvgPool2d::AvgPool2d(std::string name, const Pool2dOptions &options)
    : Layer(std::move(name)), m_options(options)
{
    checkOptions(this->name(), "avgpool2d", options);
}

Shape AvgPool2d::outputShape(const Shape &input) const
{
    return pooledShape(*this, m_options, input);
}

Json AvgPool2d::spec() const
{
    return poolSpec("avgpool2d", m_options);
}

Tensor AvgPool2d::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    const Shape out = outputShape(x.shape());
    const std::int64_t planes = out[0] * out[1];
    const int H = int(x.dim(2)), W = int(x.dim(3)), OH = int(out[2]), OW = int(out[3]);
    const int k = m_options.kernel, s = m_options.stride, pad = m_options.padding;
    const float scale = 1.0f / float(k * k);
    Tensor y(out, MemoryCategory::Activations);
#pragma omp parallel for schedule(static) num_threads(planeWorkers(planes))
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
#pragma omp parallel for schedule(static) num_threads(planeWorkers(planes))
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

Shape GlobalAvgPool::outputShape(const Shape &input) const
{
    if (input.rank() != 4)
        shapeError("expected [N, C, H, W]", input);
    return Shape{input[0], input[1], 1, 1};
}

Json GlobalAvgPool::spec() const
{
    Json j;
    j.set("type", "global_avg_pool");
    return j;
}

Tensor GlobalAvgPool::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    const Shape out = outputShape(x.shape());
    const std::int64_t planes = out[0] * out[1], HW = x.dim(2) * x.dim(3);
    Tensor y(out, MemoryCategory::Activations);
    for (std::int64_t p = 0; p < planes; ++p) {
        const float *src = x.data() + p * HW;
        float sum = 0.0f;
        for (std::int64_t i = 0; i < HW; ++i)
            sum += src[i];
        y.data()[p] = sum / float(HW);
    }
    if (cache)
        cache->inputShape = x.shape();
    return y;
}

Tensor GlobalAvgPool::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                               bool needInputGrad)
{
    const Shape &in = cache.inputShape;
    if (dy.numel() != in[0] * in[1])
        shapeError("gradient of shape " + dy.shape().toString() + " does not match the output", in);
    if (!needInputGrad)
        return {};
    const std::int64_t planes = in[0] * in[1], HW = in[2] * in[3];
    Tensor dx(in, MemoryCategory::Activations);
    for (std::int64_t p = 0; p < planes; ++p) {
        const float v = dy.data()[p] / float(HW);
        std::fill(dx.data() + p * HW, dx.data() + (p + 1) * HW, v);
    }
    return dx;
}

} // namespace edgetrain::core

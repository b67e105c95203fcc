#include "upsample2d.h"

#include "error.h"
#include "pool2doptions.h"

#include <algorithm>

namespace edgetrain::core {

Upsample2d::Upsample2d(std::string name, int factor) : Layer(std::move(name)), m_factor(factor)
{
    if (factor < 1 || factor > 16)
        throw SpecError("layer '" + this->name() +
                        "' (upsample2d): factor must be in [1, 16], got " + std::to_string(factor));
}

Shape Upsample2d::outputShape(const Shape &input) const
{
    if (input.rank() != 4)
        shapeError("expected [N, C, H, W]", input);
    return Shape{input[0], input[1], input[2] * m_factor, input[3] * m_factor};
}

double Upsample2d::forwardFlops(const Shape &input) const
{
    return double(outputShape(input).numel()); // one copy per output value
}

Json Upsample2d::spec() const
{
    Json j;
    j.set("type", "upsample2d").set("factor", m_factor);
    return j;
}

Tensor Upsample2d::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    const Shape out = outputShape(x.shape());
    Tensor y(out, MemoryCategory::Activations);
    if (cache) {
        cache->tensors.clear();
        cache->inputShape = x.shape();
    }
    if (y.isVirtual())
        return y;
    const std::int64_t planes = out[0] * out[1];
    const int H = int(x.dim(2)), W = int(x.dim(3)), f = m_factor, OW = W * f;
#pragma omp parallel for schedule(static) num_threads(Internal::planeWorkers(planes))
    for (std::int64_t p = 0; p < planes; ++p) {
        const float *src = x.data() + p * H * W;
        float *dst = y.data() + p * std::int64_t(H) * W * f * f;
        for (int h = 0; h < H; ++h) {
            float *row = dst + std::int64_t(h) * f * OW;
            for (int w = 0; w < W; ++w)
                for (int j = 0; j < f; ++j)
                    row[w * f + j] = src[h * W + w];
            for (int i = 1; i < f; ++i)
                std::copy(row, row + OW, row + std::int64_t(i) * OW);
        }
    }
    return y;
}

Tensor Upsample2d::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                            bool needInputGrad)
{
    const Shape &in = cache.inputShape;
    if (dy.shape() != outputShape(in))
        shapeError("gradient of shape " + dy.shape().toString() + " does not match the output", in);
    if (!needInputGrad)
        return {};
    Tensor dx(in, MemoryCategory::Activations);
    if (dx.isVirtual())
        return dx;
    const std::int64_t planes = in[0] * in[1];
    const int H = int(in[2]), W = int(in[3]), f = m_factor, OW = W * f;
#pragma omp parallel for schedule(static) num_threads(Internal::planeWorkers(planes))
    for (std::int64_t p = 0; p < planes; ++p) {
        const float *g = dy.data() + p * std::int64_t(H) * W * f * f;
        float *d = dx.data() + p * H * W;
        for (int h = 0; h < H; ++h)
            for (int w = 0; w < W; ++w) {
                float s = 0.0f;
                for (int i = 0; i < f; ++i) {
                    const float *row = g + (std::int64_t(h) * f + i) * OW + std::int64_t(w) * f;
                    for (int j = 0; j < f; ++j)
                        s += row[j];
                }
                d[h * W + w] = s;
            }
    }
    return dx;
}

} // namespace edgetrain::core

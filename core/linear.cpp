#include "linear.h"

#include "error.h"
#include "gemm.h"

#include <cmath>

namespace edgetrain::core {

Linear::Linear(std::string name, std::int64_t inFeatures, std::int64_t outFeatures, bool bias)
    : Layer(std::move(name)), m_in(inFeatures), m_out(outFeatures), m_hasBias(bias)
{
    if (inFeatures <= 0 || outFeatures <= 0)
        throw SpecError("layer '" + this->name() + "' (linear): invalid features " +
                        std::to_string(inFeatures) + "->" + std::to_string(outFeatures));
    m_weight = {"weight", Tensor::zeros({m_out, m_in}, MemoryCategory::Weights),
                Tensor::zeros({m_out, m_in}, MemoryCategory::Gradients)};
    if (bias)
        m_bias = {"bias", Tensor::zeros({m_out}, MemoryCategory::Weights),
                  Tensor::zeros({m_out}, MemoryCategory::Gradients)};
}

Shape Linear::outputShape(const Shape &input) const
{
    if (input.rank() < 2 || input.numel() != input[0] * m_in)
        shapeError("expected [N, " + std::to_string(m_in) + "]", input);
    return Shape{input[0], m_out};
}

std::vector<Parameter *> Linear::parameters()
{
    if (m_hasBias)
        return {&m_weight, &m_bias};
    return {&m_weight};
}

void Linear::initialize(Rng &rng)
{
    const float bound = 1.0f / std::sqrt(float(m_in));
    if (m_weight.value.isVirtual())
        return;
    float *w = m_weight.value.data();
    for (std::int64_t i = 0; i < m_weight.value.numel(); ++i)
        w[i] = rng.uniform(-bound, bound);
    if (m_hasBias) {
        float *b = m_bias.value.data();
        for (std::int64_t i = 0; i < m_out; ++i)
            b[i] = rng.uniform(-bound, bound);
    }
}

double Linear::forwardFlops(const Shape &input) const
{
    return 2.0 * double(input[0]) * double(m_in) * double(m_out);
}

Json Linear::spec() const
{
    Json j;
    j.set("type", "linear").set("out_features", m_out).set("bias", m_hasBias);
    return j;
}

Tensor Linear::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    const Shape out = outputShape(x.shape());
    const std::int64_t N = out[0];
    Tensor y(out, MemoryCategory::Activations);
    if (y.isVirtual()) {
        if (cache)
            cache->tensors = {x};
        return y;
    }
    gemm(false, true, N, m_out, m_in, 1.0f, x.data(), m_in, m_weight.value.data(), m_in, 0.0f,
         y.data(), m_out);
    if (m_hasBias) {
        const float *b = m_bias.value.data();
        for (std::int64_t n = 0; n < N; ++n) {
            float *row = y.data() + n * m_out;
            for (std::int64_t o = 0; o < m_out; ++o)
                row[o] += b[o];
        }
    }
    if (cache)
        cache->tensors = {x};
    return y;
}

Tensor Linear::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                        bool needInputGrad)
{
    const Tensor &x = cache.tensors.at(0);
    const std::int64_t N = x.dim(0);
    if (dy.shape() != Shape{N, m_out})
        shapeError("gradient of shape " + dy.shape().toString() + " does not match the output",
                   x.shape());
    if (dy.isVirtual())
        return needInputGrad ? Tensor(x.shape(), MemoryCategory::Activations) : Tensor();
    // dW[out, in] = dy^T[out, N] * x[N, in]
    gemm(true, false, m_out, m_in, N, 1.0f, dy.data(), m_out, x.data(), m_in, 0.0f,
         m_weight.grad.data(), m_in);
    if (m_hasBias) {
        float *db = m_bias.grad.data();
        std::fill(db, db + m_out, 0.0f);
        for (std::int64_t n = 0; n < N; ++n) {
            const float *row = dy.data() + n * m_out;
            for (std::int64_t o = 0; o < m_out; ++o)
                db[o] += row[o];
        }
    }
    if (!needInputGrad)
        return {};
    Tensor dx(x.shape(), MemoryCategory::Activations);
    gemm(false, false, N, m_in, m_out, 1.0f, dy.data(), m_out, m_weight.value.data(), m_in, 0.0f,
         dx.data(), m_in);
    return dx;
}

} // namespace edgetrain::core

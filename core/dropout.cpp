#include "dropout.h"

#include "error.h"
#include "fieldcheck.h"
#include "numbertext.h"

namespace edgetrain::core {

Dropout::Dropout(std::string name, double p)
    : Layer(std::move(name)), m_p(p), m_salt(stableHash(this->name()))
{
    if (!(p >= 0.0 && p < 1.0))
        throw SpecError((this->name().empty() ? std::string("dropout: ")
                                              : "layer '" + this->name() + "' (dropout): ") +
                        FieldCheck::mustBe("p", "a number from 0 up to (not including) 1",
                                           NumberText::format(p)));
}

void Dropout::applyMask(const float *in, float *out, std::int64_t n, const PassContext &ctx) const
{
    const float scale = float(1.0 / (1.0 - m_p));
    const auto threshold = std::uint64_t(m_p * 18446744073709551616.0); // p * 2^64
    const std::uint64_t base = mixHash(ctx.seed, ctx.step, m_salt);
#pragma omp parallel for schedule(static) if (n > 65536)
    for (std::int64_t i = 0; i < n; ++i) {
        const bool drop = mixHash(base, std::uint64_t(i), 0x5eed) < threshold;
        out[i] = drop ? 0.0f : in[i] * scale;
    }
}

Tensor Dropout::forward(const Tensor &x, LayerCache *cache, const PassContext &ctx)
{
    if (cache)
        cache->inputShape = x.shape();
    if (!ctx.training || m_p == 0.0)
        return x;
    Tensor y(x.shape(), MemoryCategory::Activations);
    if (!y.isVirtual())
        applyMask(x.data(), y.data(), x.numel(), ctx);
    return y;
}

Tensor Dropout::backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                         bool needInputGrad)
{
    if (dy.shape() != cache.inputShape)
        shapeError("gradient of shape " + dy.shape().toString() + " does not match",
                   cache.inputShape);
    if (!needInputGrad)
        return {};
    if (!ctx.training || m_p == 0.0)
        return dy;
    Tensor dx(dy.shape(), MemoryCategory::Activations);
    if (!dx.isVirtual())
        applyMask(dy.data(), dx.data(), dy.numel(), ctx);
    return dx;
}

Json Dropout::spec() const
{
    Json j;
    j.set("type", "dropout").set("p", m_p);
    return j;
}

} // namespace edgetrain::core

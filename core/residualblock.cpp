#include "residualblock.h"

#include "error.h"
#include "parallel.h"
#include "relu.h"

#include <algorithm>
#include <cstring>

namespace edgetrain::core {

namespace {
// Stage-cache layout: layers [conv1, bn1, conv2, bn2, (conv3, bn3), (proj conv, proj bn)],
// tensors [input, relu outputs of the inner convs..., block output].
constexpr std::size_t kInput = 0;

int elementWorkers(std::int64_t n)
{
    // Below ~32k values a parallel region costs more than it saves.
    return int(std::clamp<std::int64_t>(n / 32768, 1, threadCount()));
}

/** dst += src, element-wise, threaded. */
void addInto(Tensor &dst, const Tensor &src)
{
    if (dst.isVirtual() || src.isVirtual())
        return;
    float *d = dst.data();
    const float *s = src.data();
    const std::int64_t n = dst.numel();
#pragma omp parallel for schedule(static) num_threads(elementWorkers(n))
    for (std::int64_t i = 0; i < n; ++i)
        d[i] += s[i];
}
} // namespace

std::string_view shortcutName(Shortcut s)
{
    switch (s) {
    case Shortcut::Identity:
        return "identity";
    case Shortcut::PadA:
        return "pad";
    case Shortcut::Projection:
        return "projection";
    }
    return "identity";
}

ResidualBlock::ResidualBlock(std::string name, int inChannels, const Options &options)
    : Stage(std::move(name)), m_inChannels(inChannels), m_options(options)
{
    if (options.out_channels <= 0 || options.stride <= 0 || inChannels <= 0)
        throw SpecError("block '" + this->name() + "': invalid channels or stride");
    const bool sameShape = inChannels == options.out_channels && options.stride == 1;
    if (options.shortcut == Shortcut::Identity && !sameShape)
        throw SpecError("block '" + this->name() + "': an identity shortcut needs equal shapes (" +
                        std::to_string(inChannels) + "->" + std::to_string(options.out_channels) +
                        " channels, stride " + std::to_string(options.stride) +
                        "); use shortcut \"pad\" or \"projection\"");
    if (options.shortcut == Shortcut::PadA && options.out_channels < inChannels)
        throw SpecError("block '" + this->name() + "': a pad shortcut cannot reduce channels");

    auto conv = [&](int in, int out, int k, int stride, const char *label) {
        Conv2dOptions o;
        o.out_channels = out;
        o.kernel = k;
        o.stride = stride;
        o.padding = k / 2;
        o.bias = false;
        m_convs.push_back(std::make_unique<Conv2d>(label, in, o));
    };
    if (options.kind == Kind::Basic) {
        conv(inChannels, options.out_channels, 3, options.stride, "conv1");
        conv(options.out_channels, options.out_channels, 3, 1, "conv2");
        m_norms.push_back(std::make_unique<BatchNorm2d>("bn1", options.out_channels));
        m_norms.push_back(std::make_unique<BatchNorm2d>("bn2", options.out_channels));
    } else {
        if (m_options.width <= 0)
            m_options.width = std::max(1, options.out_channels / 4);
        const int w = m_options.width;
        conv(inChannels, w, 1, 1, "conv1");
        conv(w, w, 3, options.stride, "conv2");
        conv(w, options.out_channels, 1, 1, "conv3");
        m_norms.push_back(std::make_unique<BatchNorm2d>("bn1", w));
        m_norms.push_back(std::make_unique<BatchNorm2d>("bn2", w));
        m_norms.push_back(std::make_unique<BatchNorm2d>("bn3", options.out_channels));
    }
    if (options.shortcut == Shortcut::Projection) {
        Conv2dOptions o;
        o.out_channels = options.out_channels;
        o.kernel = 1;
        o.stride = options.stride;
        o.bias = false;
        m_projConv = std::make_unique<Conv2d>("downsample.0", inChannels, o);
        m_projNorm = std::make_unique<BatchNorm2d>("downsample.1", options.out_channels);
    }
}

std::string_view ResidualBlock::type() const
{
    return m_options.kind == Kind::Basic ? "basic_block" : "bottleneck";
}

Shape ResidualBlock::outputShape(const Shape &input) const
{
    Shape s = input;
    for (std::size_t i = 0; i < m_convs.size(); ++i)
        s = m_norms[i]->outputShape(m_convs[i]->outputShape(s));
    return s;
}

Tensor ResidualBlock::shortcutForward(const Tensor &x, StageCache *cache, const PassContext &ctx)
{
    const std::size_t proj = m_convs.size() * 2; // cache index of the projection conv
    switch (m_options.shortcut) {
    case Shortcut::Identity:
        return x;
    case Shortcut::Projection: {
        Tensor h = m_projConv->forward(x, cache ? &cache->layers[proj] : nullptr, ctx);
        return m_projNorm->forward(h, cache ? &cache->layers[proj + 1] : nullptr, ctx);
    }
    case Shortcut::PadA: {
        const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
        const int s = m_options.stride;
        const std::int64_t OC = m_options.out_channels, OH = (H + s - 1) / s, OW = (W + s - 1) / s;
        const std::int64_t before = (OC - C) / 2;
        Tensor y = Tensor::zeros({N, OC, OH, OW}, MemoryCategory::Activations);
        if (y.isVirtual())
            return y;
#pragma omp parallel for schedule(static) num_threads(elementWorkers(y.numel()))
        for (std::int64_t n = 0; n < N; ++n)
            for (std::int64_t c = 0; c < C; ++c) {
                const float *src = x.data() + (n * C + c) * H * W;
                float *dst = y.data() + (n * OC + c + before) * OH * OW;
                for (std::int64_t h = 0; h < OH; ++h)
                    for (std::int64_t w = 0; w < OW; ++w)
                        dst[h * OW + w] = src[h * s * W + w * s];
            }
        return y;
    }
    }
    return x;
}

void ResidualBlock::shortcutBackward(const Tensor &dsum, const StageCache &cache,
                                     const PassContext &ctx, Tensor &dx)
{
    const Tensor &x = cache.tensors[kInput];
    const std::size_t proj = m_convs.size() * 2; // cache index of the projection conv
    Tensor part;
    switch (m_options.shortcut) {
    case Shortcut::Identity:
        part = dsum;
        break;
    case Shortcut::Projection: {
        Tensor g = m_projNorm->backward(dsum, cache.layers[proj + 1], ctx, true);
        part = m_projConv->backward(g, cache.layers[proj], ctx, true);
        break;
    }
    case Shortcut::PadA: {
        const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
        const int s = m_options.stride;
        const std::int64_t OC = dsum.dim(1), OH = dsum.dim(2), OW = dsum.dim(3);
        const std::int64_t before = (OC - C) / 2;
        if (!dx.defined())
            dx = Tensor::zeros(x.shape(), MemoryCategory::Activations);
        if (dx.isVirtual())
            return;
#pragma omp parallel for schedule(static) num_threads(elementWorkers(dx.numel()))
        for (std::int64_t b = 0; b < N; ++b)
            for (std::int64_t c = 0; c < C; ++c) {
                const float *src = dsum.data() + (b * OC + c + before) * OH * OW;
                float *dst = dx.data() + (b * C + c) * H * W;
                for (std::int64_t h = 0; h < OH; ++h)
                    for (std::int64_t w = 0; w < OW; ++w)
                        dst[h * s * W + w * s] += src[h * OW + w];
            }
        return;
    }
    }
    if (!dx.defined()) {
        dx = part.clone(MemoryCategory::Activations);
        return;
    }
    addInto(dx, part);
}

Tensor ResidualBlock::forward(const Tensor &x, StageCache *cache, const PassContext &ctx)
{
    outputShape(x.shape()); // validates
    const std::size_t convs = m_convs.size();
    if (cache) {
        cache->layers.assign(convs * 2 + (m_projConv ? 2 : 0), LayerCache{});
        cache->tensors.clear();
        cache->tensors.push_back(x);
    }
    const bool fused = fusedStages();
    Tensor h = x;
    for (std::size_t i = 0; i < convs; ++i) {
        h = m_convs[i]->forward(h, cache ? &cache->layers[2 * i] : nullptr, ctx);
        LayerCache *normCache = cache ? &cache->layers[2 * i + 1] : nullptr;
        if (fused) {
            if (i + 1 < convs) {
                h = m_norms[i]->forwardRelu(h, normCache, ctx);
                if (cache)
                    cache->tensors.push_back(h);
                continue;
            }
            // The block's end in one pass: out = relu(bn(h) + shortcut).
            const Tensor shortcut = shortcutForward(x, cache, ctx);
            Tensor out = m_norms[i]->forwardRelu(h, normCache, ctx, &shortcut);
            if (cache)
                cache->tensors.push_back(out);
            return out;
        }
        h = m_norms[i]->forward(h, normCache, ctx);
        if (i + 1 < convs) {
            Tensor r(h.shape(), MemoryCategory::Activations);
            Internal::reluForward(h.data(), r.data(), h.numel());
            h = r;
            if (cache)
                cache->tensors.push_back(h);
        }
    }
    const Tensor shortcut = shortcutForward(x, cache, ctx);
    // out = relu(h + shortcut); kept for backward (the next stage keeps it as its input anyway).
    Tensor out(h.shape(), MemoryCategory::Activations);
    if (!out.isVirtual()) {
        float *o = out.data();
        const float *a = h.data();
        const float *b = shortcut.data();
        const std::int64_t n = out.numel();
#pragma omp parallel for schedule(static) num_threads(elementWorkers(n))
        for (std::int64_t i = 0; i < n; ++i) {
            const float v = a[i] + b[i];
            o[i] = v > 0.0f ? v : 0.0f;
        }
    }
    if (cache)
        cache->tensors.push_back(out);
    return out;
}

Tensor ResidualBlock::backward(const Tensor &dy, const StageCache &cache, const PassContext &ctx,
                               bool needInputGrad)
{
    const std::size_t convs = m_convs.size();
    const Tensor &out = cache.tensors.back();
    if (dy.shape() != out.shape())
        throw ShapeError("block '" + name() + "': gradient of shape " + dy.shape().toString() +
                         " does not match the output " + out.shape().toString());
    Tensor dsum(out.shape(), MemoryCategory::Activations);
    Internal::reluBackward(dy.data(), out.data(), dsum.data(), out.numel());

    const bool fused = fusedStages();
    Tensor g = dsum;
    for (std::size_t i = convs; i-- > 0;) {
        if (i + 1 < convs && fused) {
            g = m_norms[i]->backwardRelu(g, cache.tensors[1 + i], cache.layers[2 * i + 1], ctx,
                                         true);
            g = m_convs[i]->backward(g, cache.layers[2 * i], ctx, i > 0 || needInputGrad);
            continue;
        }
        if (i + 1 < convs) {
            const Tensor &r = cache.tensors[1 + i];
            Tensor d(r.shape(), MemoryCategory::Activations);
            Internal::reluBackward(g.data(), r.data(), d.data(), r.numel());
            g = d;
        }
        g = m_norms[i]->backward(g, cache.layers[2 * i + 1], ctx, true);
        g = m_convs[i]->backward(g, cache.layers[2 * i], ctx, i > 0 || needInputGrad);
    }
    if (!needInputGrad) {
        if (m_options.shortcut == Shortcut::Projection) {
            Tensor unused;
            shortcutBackward(dsum, cache, ctx, unused);
        }
        return {};
    }
    Tensor dx = g;
    if (m_options.shortcut == Shortcut::Identity) {
        // g is a fresh buffer from conv1's backward: add the shortcut gradient in place.
        addInto(dx, dsum);
        return dx;
    }
    shortcutBackward(dsum, cache, ctx, dx);
    return dx;
}

void ResidualBlock::forEachLayer(const std::function<void(const std::string &, Layer &)> &fn)
{
    for (std::size_t i = 0; i < m_convs.size(); ++i) {
        fn(childName(m_convs[i]->name()), *m_convs[i]);
        fn(childName(m_norms[i]->name()), *m_norms[i]);
    }
    if (m_projConv) {
        fn(childName(m_projConv->name()), *m_projConv);
        fn(childName(m_projNorm->name()), *m_projNorm);
    }
}

double ResidualBlock::forwardFlops(const Shape &input) const
{
    double flops = 0.0;
    Shape s = input;
    for (std::size_t i = 0; i < m_convs.size(); ++i) {
        flops += m_convs[i]->forwardFlops(s);
        s = m_convs[i]->outputShape(s);
        flops += m_norms[i]->forwardFlops(s);
    }
    if (m_projConv)
        flops += m_projConv->forwardFlops(input);
    return flops + 2.0 * double(s.numel());
}

Json ResidualBlock::spec() const
{
    Json j;
    j.set("type", std::string(type())).set("name", name());
    j.set("out_channels", m_options.out_channels).set("stride", m_options.stride);
    if (m_options.kind == Kind::Bottleneck)
        j.set("width", m_options.width);
    j.set("shortcut", std::string(shortcutName(m_options.shortcut)));
    return j;
}

} // namespace edgetrain::core

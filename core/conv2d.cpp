#include "conv2d.h"

#include "dnnlconvolution.h"
#include "eigentypes.h"
#include "error.h"
#include "gemm.h"
#include "parallel.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#ifdef _OPENMP
#include <omp.h>
#endif

namespace edgetrain::core {

namespace {
ConvBackend initialConvBackend()
{
    if (const char *env = std::getenv("EDGETRAIN_CONV"); env && *env) {
        const ConvBackend backend = parseConvBackend(env);
        if (backend != ConvBackend::Im2col && !Internal::DnnlConvolution::available())
            throw SpecError("EDGETRAIN_CONV=" + std::string(env) + ", but oneDNN is not built in");
        return backend;
    }
    return Internal::DnnlConvolution::available() ? ConvBackend::Dnnl : ConvBackend::Im2col;
}

std::atomic<ConvBackend> &currentConvBackend()
{
    static std::atomic<ConvBackend> backend{initialConvBackend()};
    return backend;
}
} // namespace

std::vector<ConvBackend> availableConvBackends()
{
    if (Internal::DnnlConvolution::available())
        return {ConvBackend::Im2col, ConvBackend::Dnnl, ConvBackend::Winograd};
    return {ConvBackend::Im2col};
}

ConvBackend convBackend()
{
    return currentConvBackend().load();
}

void setConvBackend(ConvBackend backend)
{
    if (backend != ConvBackend::Im2col && !Internal::DnnlConvolution::available())
        throw SpecError("convolution backend '" + std::string(convBackendName(backend)) +
                        "' is not built in (install libdnnl-dev and rebuild)");
    currentConvBackend().store(backend);
}

std::string_view convBackendName(ConvBackend backend)
{
    switch (backend) {
    case ConvBackend::Im2col:
        return "im2col";
    case ConvBackend::Dnnl:
        return "dnnl";
    case ConvBackend::Winograd:
        return "winograd";
    }
    return "im2col";
}

ConvBackend parseConvBackend(std::string_view name)
{
    if (name == "im2col")
        return ConvBackend::Im2col;
    if (name == "dnnl")
        return ConvBackend::Dnnl;
    if (name == "winograd")
        return ConvBackend::Winograd;
    throw SpecError("unknown convolution backend '" + std::string(name) +
                    "' (expected im2col, dnnl or winograd)");
}

namespace Internal {

namespace {
/** Short contiguous copies (rows of 8 to 64 floats): a vector loop with no alignment peeling
 *  and no call into memcpy. */
inline void copyRow(float *__restrict dst, const float *__restrict src, int n)
{
#pragma omp simd
    for (int i = 0; i < n; ++i)
        dst[i] = src[i];
}

inline void zeroRow(float *__restrict dst, std::int64_t n)
{
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i)
        dst[i] = 0.0f;
}
} // namespace

void im2col(const float *image, int channels, int height, int width, int kernel, int stride,
            int padding, int outHeight, int outWidth, float *col, float *scratch, int dilation)
{
    // Zero-pad the image once, so that every row of col is a plain copy without bounds logic.
    const float *src = image;
    int hp = height, wp = width;
    if (padding > 0) {
        hp = height + 2 * padding;
        wp = width + 2 * padding;
        for (int c = 0; c < channels; ++c) {
            float *plane = scratch + std::int64_t(c) * hp * wp;
            zeroRow(plane, std::int64_t(padding) * wp);
            for (int h = 0; h < height; ++h) {
                float *row = plane + std::int64_t(h + padding) * wp;
                zeroRow(row, padding);
                copyRow(row + padding, image + (std::int64_t(c) * height + h) * width, width);
                zeroRow(row + padding + width, padding);
            }
            zeroRow(plane + std::int64_t(height + padding) * wp, std::int64_t(padding) * wp);
        }
        src = scratch;
    }
    float *dst = col;
    for (int c = 0; c < channels; ++c) {
        for (int ki = 0; ki < kernel; ++ki) {
            for (int kj = 0; kj < kernel; ++kj) {
                const float *base =
                    src + (std::int64_t(c) * hp + std::int64_t(ki) * dilation) * wp + kj * dilation;
                for (int oh = 0; oh < outHeight; ++oh, dst += outWidth) {
                    const float *row = base + std::int64_t(oh) * stride * wp;
                    if (stride == 1) {
                        copyRow(dst, row, outWidth);
                    } else {
                        for (int ow = 0; ow < outWidth; ++ow)
                            dst[ow] = row[ow * stride];
                    }
                }
            }
        }
    }
}

std::int64_t im2colScratchSize(int channels, int height, int width, int padding)
{
    return padding > 0 ? std::int64_t(channels) * (height + 2 * padding) * (width + 2 * padding)
                       : 0;
}

void col2imAdd(const float *col, int channels, int height, int width, int kernel, int stride,
               int padding, int outHeight, int outWidth, float *image, int dilation)
{
    const std::int64_t plane = std::int64_t(outHeight) * outWidth;
    for (int c = 0; c < channels; ++c) {
        float *dstImage = image + std::int64_t(c) * height * width;
        for (int ki = 0; ki < kernel; ++ki) {
            for (int kj = 0; kj < kernel; ++kj) {
                const float *src = col + (std::int64_t(c * kernel + ki) * kernel + kj) * plane;
                const int shift = kj * dilation - padding;
                const int lo =
                    std::clamp(shift < 0 ? (-shift + stride - 1) / stride : 0, 0, outWidth);
                const int hi = std::clamp(
                    width - shift > 0 ? (width - shift + stride - 1) / stride : 0, lo, outWidth);
                for (int oh = 0; oh < outHeight; ++oh, src += outWidth) {
                    const int ih = oh * stride - padding + ki * dilation;
                    if (ih < 0 || ih >= height)
                        continue;
                    float *row = dstImage + std::int64_t(ih) * width + shift;
                    if (stride == 1) {
                        for (int ow = lo; ow < hi; ++ow)
                            row[ow] += src[ow];
                    } else {
                        for (int ow = lo; ow < hi; ++ow)
                            row[ow * stride] += src[ow];
                    }
                }
            }
        }
    }
}

} // namespace Internal

Conv2d::Conv2d(std::string name, int inChannels, const Conv2dOptions &options)
    : Layer(std::move(name)), m_inChannels(inChannels), m_options(options)
{
    if (inChannels <= 0 || options.out_channels <= 0 || options.kernel <= 0 ||
        options.stride <= 0 || options.padding < 0 || options.padding >= options.kernel + 64 ||
        options.dilation <= 0 || options.dilation > 64)
        throw SpecError("layer '" + this->name() + "' (conv2d): invalid options (channels " +
                        std::to_string(inChannels) + "->" + std::to_string(options.out_channels) +
                        ", kernel " + std::to_string(options.kernel) + ", stride " +
                        std::to_string(options.stride) + ", padding " +
                        std::to_string(options.padding) + ", dilation " +
                        std::to_string(options.dilation) + ")");
    if (!options.bias_init.empty() &&
        (!options.bias ||
         (options.bias_init.size() != 1 && int(options.bias_init.size()) != options.out_channels)))
        throw SpecError("layer '" + this->name() + "' (conv2d): field \"bias_init\" must be " +
                        (options.bias ? "one number or one per output channel (" +
                                            std::to_string(options.out_channels) + "), got " +
                                            std::to_string(options.bias_init.size())
                                      : std::string("absent when \"bias\" is false")));
    const Shape wshape{options.out_channels, inChannels, options.kernel, options.kernel};
    m_weight = {"weight", Tensor::zeros(wshape, MemoryCategory::Weights),
                Tensor::zeros(wshape, MemoryCategory::Gradients)};
    if (options.bias)
        m_bias = {"bias", Tensor::zeros({options.out_channels}, MemoryCategory::Weights),
                  Tensor::zeros({options.out_channels}, MemoryCategory::Gradients)};
}

Conv2d::Geometry Conv2d::geometry(const Shape &input, const Shape &output) const
{
    Geometry g;
    g.N = output[0];
    g.C = m_inChannels;
    g.H = int(input[2]);
    g.W = int(input[3]);
    g.O = m_options.out_channels;
    g.OH = int(output[2]);
    g.OW = int(output[3]);
    g.K = std::int64_t(g.C) * m_options.kernel * m_options.kernel;
    g.P = std::int64_t(g.OH) * g.OW;
    g.inStride = std::int64_t(g.C) * g.H * g.W;
    return g;
}

bool Conv2d::isPointwise() const
{
    return m_options.kernel == 1 && m_options.stride == 1 && m_options.padding == 0;
}

int Conv2d::reach() const
{
    return m_options.dilation * (m_options.kernel - 1) + 1;
}

Internal::ConvShape Conv2d::convShape(const Shape &input) const
{
    const Geometry g = geometry(input, outputShape(input));
    Internal::ConvShape shape;
    shape.N = g.N;
    shape.C = g.C;
    shape.H = g.H;
    shape.W = g.W;
    shape.O = g.O;
    shape.OH = g.OH;
    shape.OW = g.OW;
    shape.kernel = m_options.kernel;
    shape.stride = m_options.stride;
    shape.padding = m_options.padding;
    shape.dilation = m_options.dilation;
    shape.bias = m_options.bias;
    return shape;
}

std::shared_ptr<const Internal::DnnlConvolution> Conv2d::dnnlFor(const Shape &input) const
{
    const ConvBackend backend = convBackend();
    if (backend == ConvBackend::Im2col)
        return nullptr;
#ifdef _OPENMP
    if (omp_in_parallel()) // oneDNN would run one thread of a kernel split for several
        return nullptr;
#endif
    Internal::ConvShape shape = convShape(input);
    shape.winograd =
        backend == ConvBackend::Winograd && Internal::DnnlConvolution::winogradSuits(shape);
    return Internal::DnnlConvolution::forShape(shape, threadCount());
}

Shape Conv2d::outputShape(const Shape &input) const
{
    if (input.rank() != 4 || input[1] != m_inChannels)
        shapeError("expected [N, " + std::to_string(m_inChannels) + ", H, W]", input);
    const int reach = this->reach();
    if (input[2] + 2 * m_options.padding < reach || input[3] + 2 * m_options.padding < reach)
        shapeError("input smaller than the kernel", input);
    const std::int64_t oh = (input[2] + 2 * m_options.padding - reach) / m_options.stride + 1;
    const std::int64_t ow = (input[3] + 2 * m_options.padding - reach) / m_options.stride + 1;
    return Shape{input[0], m_options.out_channels, oh, ow};
}

std::vector<Parameter *> Conv2d::parameters()
{
    if (m_options.bias)
        return {&m_weight, &m_bias};
    return {&m_weight};
}

void Conv2d::initialize(Rng &rng)
{
    // PyTorch: kaiming_uniform(a=sqrt(5)) => U(-1/sqrt(fan_in), 1/sqrt(fan_in)); bias the same.
    const float bound = 1.0f / std::sqrt(float(m_inChannels * m_options.kernel * m_options.kernel));
    if (m_weight.value.isVirtual())
        return;
    float *w = m_weight.value.data();
    for (std::int64_t i = 0; i < m_weight.value.numel(); ++i)
        w[i] = rng.uniform(-bound, bound);
    if (m_options.bias) {
        float *b = m_bias.value.data();
        for (std::int64_t i = 0; i < m_bias.value.numel(); ++i)
            b[i] = rng.uniform(-bound, bound);
        // Drawn first all the same, so that later layers get the same weights either way.
        const auto &init = m_options.bias_init;
        for (std::int64_t i = 0; i < m_bias.value.numel() && !init.empty(); ++i)
            b[i] = float(init[init.size() == 1 ? 0 : std::size_t(i)]);
    }
}

double Conv2d::forwardFlops(const Shape &input) const
{
    const Shape out = outputShape(input);
    return 2.0 * double(out.numel()) * m_inChannels * m_options.kernel * m_options.kernel;
}

Json Conv2d::spec() const
{
    Json j;
    j.set("type", "conv2d").set("out_channels", m_options.out_channels);
    j.set("kernel", m_options.kernel).set("stride", m_options.stride);
    j.set("padding", m_options.padding).set("bias", m_options.bias);
    if (m_options.dilation != 1) // absent at 1: the specs of every model before it, unchanged
        j.set("dilation", m_options.dilation);
    if (m_options.bias_init.size() == 1) {
        j.set("bias_init", m_options.bias_init[0]);
    } else if (!m_options.bias_init.empty()) {
        Json values = Json::array();
        for (double v : m_options.bias_init)
            values.push(v);
        j.set("bias_init", std::move(values));
    }
    return j;
}

Tensor Conv2d::forward(const Tensor &x, LayerCache *cache, const PassContext &)
{
    const Shape out = outputShape(x.shape());
    if (const auto dnnl = dnnlFor(x.shape())) {
        Tensor y(out, MemoryCategory::Activations);
        dnnl->forward(x, m_weight.value, m_options.bias ? &m_bias.value : nullptr, y);
        if (cache)
            cache->tensors = {x};
        return y;
    }
    const auto [N, C, H, W, O, OH, OW, K, P, inStride] = geometry(x.shape(), out);
    Tensor y(out, MemoryCategory::Activations);
    const bool pointwise = isPointwise();
    const int workers = int(std::min<std::int64_t>(threadCount(), N));
    const std::int64_t scratch = Internal::im2colScratchSize(C, H, W, m_options.padding);
    Tensor col;
    if (!pointwise)
        col = Tensor({workers, K * P + scratch}, MemoryCategory::Workspace);
    const float *wdata = m_weight.value.data();
    const float *bias = m_options.bias ? m_bias.value.data() : nullptr;
    if (y.isVirtual()) { // memory simulation: the allocations above are the whole story
        if (cache)
            cache->tensors = {x};
        return y;
    }

    auto work = [&](int worker) {
        const Range r = staticSlice(N, worker, workers);
        float *colp = pointwise ? nullptr : col.data() + worker * (K * P + scratch);
        for (std::int64_t n = r.begin; n < r.end; ++n) {
            const float *src = x.data() + n * inStride;
            if (!pointwise) {
                Internal::im2col(src, C, H, W, m_options.kernel, m_options.stride,
                                 m_options.padding, OH, OW, colp, colp + K * P, m_options.dilation);
                src = colp;
            }
            float *dst = y.data() + n * O * P;
            gemm(false, false, O, P, K, 1.0f, wdata, K, src, P, 0.0f, dst, P);
            if (bias)
                for (int o = 0; o < O; ++o) {
                    float *row = dst + o * P;
                    const float b = bias[o];
                    for (std::int64_t p = 0; p < P; ++p)
                        row[p] += b;
                }
        }
    };
    if (workers <= 1) {
        work(0);
    } else {
#pragma omp parallel num_threads(workers)
        work(workerIndex());
    }
    if (cache)
        cache->tensors = {x};
    return y;
}

Tensor Conv2d::backward(const Tensor &dy, const LayerCache &cache, const PassContext &,
                        bool needInputGrad)
{
    const Tensor &x = cache.tensors.at(0);
    const Shape out = outputShape(x.shape());
    if (dy.shape() != out)
        shapeError("gradient shape " + dy.shape().toString() + " does not match output " +
                       out.toString(),
                   x.shape());
    if (const auto dnnl = dnnlFor(x.shape())) {
        Tensor dx;
        if (needInputGrad)
            dx = Tensor(x.shape(), MemoryCategory::Activations);
        dnnl->backward(x, dy, m_weight.value, m_weight.grad,
                       m_options.bias ? &m_bias.grad : nullptr, needInputGrad ? &dx : nullptr);
        return dx;
    }
    const auto [N, C, H, W, O, OH, OW, K, P, inStride] = geometry(x.shape(), out);
    const bool pointwise = isPointwise();
    const int workers = int(std::min<std::int64_t>(threadCount(), N));

    Tensor dx;
    if (needInputGrad)
        dx = Tensor(x.shape(), MemoryCategory::Activations);
    // With stride 1, dL/dx is a convolution of dy with the flipped, transposed kernel: a gather
    // (im2col of dy) and one GEMM, cheaper than the scatter-add of col2im.
    const int k = m_options.kernel, pad = m_options.padding;
    const std::int64_t flippedCols = std::int64_t(O) * k * k * H * W;
    // ... unless the flipped unfold is much larger (few output channels, no padding).
    const bool flipped = needInputGrad && !pointwise && m_options.stride == 1 &&
                         m_options.dilation == 1 && pad <= k - 1 && flippedCols <= 2 * K * P;
    Tensor col;
    const std::int64_t scratch =
        std::max(Internal::im2colScratchSize(C, H, W, pad),
                 flipped ? Internal::im2colScratchSize(O, OH, OW, k - 1 - pad) : 0);
    const std::int64_t colSize = (flipped ? std::max(K * P, flippedCols) : K * P) + scratch;
    if (!pointwise)
        col = Tensor({workers, colSize}, MemoryCategory::Workspace);
    Tensor wflip;
    if (flipped) {
        // wflip[c][o][ki][kj] = w[o][c][k-1-ki][k-1-kj], as a [C, O*k*k] matrix.
        wflip = Tensor({C, std::int64_t(O) * k * k}, MemoryCategory::Workspace);
        const float *w = m_weight.value.data();
        for (int o = 0; o < O && !wflip.isVirtual(); ++o)
            for (int c = 0; c < C; ++c)
                for (int ki = 0; ki < k; ++ki)
                    for (int kj = 0; kj < k; ++kj)
                        wflip.data()[((std::int64_t(c) * O + o) * k + ki) * k + kj] =
                            w[((std::int64_t(o) * C + c) * k + (k - 1 - ki)) * k + (k - 1 - kj)];
    }
    // Worker 0 writes straight into the gradients; the others into partials added afterwards.
    Tensor partials;
    const std::int64_t partialSize = O * K + (m_options.bias ? O : 0);
    if (workers > 1)
        partials = Tensor({workers - 1, partialSize}, MemoryCategory::Workspace);
    const float *wdata = m_weight.value.data();
    if (dy.isVirtual())
        return dx;

    auto work = [&](int worker) {
        const Range r = staticSlice(N, worker, workers);
        float *dw =
            worker == 0 ? m_weight.grad.data() : partials.data() + (worker - 1) * partialSize;
        float *db = !m_options.bias ? nullptr : worker == 0 ? m_bias.grad.data() : dw + O * K;
        if (db)
            std::fill(db, db + O, 0.0f);
        if (r.begin == r.end)
            std::fill(dw, dw + O * K, 0.0f);
        float *colp = pointwise ? nullptr : col.data() + worker * colSize;
        for (std::int64_t n = r.begin; n < r.end; ++n) {
            const float *g = dy.data() + n * O * P;
            const float *src = x.data() + n * inStride;
            if (!pointwise) {
                Internal::im2col(src, C, H, W, m_options.kernel, m_options.stride,
                                 m_options.padding, OH, OW, colp, colp + colSize - scratch,
                                 m_options.dilation);
                src = colp;
            }
            // dW[O, K] (+)= dy_n[O, P] * col[K, P]^T
            gemm(false, true, O, K, P, 1.0f, g, P, src, P, n == r.begin ? 0.0f : 1.0f, dw, K);
            if (db)
                for (int o = 0; o < O; ++o) {
                    const float *row = g + o * P;
                    float s = 0.0f;
                    for (std::int64_t p = 0; p < P; ++p)
                        s += row[p];
                    db[o] += s;
                }
            if (needInputGrad) {
                float *dxn = dx.data() + n * inStride;
                if (pointwise) {
                    gemm(true, false, K, P, O, 1.0f, wdata, K, g, P, 0.0f, dxn, P);
                } else if (flipped) {
                    Internal::im2col(g, O, OH, OW, k, 1, k - 1 - pad, H, W, colp,
                                     colp + colSize - scratch);
                    gemm(false, false, C, std::int64_t(H) * W, std::int64_t(O) * k * k, 1.0f,
                         wflip.data(), std::int64_t(O) * k * k, colp, std::int64_t(H) * W, 0.0f,
                         dxn, std::int64_t(H) * W);
                } else {
                    // dcol[K, P] = W[O, K]^T * dy_n[O, P], reusing the col buffer.
                    gemm(true, false, K, P, O, 1.0f, wdata, K, g, P, 0.0f, colp, P);
                    std::memset(dxn, 0, sizeof(float) * std::size_t(inStride));
                    Internal::col2imAdd(colp, C, H, W, m_options.kernel, m_options.stride,
                                        m_options.padding, OH, OW, dxn, m_options.dilation);
                }
            }
        }
    };
    if (workers <= 1) {
        work(0);
    } else {
#pragma omp parallel num_threads(workers)
        work(workerIndex());
        float *dw = m_weight.grad.data();
        for (int w = 1; w < workers; ++w) {
            const float *part = partials.data() + (w - 1) * partialSize;
            for (std::int64_t i = 0; i < O * K; ++i)
                dw[i] += part[i];
            if (m_options.bias)
                for (int o = 0; o < O; ++o)
                    m_bias.grad.data()[o] += part[O * K + o];
        }
    }
    return dx;
}

} // namespace edgetrain::core

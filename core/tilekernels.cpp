#include "tilekernels.h"

#include "eigentypes.h"
#include "error.h"

#include <algorithm>
#include <cstring>

namespace edgetrain::core::tiles {

namespace {

/** Calls fn(plane index, from-plane offset) for each [H, W] plane of an [N, C, H, W] tensor. */
template <typename Fn> void forPlanes(const Shape &shape, Fn &&fn)
{
    const std::int64_t planes = shape[0] * shape[1];
    for (std::int64_t p = 0; p < planes; ++p)
        fn(p);
}

void checkWindow(const Shape &shape, const Window &w, const char *what)
{
    if (shape.rank() != 4 || w.rows.begin < 0 || w.cols.begin < 0 || w.rows.end > shape[2] ||
        w.cols.end > shape[3] || w.rows.size() < 0 || w.cols.size() < 0)
        throw ShapeError(std::string("tile ") + what + ": window rows [" +
                         std::to_string(w.rows.begin) + ", " + std::to_string(w.rows.end) +
                         ") cols [" + std::to_string(w.cols.begin) + ", " +
                         std::to_string(w.cols.end) + ") outside " + shape.toString());
}

/** Copies between a window of `big` and the whole of `small` (same planes). */
template <bool ToBig, bool Add>
void transfer(const Tensor &small, const Tensor &big, const Window &w)
{
    const std::int64_t H = big.dim(2), W = big.dim(3);
    const std::int64_t h = w.rows.size(), cw = w.cols.size();
    float *bigData = const_cast<float *>(big.data());
    float *smallData = const_cast<float *>(small.data());
    forPlanes(big.shape(), [&](std::int64_t p) {
        for (std::int64_t r = 0; r < h; ++r) {
            float *b = bigData + (p * H + w.rows.begin + r) * W + w.cols.begin;
            float *s = smallData + (p * h + r) * cw;
            if constexpr (!ToBig)
                std::memcpy(s, b, std::size_t(cw) * sizeof(float));
            else if constexpr (Add)
                ArrayMap(b, cw) += ConstArrayMap(s, cw);
            else
                std::memcpy(b, s, std::size_t(cw) * sizeof(float));
        }
    });
}

Shape windowShape(const Shape &shape, const Window &w)
{
    return {shape[0], shape[1], w.rows.size(), w.cols.size()};
}

void checkPart(const Tensor &part, const Tensor &into, const Window &w, const char *what)
{
    checkWindow(into.shape(), w, what);
    if (part.shape() != windowShape(into.shape(), w))
        throw ShapeError(std::string("tile ") + what + ": part " + part.shape().toString() +
                         " does not fill its window of " + into.shape().toString());
}

} // namespace

Tensor crop(const Tensor &from, const Window &window, MemoryCategory category)
{
    checkWindow(from.shape(), window, "crop");
    Tensor out(windowShape(from.shape(), window), category);
    if (!out.isVirtual() && out.numel() > 0)
        transfer<false, false>(out, from, window);
    return out;
}

void place(const Tensor &part, Tensor &into, const Window &window)
{
    checkPart(part, into, window, "place");
    if (!into.isVirtual() && part.numel() > 0)
        transfer<true, false>(part, into, window);
}

void addInto(const Tensor &part, Tensor &into, const Window &window)
{
    checkPart(part, into, window, "add");
    if (!into.isVirtual() && part.numel() > 0)
        transfer<true, true>(part, into, window);
}

Tensor padded(const Tensor &part, const Shape &shape, const Window &window)
{
    Tensor out = Tensor::zeros(shape, MemoryCategory::Activations);
    place(part, out, window);
    return out;
}

void ChannelMoments::add(const Tensor &x, const Window &w)
{
    checkWindow(x.shape(), w, "statistics");
    const std::int64_t N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    const std::int64_t n = N * w.rows.size() * w.cols.size();
    if (n == 0 || x.isVirtual()) {
        count += n;
        return;
    }
    const std::int64_t cw = w.cols.size();
    // Row by row in float (a row is short), rows summed in double; then the deviations from
    // the part's own mean, so the merge below stays exact in double.
    auto rowAt = [&](std::int64_t i, std::int64_t c, std::int64_t r) {
        return ConstArrayMap(x.data() + ((i * C + c) * H + r) * W + w.cols.begin, cw);
    };
    for (std::int64_t c = 0; c < C; ++c) {
        double sum = 0.0;
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t r = w.rows.begin; r < w.rows.end; ++r)
                sum += double(rowAt(i, c, r).sum());
        const double partMean = sum / double(n);
        const auto m = float(partMean);
        double partM2 = 0.0, drift = 0.0;
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t r = w.rows.begin; r < w.rows.end; ++r) {
                const auto d = rowAt(i, c, r) - m;
                partM2 += double(d.square().sum());
                drift += double(d.sum());
            }
        // The float mean's rounding, taken back out (sum of squares about the exact mean).
        partM2 -= drift * drift / double(n);
        const auto cc = std::size_t(c);
        const double total = double(count + n);
        const double delta = partMean - mean[cc];
        mean[cc] += delta * double(n) / total;
        m2[cc] += partM2 + delta * delta * double(count) * double(n) / total;
    }
    count += n;
}

std::vector<double> ChannelMoments::variance() const
{
    std::vector<double> v(m2.size(), 0.0);
    for (std::size_t c = 0; c < m2.size(); ++c)
        v[c] = count > 0 ? m2[c] / double(count) : 0.0;
    return v;
}

Tensor normalize(const Tensor &x, const NormStatistics &s, const float *gamma, const float *beta,
                 bool relu)
{
    Tensor y(x.shape(), MemoryCategory::Activations);
    if (!y.isVirtual())
        normalizeInto(x, y, s, gamma, beta, relu);
    return y;
}

void normalizeInto(const Tensor &x, Tensor &y, const NormStatistics &s, const float *gamma,
                   const float *beta, bool relu)
{
    if (y.isVirtual())
        return;
    const std::int64_t C = x.dim(1), HW = x.dim(2) * x.dim(3);
    forPlanes(x.shape(), [&](std::int64_t p) {
        const auto c = std::size_t(p % C);
        const float scale = gamma[c] * s.invStd[c];
        const float offset = beta[c] - s.mean[c] * scale;
        const float *in = x.data() + p * HW;
        float *out = y.data() + p * HW;
        if (relu) {
#pragma omp simd
            for (std::int64_t i = 0; i < HW; ++i) {
                const float v = in[i] * scale + offset;
                out[i] = v > 0.0f ? v : 0.0f;
            }
        } else {
            ArrayMap(out, HW) = ConstArrayMap(in, HW) * scale + offset;
        }
    });
}

void addGradientSums(const Tensor &dy, const Tensor &x, const NormStatistics &s,
                     std::vector<double> &sumDy, std::vector<double> &sumDyXhat)
{
    if (dy.shape() != x.shape())
        throw ShapeError("tile norm: gradient " + dy.shape().toString() + " against input " +
                         x.shape().toString());
    if (dy.isVirtual())
        return;
    const std::int64_t C = x.dim(1), HW = x.dim(2) * x.dim(3);
    forPlanes(x.shape(), [&](std::int64_t p) {
        const auto c = std::size_t(p % C);
        const ConstArrayMap g(dy.data() + p * HW, HW);
        sumDy[c] += double(g.sum());
        sumDyXhat[c] +=
            double((g * (ConstArrayMap(x.data() + p * HW, HW) - s.mean[c])).sum()) * s.invStd[c];
    });
}

void addTailGradientSums(const Tensor &dy, const Tensor &y, const float *gamma, const float *beta,
                         std::vector<double> &sumDy, std::vector<double> &sumDyXhat)
{
    if (dy.shape() != y.shape())
        throw ShapeError("tile norm: gradient " + dy.shape().toString() + " against output " +
                         y.shape().toString());
    if (dy.isVirtual())
        return;
    const std::int64_t C = y.dim(1), HW = y.dim(2) * y.dim(3);
    forPlanes(y.shape(), [&](std::int64_t p) {
        const auto c = std::size_t(p % C);
        const float *g = dy.data() + p * HW, *out = y.data() + p * HW;
        float a = 0.0f, b = 0.0f;
        // Where the ReLU passed its input, y is the norm's output: xhat = (y - beta) / gamma.
#pragma omp simd reduction(+ : a, b)
        for (std::int64_t i = 0; i < HW; ++i) {
            const float gi = out[i] > 0.0f ? g[i] : 0.0f;
            a += gi;
            b += gi * (out[i] - beta[c]);
        }
        sumDy[c] += a;
        sumDyXhat[c] += double(b) / gamma[c];
    });
}

Tensor normBackward(const Tensor &dy, const Tensor &x, const NormStatistics &s, const float *gamma,
                    const std::vector<double> &meanDy, const std::vector<double> &meanDyXhat,
                    const Window &owned)
{
    checkWindow(x.shape(), owned, "norm backward");
    Tensor dx(x.shape(), MemoryCategory::Activations);
    if (dx.isVirtual())
        return dx;
    const std::int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3), cw = owned.cols.size();
    forPlanes(x.shape(), [&](std::int64_t p) {
        const auto c = std::size_t(p % C);
        const float k = gamma[c] * s.invStd[c];
        const float *g = dy.data() + p * H * W, *in = x.data() + p * H * W;
        float *out = dx.data() + p * H * W;
        ArrayMap(out, H * W) = ConstArrayMap(g, H * W) * k;
        // The whole map's mean terms, once: on the part of the map this tile owns.
        const auto a = float(-k * meanDy[c] + k * s.invStd[c] * meanDyXhat[c] * s.mean[c]);
        const auto b = float(-k * s.invStd[c] * meanDyXhat[c]);
        for (std::int64_t r = owned.rows.begin; r < owned.rows.end; ++r) {
            const std::int64_t at = r * W + owned.cols.begin;
            ArrayMap(out + at, cw) += ConstArrayMap(in + at, cw) * b + a;
        }
    });
    return dx;
}

} // namespace edgetrain::core::tiles

#include "tilekernels.h"

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
                for (std::int64_t i = 0; i < cw; ++i)
                    b[i] += s[i];
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
    for (std::int64_t c = 0; c < C; ++c) {
        double sum = 0.0;
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t r = w.rows.begin; r < w.rows.end; ++r) {
                const float *row = x.data() + ((i * C + c) * H + r) * W;
                for (std::int64_t k = w.cols.begin; k < w.cols.end; ++k)
                    sum += row[k];
            }
        const double partMean = sum / double(n);
        double partM2 = 0.0;
        for (std::int64_t i = 0; i < N; ++i)
            for (std::int64_t r = w.rows.begin; r < w.rows.end; ++r) {
                const float *row = x.data() + ((i * C + c) * H + r) * W;
                for (std::int64_t k = w.cols.begin; k < w.cols.end; ++k) {
                    const double d = row[k] - partMean;
                    partM2 += d * d;
                }
            }
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

Tensor normalize(const Tensor &x, const NormStatistics &s, const float *gamma, const float *beta)
{
    Tensor y(x.shape(), MemoryCategory::Activations);
    if (y.isVirtual())
        return y;
    const std::int64_t C = x.dim(1), HW = x.dim(2) * x.dim(3);
    forPlanes(x.shape(), [&](std::int64_t p) {
        const auto c = std::size_t(p % C);
        const float scale = gamma[c] * s.invStd[c];
        const float offset = beta[c] - s.mean[c] * scale;
        const float *in = x.data() + p * HW;
        float *out = y.data() + p * HW;
        for (std::int64_t i = 0; i < HW; ++i)
            out[i] = in[i] * scale + offset;
    });
    return y;
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
        const float *g = dy.data() + p * HW, *in = x.data() + p * HW;
        double a = 0.0, b = 0.0;
        for (std::int64_t i = 0; i < HW; ++i) {
            a += g[i];
            b += double(g[i]) * double(in[i] - s.mean[c]);
        }
        sumDy[c] += a;
        sumDyXhat[c] += b * s.invStd[c];
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
    const std::int64_t C = x.dim(1), H = x.dim(2), W = x.dim(3);
    forPlanes(x.shape(), [&](std::int64_t p) {
        const auto c = std::size_t(p % C);
        const float k = gamma[c] * s.invStd[c];
        const float *g = dy.data() + p * H * W, *in = x.data() + p * H * W;
        float *out = dx.data() + p * H * W;
        for (std::int64_t i = 0; i < H * W; ++i)
            out[i] = k * g[i];
        // The whole map's mean terms, once: on the part of the map this tile owns.
        const float a = float(-k * meanDy[c] + k * s.invStd[c] * meanDyXhat[c] * s.mean[c]);
        const float b = float(-k * s.invStd[c] * meanDyXhat[c]);
        for (std::int64_t r = owned.rows.begin; r < owned.rows.end; ++r)
            for (std::int64_t q = owned.cols.begin; q < owned.cols.end; ++q)
                out[r * W + q] += in[r * W + q] * b + a;
    });
    return dx;
}

} // namespace edgetrain::core::tiles

#include "detectionloss.h"

#include "error.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace edgetrain::core {

namespace {

/** log(1 + exp(x)) without overflow. */
inline double softplus(double x)
{
    return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

inline double sigmoid(double x)
{
    if (x >= 0)
        return 1.0 / (1.0 + std::exp(-x));
    const double e = std::exp(x);
    return e / (1.0 + e);
}

/** An object as the loss sees it: centre cell, sub-cell offset and log size (in cells). */
struct Target
{
    int cx = 0, cy = 0;
    double offset_x = 0, offset_y = 0;
    double log_w = 0, log_h = 0;
};

Target targetOf(const LabelBox &b, int h, int w, int stride)
{
    Target t;
    const double s = double(stride);
    const double cx = (double(b.x0) + double(b.x1)) * 0.5 / s;
    const double cy = (double(b.y0) + double(b.y1)) * 0.5 / s;
    t.cx = std::clamp(int(std::floor(cx)), 0, w - 1);
    t.cy = std::clamp(int(std::floor(cy)), 0, h - 1);
    t.offset_x = cx - t.cx;
    t.offset_y = cy - t.cy;
    t.log_w = std::log(std::max(double(b.x1 - b.x0), 1.0) / s);
    t.log_h = std::log(std::max(double(b.y1 - b.y0), 1.0) / s);
    return t;
}

/** True if `z` is >= every neighbour in its 3x3 window (plane [h, w]). */
inline bool isPeak(const float *plane, int h, int w, int y, int x)
{
    const float z = plane[y * w + x];
    for (int dy = -1; dy <= 1; ++dy) {
        const int yy = y + dy;
        if (yy < 0 || yy >= h)
            continue;
        for (int dx = -1; dx <= 1; ++dx) {
            const int xx = x + dx;
            if (xx >= 0 && xx < w && plane[yy * w + xx] > z)
                return false;
        }
    }
    return true;
}

} // namespace

void DetectionLoss::encode(const std::vector<LabelBox> &boxes, int maxObjects, std::int32_t *out)
{
    std::fill(out, out + labelWidth(maxObjects), 0);
    std::vector<LabelBox> kept = boxes;
    std::stable_sort(kept.begin(), kept.end(), [](const LabelBox &a, const LabelBox &b) {
        if (a.ignore != b.ignore)
            return !a.ignore;
        return (a.x1 - a.x0) * (a.y1 - a.y0) > (b.x1 - b.x0) * (b.y1 - b.y0);
    });
    if (int(kept.size()) > maxObjects)
        kept.resize(std::size_t(std::max(maxObjects, 0)));
    out[0] = std::int32_t(kept.size());
    for (std::size_t i = 0; i < kept.size(); ++i) {
        std::int32_t *e = out + 1 + 5 * i;
        const LabelBox &b = kept[i];
        e[0] = std::int32_t(std::lround(double(b.x0) * kSubpixel));
        e[1] = std::int32_t(std::lround(double(b.y0) * kSubpixel));
        e[2] = std::int32_t(std::lround(double(b.x1) * kSubpixel));
        e[3] = std::int32_t(std::lround(double(b.y1) * kSubpixel));
        e[4] = b.ignore ? kIgnore : kObject;
    }
}

std::vector<LabelBox> DetectionLoss::decodeLabels(const std::int32_t *label, int maxObjects)
{
    const std::int32_t count = label[0];
    if (count < 0 || count > maxObjects)
        throw Error("detection label: box count " + std::to_string(count) + " is outside [0, " +
                    std::to_string(maxObjects) + "]");
    std::vector<LabelBox> boxes(static_cast<std::size_t>(count));
    for (std::int32_t i = 0; i < count; ++i) {
        const std::int32_t *e = label + 1 + 5 * i;
        if (e[4] != kObject && e[4] != kIgnore)
            throw Error("detection label: box " + std::to_string(i) + " has kind " +
                        std::to_string(e[4]) + " (1 = object, 2 = ignore)");
        if (e[2] < e[0] || e[3] < e[1])
            throw Error("detection label: box " + std::to_string(i) + " has x1 < x0 or y1 < y0");
        LabelBox &b = boxes[std::size_t(i)];
        b.x0 = float(e[0]) / kSubpixel;
        b.y0 = float(e[1]) / kSubpixel;
        b.x1 = float(e[2]) / kSubpixel;
        b.y1 = float(e[3]) / kSubpixel;
        b.ignore = e[4] == kIgnore;
    }
    return boxes;
}

double DetectionLoss::gaussianRadius(double height, double width, double minOverlap)
{
    // CenterNet's utils/image.py, including its choice of roots.
    const double b1 = height + width;
    const double c1 = width * height * (1 - minOverlap) / (1 + minOverlap);
    const double r1 = (b1 + std::sqrt(b1 * b1 - 4 * c1)) / 2;
    const double b2 = 2 * (height + width);
    const double c2 = (1 - minOverlap) * width * height;
    const double r2 = (b2 + std::sqrt(b2 * b2 - 16 * c2)) / 2;
    const double a3 = 4 * minOverlap;
    const double b3 = -2 * minOverlap * (height + width);
    const double c3 = (minOverlap - 1) * width * height;
    const double r3 = (b3 + std::sqrt(b3 * b3 - 4 * a3 * c3)) / 2;
    return std::min({r1, r2, r3});
}

std::vector<float> DetectionLoss::heatmapTarget(const std::vector<LabelBox> &boxes, int h, int w,
                                                int stride)
{
    std::vector<float> heat(std::size_t(h) * std::size_t(w), 0.0f);
    for (const LabelBox &b : boxes) {
        if (b.ignore)
            continue;
        const Target t = targetOf(b, h, w, stride);
        const double bw = std::ceil(std::max(double(b.x1 - b.x0), 1.0) / stride);
        const double bh = std::ceil(std::max(double(b.y1 - b.y0), 1.0) / stride);
        const int radius = std::max(0, int(gaussianRadius(bh, bw)));
        const double sigma = double(2 * radius + 1) / 6.0;
        const double eps = std::numeric_limits<double>::epsilon();
        for (int dy = -radius; dy <= radius; ++dy) {
            const int y = t.cy + dy;
            if (y < 0 || y >= h)
                continue;
            for (int dx = -radius; dx <= radius; ++dx) {
                const int x = t.cx + dx;
                if (x < 0 || x >= w)
                    continue;
                double g = std::exp(-double(dx * dx + dy * dy) / (2 * sigma * sigma));
                if (g < eps) // gaussian2D: h[h < eps * h.max()] = 0
                    g = 0;
                float &cell = heat[std::size_t(y) * std::size_t(w) + std::size_t(x)];
                cell = std::max(cell, float(g));
            }
        }
    }
    return heat;
}

DetectionLoss::Result DetectionLoss::compute(const Tensor &out, const std::int32_t *labels,
                                             const DetectionLossOptions &options, Tensor *dout)
{
    if (out.shape().rank() != 4 || out.dim(1) != kChannels)
        throw ShapeError("the centernet loss expects an output [N, 5, h, w]; got " +
                         out.shape().toString());
    if (dout)
        *dout = Tensor(out.shape(), MemoryCategory::Activations);
    Result r;
    if (out.isVirtual())
        return r; // memory simulation: only the allocation above matters
    const std::int64_t N = out.dim(0);
    const int h = int(out.dim(2)), w = int(out.dim(3));
    const std::int64_t plane = std::int64_t(h) * w;
    const int width = labelWidth(options.max_objects);

    // Pass 1: the targets, and n for the normalisation.
    std::vector<std::vector<LabelBox>> boxes(static_cast<std::size_t>(N));
    for (std::int64_t n = 0; n < N; ++n) {
        try {
            boxes[std::size_t(n)] = decodeLabels(labels + n * width, options.max_objects);
        } catch (const Error &e) {
            throw Error("sample " + std::to_string(n) + " of the batch: " + e.what());
        }
        for (const LabelBox &b : boxes[std::size_t(n)])
            r.objects += b.ignore ? 0 : 1;
    }
    const double norm = 1.0 / double(std::max<std::int64_t>(1, r.objects));
    if (dout)
        dout->fill(0.0f);

    double heatSum = 0.0, sizeSum = 0.0, offsetSum = 0.0;
    std::vector<char> ignored(static_cast<std::size_t>(plane));
    for (std::int64_t n = 0; n < N; ++n) {
        const auto &sample = boxes[std::size_t(n)];
        const float *o = out.data() + n * kChannels * plane;
        float *g = dout ? dout->data() + n * kChannels * plane : nullptr;
        const std::vector<float> heat = heatmapTarget(sample, h, w, options.stride);
        std::fill(ignored.begin(), ignored.end(), 0);
        for (const LabelBox &b : sample) {
            if (!b.ignore)
                continue;
            for (int y = 0; y < h; ++y) {
                const float py = (float(y) + 0.5f) * float(options.stride);
                if (py < b.y0 || py >= b.y1)
                    continue;
                for (int x = 0; x < w; ++x) {
                    const float px = (float(x) + 0.5f) * float(options.stride);
                    if (px >= b.x0 && px < b.x1)
                        ignored[std::size_t(y * w + x)] = 1;
                }
            }
        }
        // Heatmap focal loss. pos: -(1-p)^2 log p; neg: -(1-gt)^4 p^2 log(1-p).
        for (std::int64_t i = 0; i < plane; ++i) {
            const double z = o[i];
            const double gt = heat[std::size_t(i)];
            const double logP = -softplus(-z), log1mP = -softplus(z);
            const double p = sigmoid(z), q = sigmoid(-z); // q = 1 - p without cancellation
            if (gt >= 1.0) {
                heatSum += -q * q * logP;
                if (g)
                    g[i] = float(norm * q * q * (2.0 * p * logP - q));
            } else if (!ignored[std::size_t(i)]) {
                const double m = 1.0 - gt, m2 = m * m, m4 = m2 * m2;
                heatSum += -m4 * p * p * log1mP;
                if (g)
                    g[i] = float(-norm * m4 * p * p * (2.0 * q * log1mP - p));
            }
        }
        // Size and offset L1 at each centre cell; hits.
        for (const LabelBox &b : sample) {
            if (b.ignore)
                continue;
            const Target t = targetOf(b, h, w, options.stride);
            const std::int64_t at = std::int64_t(t.cy) * w + t.cx;
            const double targets[4] = {t.log_w, t.log_h, t.offset_x, t.offset_y};
            for (int c = 0; c < 4; ++c) {
                const double d = double(o[(c + 1) * plane + at]) - targets[c];
                const double weight = c < 2 ? options.size_weight : options.offset_weight;
                (c < 2 ? sizeSum : offsetSum) += std::abs(d);
                if (g)
                    g[(c + 1) * plane + at] += float(weight * norm *
                                                     (d > 0   ? 1.0
                                                      : d < 0 ? -1.0
                                                              : 0.0));
            }
            if (o[at] >= 0.0f && isPeak(o, h, w, t.cy, t.cx))
                ++r.hits;
        }
    }
    r.heatmap_loss = heatSum * norm;
    r.size_loss = sizeSum * norm;
    r.offset_loss = offsetSum * norm;
    r.loss =
        r.heatmap_loss + options.size_weight * r.size_loss + options.offset_weight * r.offset_loss;
    return r;
}

std::vector<DecodedBox> DetectionLoss::decode(const float *out, int h, int w,
                                              const DecodeOptions &options)
{
    std::vector<DecodedBox> found;
    if (!out || h <= 0 || w <= 0)
        return found;
    const float th = std::clamp(options.threshold, 1e-6f, 1.0f - 1e-6f);
    const float minLogit = std::log(th / (1.0f - th)); // sigmoid(z) >= th  <=>  z >= minLogit
    const std::int64_t plane = std::int64_t(h) * w;
    const float s = float(options.stride);
    for (int y = 0; y < h; ++y) {
        const float *row = out + std::int64_t(y) * w;
        for (int x = 0; x < w; ++x) {
            if (row[x] < minLogit || !isPeak(out, h, w, y, x))
                continue;
            const std::int64_t at = std::int64_t(y) * w + x;
            const float cx = (float(x) + out[3 * plane + at]) * s;
            const float cy = (float(y) + out[4 * plane + at]) * s;
            const float bw = std::exp(std::clamp(out[plane + at], -20.0f, 20.0f)) * s;
            const float bh = std::exp(std::clamp(out[2 * plane + at], -20.0f, 20.0f)) * s;
            found.push_back({cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2,
                             float(sigmoid(double(row[x])))});
        }
    }
    std::stable_sort(found.begin(), found.end(),
                     [](const DecodedBox &a, const DecodedBox &b) { return a.score > b.score; });
    if (int(found.size()) > options.top_k)
        found.resize(std::size_t(std::max(options.top_k, 0)));
    return found;
}

} // namespace edgetrain::core

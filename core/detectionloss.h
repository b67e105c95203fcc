#pragma once

#include "tensor.h"

#include <cstdint>
#include <vector>

namespace edgetrain::core {

/** A box of a sample's label, in input-tensor pixels (x to the right, y down; x0 < x1). */
struct LabelBox
{
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    /** An ignore region: neither an object nor background (too small, hidden, uncertain). */
    bool ignore = false;
};

/** A box found by DetectionLoss::decode, in input-tensor pixels; score = sigmoid(heatmap). */
struct DecodedBox
{
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0, score = 0;
};

/** The "centernet" loss of a ModelSpec ({"type": "centernet", "stride": 4, ...}). */
struct DetectionLossOptions
{
    int stride = 4;       // input pixels per output cell
    int max_objects = 32; // label entries per sample
    double size_weight = 1.0;
    double offset_weight = 1.0;
};

struct DecodeOptions
{
    int stride = 4;
    float threshold = 0.3f; // on sigmoid(heatmap logit)
    int top_k = 100;        // at most this many boxes, the highest scores
};

/**
 * CenterNet's training loss ("Objects as Points", Zhou et al. 2019) for one object class.
 *
 * The model's output for an input [N, 3, H, W] is [N, 5, H/stride, W/stride]:
 *   channel 0   the object-centre heatmap, as a logit;
 *   channels 1, 2  log(box width / stride), log(box height / stride);
 *   channels 3, 4  the centre's offset x, y within its cell, in cells (target in [0, 1)).
 *
 * Labels: per sample labelWidth(max_objects) = 1 + 5 * max_objects int32 values,
 *   [count, then count entries of x0, y0, x1, y1, kind], coordinates in input pixels times
 *   kSubpixel, kind kObject or kIgnore; the unused entries are zero.
 *
 * Loss of a batch, n = its number of objects (ignore regions are not objects), n' = max(1, n):
 *   heatmap: the penalty-reduced pixel-wise focal loss (alpha 2, beta 4) on sigmoid(logit)
 *     against CenterNet's Gaussian splats (radius from gaussian_radius with min_overlap 0.7,
 *     sigma = diameter / 6, element-wise max over the objects), summed, / n'. A cell whose
 *     centre lies inside an ignore region, and which is no object's centre cell, adds nothing.
 *   size: L1 between channels 1, 2 at each object's centre cell and log(size / stride), / n'
 *     (times size_weight). Box sizes below one pixel count as one pixel.
 *   offset: L1 between channels 3, 4 at the centre cell and the centre's sub-cell position,
 *     / n' (times offset_weight).
 * An object's centre cell is floor(centre / stride), clamped to the output.
 */
class DetectionLoss
{
public:
    static constexpr int kSubpixel = 16; // label coordinates are pixels * 16
    static constexpr std::int32_t kObject = 1;
    static constexpr std::int32_t kIgnore = 2;
    static constexpr int kChannels = 5;

    using LabelBox = core::LabelBox;
    using DecodedBox = core::DecodedBox;

    struct Result
    {
        double loss = 0.0; // heatmap_loss + size_weight * size_loss + offset_weight * offset_loss
        /** Objects whose centre cell has sigmoid >= 0.5 and is the maximum of its 3x3
         *  neighbourhood: what the training charts show as "accuracy" (StepResult correct /
         *  count = hits / objects, i.e. the recall of object centres). */
        std::int64_t hits = 0;
        std::int64_t objects = 0;
        double heatmap_loss = 0.0, size_loss = 0.0, offset_loss = 0.0; // each already / n'
    };

    static constexpr int labelWidth(int maxObjects) { return 1 + 5 * maxObjects; }

    /**
     * Writes one sample's label (labelWidth(maxObjects) values) to out. With more than
     * maxObjects boxes, objects go before ignore regions and, within each, the largest boxes
     * (by area) are kept; the rest are dropped. Coordinates are rounded to 1/kSubpixel pixel.
     */
    static void encode(const std::vector<LabelBox> &boxes, int maxObjects, std::int32_t *out);
    /** The boxes of one sample's label. Throws Error if the count or a kind is invalid. */
    static std::vector<LabelBox> decodeLabels(const std::int32_t *label, int maxObjects);

    /**
     * The loss of a batch `out` [N, 5, h, w] against N labels of labelWidth(max_objects) values.
     * If dout is non-null, dL/dout is written into it (allocated here). Throws ShapeError if
     * out is not [N, 5, h, w], Error if a label is invalid. With a virtual `out` (memory
     * simulation) only dout is allocated.
     */
    static Result compute(const Tensor &out, const std::int32_t *labels,
                          const DetectionLossOptions &options, Tensor *dout);

    /**
     * The boxes in one sample's output `out` ([5, h, w], contiguous): cells whose sigmoid is
     * >= threshold and the maximum of their 3x3 neighbourhood (CenterNet's max-pool NMS), box
     * centre from the cell and its offset, size from exp(log-size) * stride; highest scores
     * first, at most top_k. Thread-safe; about 0.1 ms for 64x48 cells.
     */
    static std::vector<DecodedBox> decode(const float *out, int h, int w,
                                          const DecodeOptions &options);

    /** CenterNet's gaussian_radius(det_size = (height, width), min_overlap), in cells. */
    static double gaussianRadius(double height, double width, double minOverlap = 0.7);
    /**
     * The heatmap target [h, w] of one sample (Gaussian splats, max over objects), the
     * loss uses it; exposed for tests and for showing what the detector is trained towards.
     */
    static std::vector<float> heatmapTarget(const std::vector<LabelBox> &boxes, int h, int w,
                                            int stride);
};

} // namespace edgetrain::core

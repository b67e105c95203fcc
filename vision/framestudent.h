#pragma once

#include "core/detectionloss.h"
#include "core/model.h"
#include "teacher.h"

#include <memory>
#include <string>
#include <vector>

namespace edgetrain::vision {

/**
 * The student as a full-frame detector: one forward pass of a CenterNet-style model (the zoo's
 * `detector`, "loss" centernet) over the frame resized to the model's input, decoded by
 * DetectionLoss::decode, boxes mapped back to source pixels; score = sigmoid of the heatmap.
 * With `mirror` (the default) the pass takes a batch of two: the frame and its mirror image.
 * The student was trained on both (flip augmentation); a box found in both views is their
 * score-weighted average with the mean of the two scores, a box found in one view keeps half its
 * score. On vtest.avi's verified frames this found more people with tighter boxes for every
 * trained seed (F1 +0.02 to +0.04 on the frames before 480 and after), at twice the cost.
 * The model is borrowed (it must outlive this) and is only read (inference, training=false).
 * Not thread-safe: one detector per thread.
 */
class FrameStudent
{
public:
    /** Throws core::SpecError if the model's loss is not centernet or its input is not a
     *  colour frame [3, H, W]. */
    explicit FrameStudent(core::Model &model);

    std::vector<Detection> detect(const cv::Mat &bgr, float threshold);
    cv::Size inputSize() const { return m_input; }
    int stride() const { return m_stride; }
    /** Duplicates left by the heatmap's 3x3 peak test (neighbouring peaks of one object). */
    double nms_iou = 0.6;
    /** The frame and its mirror image, fused (see above); false: the frame alone. */
    bool mirror = true;
    /** A box of one view and one of the other are one object from this IoU on. */
    double mirror_iou = 0.55;

    /** A model rebuilt from a safetensors file written by Safetensors::saveModel (its spec is
     *  in the metadata). Throws IoError / FormatError naming the file; FormatError before any
     *  parameter is allocated when the spec declares more weights than the file holds. */
    static std::unique_ptr<core::Model> loadModel(const std::string &path);
    /** The operating threshold saved with the weights (kThresholdKey in the metadata, written
     *  when the threshold was calibrated or chosen), or -1 if there is none. Throws like
     *  loadModel. */
    static float savedThreshold(const std::string &path);
    /** Saves the model with its operating threshold in the metadata (locale-free), and whether
     *  that threshold was chosen with the mirror view (kViewsKey: "mirror" or "frame"). */
    static void saveModel(core::Model &model, const std::string &path, float threshold,
                          bool mirror = true);
    /** Whether the saved threshold was chosen with the mirror view: weights calibrated before the
     *  mirror view existed carry no kViewsKey and are run on the frame alone, as calibrated. */
    static bool savedMirror(const std::string &path);
    static constexpr const char *kThresholdKey = "edgetrain.operating_threshold";
    static constexpr const char *kViewsKey = "edgetrain.operating_views";
    /** The boxes of the frame and of its mirror image (already mirrored back), as one list: a
     *  box with a partner in the other view (IoU >= minIou; the highest-scored free one) is their
     *  score-weighted average scored by the mean of both; a box alone keeps half its score. */
    static std::vector<core::DecodedBox> fuseViews(const std::vector<core::DecodedBox> &frame,
                                                   const std::vector<core::DecodedBox> &mirrored,
                                                   double minIou);

    /** How detect() reads the model's output, apart from the engine: what another runtime of the
     *  same graph (an exported student, see OnnxTeacher) needs to give the same boxes. */
    struct Decoding
    {
        cv::Size input;       // the model's input, in pixels
        int stride = 4;       // input pixels per output cell
        int top_k = 100;      // at most this many boxes
        double nms_iou = 0.6; // see the member nms_iou
        bool mirror = true;   // the output holds two views: the frame, then its mirror image
        double mirror_iou = 0.55;
    };
    /** The input batch of detect() for one frame: resized (INTER_AREA) to `input`, normalised as
     *  CropDataset::toTensor, CHW, then its mirror image with `mirror`. `out` holds
     *  (mirror ? 2 : 1) * 3 * input.area() floats. */
    static void inputBatch(const cv::Mat &bgr, cv::Size input, bool mirror, float *out);
    /** The boxes of detect() in a frame of size `frame` from the model's output for
     *  inputBatch() ([views, 5, h, w], contiguous). */
    static std::vector<Detection> boxes(const float *out, int h, int w, cv::Size frame,
                                        float threshold, const Decoding &decoding);
    Decoding decoding() const;

private:
    core::Model &m_model;
    cv::Size m_input;
    int m_stride = 4;
    int m_maxDetections = 100;
};

} // namespace edgetrain::vision

#pragma once

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
 * The model is borrowed (it must outlive this) and is only read (inference, training=false).
 * Not thread-safe: one detector per thread.
 */
class FrameStudent
{
public:
    /** Throws core::SpecError if the model's loss is not centernet. */
    explicit FrameStudent(core::Model &model);

    std::vector<Detection> detect(const cv::Mat &bgr, float threshold);
    cv::Size inputSize() const { return m_input; }
    int stride() const { return m_stride; }
    /** Duplicates left by the heatmap's 3x3 peak test (neighbouring peaks of one object). */
    double nms_iou = 0.6;

    /** A model rebuilt from a safetensors file written by Safetensors::saveModel (its spec is
     *  in the metadata). Throws IoError / FormatError naming the file. */
    static std::unique_ptr<core::Model> loadModel(const std::string &path);
    /** The operating threshold saved with the weights (kThresholdKey in the metadata, written
     *  when the threshold was calibrated or chosen), or -1 if there is none. Throws like
     *  loadModel. */
    static float savedThreshold(const std::string &path);
    /** Saves the model with its operating threshold in the metadata (locale-free). */
    static void saveModel(core::Model &model, const std::string &path, float threshold);
    static constexpr const char *kThresholdKey = "edgetrain.operating_threshold";

private:
    core::Model &m_model;
    cv::Size m_input;
    int m_stride = 4;
    int m_maxDetections = 100;
};

} // namespace edgetrain::vision

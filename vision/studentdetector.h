#pragma once

#include "core/model.h"
#include "teacher.h"

namespace edgetrain::vision {

struct DetectorOptions
{
    double min_height = 40.0; // object heights (pixels) searched, spread geometrically
    double max_height = 160.0;
    int scales = 4;
    double stride = 0.25;   // of the window width
    float threshold = 0.8f; // probability of "object"
    double nms = 0.3;
    double context = 0.1; // as the crops were cut
    int batch = 256;
};

/**
 * The student as a detector: its crop classifier slid over the frame at several scales (the
 * frame is resized so each scale's window is the model's input), probabilities from a batched
 * forward pass, then non-maximum suppression. Boxes are the object, without the context margin.
 */
class StudentDetector
{
public:
    explicit StudentDetector(core::Model &model);
    std::vector<Detection> detect(const cv::Mat &bgr, const DetectorOptions &options);

private:
    core::Model &m_model;
    cv::Size m_input;
};

} // namespace edgetrain::vision

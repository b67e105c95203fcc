#pragma once

#include "core/error.h"

#include <opencv2/core.hpp>

#include <memory>
#include <string>
#include <vector>

namespace edgetrain::vision {

/** A model or cascade file that is not what it claims to be. */
class TeacherError : public core::FormatError
{
public:
    using core::FormatError::FormatError;
};

struct Detection
{
    cv::Rect2d box;
    float score = 0.0f; // the detector's own confidence (scale differs per teacher)
    int label = 0;
};

/**
 * A detector that knows the object from its usual viewpoint. Detections below `threshold` are
 * dropped. How often labelling runs it (every k-th frame) is LabelOptions::every.
 */
class Teacher
{
public:
    virtual ~Teacher() = default;
    virtual std::string name() const = 0;
    virtual std::vector<Detection> detect(const cv::Mat &bgr) = 0;

    float threshold = 0.0f;

    /** "hog", "cascade:FILE", "onnx:FILE" or "session:DIR" (a session's full-frame student);
     *  throws TeacherError for a file that is not one, IoError for a missing one. */
    static std::unique_ptr<Teacher> create(const std::string &spec);
};

/** OpenCV's HOG people detector (Dalal-Triggs, 64x128 window); score = SVM margin. */
class HogTeacher : public Teacher
{
public:
    HogTeacher();
    ~HogTeacher() override;
    std::string name() const override { return "hog"; }
    std::vector<Detection> detect(const cv::Mat &bgr) override;
    /** Frames are upscaled by this before detection (small, distant people). */
    double upscale = 1.0;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/** A Haar or LBP cascade (e.g. haarcascade_frontalface_default.xml); score = level weight. */
class CascadeTeacher : public Teacher
{
public:
    explicit CascadeTeacher(const std::string &file);
    ~CascadeTeacher() override;
    std::string name() const override { return "cascade:" + m_file; }
    std::vector<Detection> detect(const cv::Mat &bgr) override;
    cv::Size minSize{24, 24};

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    std::string m_file;
};

/**
 * An ONNX detector through cv::dnn. The output is decoded by its shape: SSD-style
 * [1, 1, N, 7] rows (image, label, confidence, x1, y1, x2, y2 normalised to [0, 1]) or
 * YOLO-style [1, N, 5 + C] rows (cx, cy, w, h in input pixels, objectness, class scores),
 * followed by non-maximum suppression. A network whose output is neither is refused on load.
 */
class OnnxTeacher : public Teacher
{
public:
    explicit OnnxTeacher(const std::string &file, cv::Size input = {0, 0});
    ~OnnxTeacher() override;
    std::string name() const override { return "onnx:" + m_file; }
    std::vector<Detection> detect(const cv::Mat &bgr) override;
    enum class Head { Ssd, Yolo };
    Head head() const { return m_head; }
    int keepLabel = -1; // only this class (-1: every class)
    float nmsThreshold = 0.45f;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
    std::string m_file;
    cv::Size m_input;
    Head m_head = Head::Ssd;
};

/** Greedy non-maximum suppression: keeps the best-scored box of each group that overlaps by more
 *  than the IoU threshold, or where one box lies mostly (70 %) inside another (scales). */
std::vector<Detection> nonMaximumSuppression(std::vector<Detection> detections,
                                             double iouThreshold);
double iou(const cv::Rect2d &a, const cv::Rect2d &b);

} // namespace edgetrain::vision

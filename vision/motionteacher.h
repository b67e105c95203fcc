#pragma once

#include "teacher.h"

#include <memory>
#include <string>
#include <vector>

namespace edgetrain::vision {

/** The knobs of MotionTeacher; in a teacher spec as "motion?history=500&min_area=150". */
struct MotionOptions
{
    enum class Model { Mog2, Knn };
    Model model = Model::Mog2; // spec: model=mog2|knn
    int history = 500;         // frames the background model remembers
    double threshold = 16.0;   // MOG2's varThreshold (KNN: dist2Threshold, default 400)
    /** Smallest blob kept, in pixels of a 768x576 frame; scaled with the frame's area. */
    double min_area_px = 150.0; // spec: min_area
    int warmup_frames = 20;     // frames seen before any box is given; spec: warmup
    /** Frames are resized by this before the model sees them (speed); boxes come back in frame
     *  pixels. spec: scale */
    double scale = 1.0;

    /** Options text (the part after '?', may be empty); throws core::SpecError naming `spec`
     *  for an unknown option or a value out of range. */
    static MotionOptions parse(const std::string &text, const std::string &spec);
};

/**
 * Background subtraction as a teacher, for a fixed camera. Every frame, in order, goes into an
 * OpenCV background model (MOG2 by default, shadows detected and dropped); the foreground is
 * cleaned by a 3x3 opening and a 7x7 closing, and each connected blob of at least
 * MotionOptions::min_area_px becomes a box of the blob's extent, score = the blob's fill ratio
 * (its pixels over its box's) in (0, 1]. Until the model has seen `warmup_frames` frames it gives
 * no boxes. Stateful: it must see every frame once, in order (detect() or observe()).
 * It finds anything that moves, people or not, and merges objects that touch; it loses an
 * object that stops long enough to become background. MotionFusionTeacher adds a detector.
 */
class MotionTeacher : public Teacher
{
public:
    /** A foreground blob of the last frame given to detect(). */
    struct Blob
    {
        cv::Rect2d box;     // frame pixels
        double area_px = 0; // foreground pixels, frame pixels
        int label = 0;      // its value in labels()
    };

    explicit MotionTeacher(MotionOptions options = {});
    ~MotionTeacher() override;
    std::string name() const override { return "motion"; }
    std::vector<Detection> detect(const cv::Mat &bgr) override;
    void observe(const cv::Mat &bgr) override;
    bool needsEveryFrame() const override { return true; }

    const MotionOptions &options() const { return m_options; }
    int framesSeen() const { return m_frames; }
    /** The blobs of the last detect() (all that passed min_area, also during warm-up). */
    const std::vector<Blob> &blobs() const { return m_blobs; }
    /** Connected-component labels (CV_32S) of the last detect(), at the model's scale
     *  (processingScale() times the frame's size); 0 is background. */
    const cv::Mat &labels() const { return m_labels; }
    double processingScale() const { return m_options.scale; }

private:
    cv::Mat foreground(const cv::Mat &bgr);

    struct Impl;
    std::unique_ptr<Impl> m_impl;
    MotionOptions m_options;
    int m_frames = 0;
    std::vector<Blob> m_blobs;
    cv::Mat m_labels;
};

} // namespace edgetrain::vision

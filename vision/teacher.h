#pragma once

#include "core/error.h"

#include <opencv2/core.hpp>

#include <map>
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
    bool verified = false; // the teacher's verifier found it too (Teacher::markVerified)
};

/**
 * How a detector's box differs from the object's extent, corrected before its boxes become
 * labels: each edge moves by a fraction of the raw box's width (left, right) or height (top,
 * bottom), positive = rightwards / downwards. {0.1, 0.07, -0.1, -0.07} shrinks a box by 10 % of
 * its width on each side and 7 % of its height at top and bottom.
 */
struct BoxConvention
{
    double dx0 = 0.0, dy0 = 0.0, dx1 = 0.0, dy1 = 0.0;

    cv::Rect2d apply(const cv::Rect2d &raw) const;
    bool isIdentity() const { return dx0 == 0.0 && dy0 == 0.0 && dx1 == 0.0 && dy1 == 0.0; }
    /** "dx0,dy0,dx1,dy1" (each in [-1, 1]); throws core::SpecError naming `where` otherwise. */
    static BoxConvention parse(const std::string &text, const std::string &where);
};

/**
 * A detector that knows the object from its usual viewpoint. Detections below `threshold` are
 * dropped; the boxes it returns are already corrected by `convention`, so every
 * caller sees the object's extent. How often labelling runs it (every k-th frame) is
 * LabelOptions::every; a teacher with a model of the scene (motion) sees the other frames
 * through observe().
 */
class Teacher
{
public:
    virtual ~Teacher() = default;
    virtual std::string name() const = 0;
    virtual std::vector<Detection> detect(const cv::Mat &bgr) = 0;
    /** A frame the caller does not want boxes for; a stateful teacher learns from it. Frames
     *  must come in order, each once, either to observe() or to detect(). */
    virtual void observe(const cv::Mat &bgr) { (void)bgr; }
    /** True for a teacher that must see every frame in order (observe() or detect()) to work:
     *  its detect() on frames picked out of a video gives nothing useful. */
    virtual bool needsEveryFrame() const { return false; }

    float threshold = 0.0f;
    BoxConvention convention; // the kind's default, set by its constructor
    /** A second detector, of another kind, that must find an object at least once for its
     *  track to become labels ("?verify=SPEC"; see LabelOptions): two detectors built
     *  differently rarely make the same mistake for long. Null: no verification. */
    std::unique_ptr<Teacher> verifier;

    /** Sets `verified` on each detection the verifier also finds (IoU >= 0.3), looking in a
     *  window around it (the detection's size again on every side, at least 256 px square);
     *  nothing without one. */
    void markVerified(const cv::Mat &bgr, std::vector<Detection> &hits);

    /**
     * "hog", "cascade:FILE", "onnx:FILE", "motion", "DETECTOR+motion" (see MotionTeacher and
     * MotionFusionTeacher) or "session:DIR" (a session's trained full-frame student, see
     * StudentTeacher). A detector takes "?box=dx0,dy0,dx1,dy1" to override its BoxConvention (e.g.
     * "hog?box=0.2,0.1,-0.2,-0.08"); motion takes its own options
     * ("motion?history=500&min_area=150"), and "?verify=SPEC" for a verifier (e.g.
     * "cascade:haarcascade_frontalface_default.xml?verify=cascade:lbpcascade_frontalface_improved.xml",
     * a detector, not motion; "verify=none": none). A Haar frontal-face cascade without
     * "?verify" is verified by CascadeTeacher::defaultVerifier. Throws TeacherError for a file
     * that is not what it claims, core::SpecError for a spec or option it does not know.
     */
    static std::unique_ptr<Teacher> create(const std::string &spec);

protected:
    /** Applies `convention` and clips to the frame; drops boxes left without area. */
    std::vector<Detection> corrected(std::vector<Detection> raw, cv::Size frame) const;
};

/**
 * OpenCV's HOG people detector (Dalal-Triggs, 64x128 window); score = SVM margin. Its window
 * holds the person with a margin; defaultConvention() shrinks it to the person (measured, see
 * teacher.cpp).
 */
class HogTeacher : public Teacher
{
public:
    HogTeacher();
    static BoxConvention defaultConvention();
    ~HogTeacher() override;
    std::string name() const override { return "hog"; }
    std::vector<Detection> detect(const cv::Mat &bgr) override;
    /** Frames are upscaled by this before detection (small, distant people). */
    double upscale = 1.0;

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/**
 * A Haar or LBP cascade (e.g. haarcascade_frontalface_default.xml); score = level weight. The
 * box convention follows the file's name: frontal-face cascades box brow to mouth (extended to
 * hairline and chin), full-body cascades are corrected like HOG's window, others are left as
 * they are (see defaultConvention()).
 */
class CascadeTeacher : public Teacher
{
public:
    explicit CascadeTeacher(const std::string &file);
    /** The convention for a cascade file, by its name (identity for one not known). */
    static BoxConvention defaultConvention(const std::string &file);
    /** The second opinion a cascade gets when its spec names none: for a Haar frontal-face
     *  cascade, opencv-data's LBP frontal-face cascade beside it (<dir>/../lbpcascades or <dir>);
     *  empty for any other cascade, or when that file is not installed. */
    static std::string defaultVerifier(const std::string &file);
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
 * An ONNX detector through cv::dnn (box convention: identity, it was trained on tight boxes).
 * EdgeTrain's own student export (StudentExport: its metadata says "edgetrain.format") is fed and
 * decoded as FrameStudent does, at the threshold and views in its metadata. Any other network's
 * output is decoded by its shape: SSD-style
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
    enum class Head { Ssd, Yolo, Student };
    Head head() const { return m_head; }
    int keepLabel = -1; // only this class (-1: every class)
    float nmsThreshold = 0.45f;

private:
    /** Recognises an EdgeTrain student export by its metadata and sets it up; false for any other
     *  network. Throws core::FormatError / TeacherError for a student export that is broken. */
    bool loadStudent();

    struct Impl;
    std::unique_ptr<Impl> m_impl;
    std::string m_file;
    cv::Size m_input;
    Head m_head = Head::Ssd;
};

/** Greedy non-maximum suppression: keeps the best-scored box of each group that overlaps by more
 *  than the IoU threshold, or where one box lies mostly (70 %) inside another (scales). */
namespace Internal {
/** "k=v&k=v" (the part of a teacher spec after '?') as a map; throws core::SpecError naming
 *  `spec` for an item without '=' or a key given twice. */
std::map<std::string, std::string> parseOptions(const std::string &text, const std::string &spec);
/** `value` as a number in [lo, hi]; throws core::SpecError naming the option and `spec`. */
double optionNumber(const std::string &key, const std::string &value, double lo, double hi,
                    const std::string &spec);
} // namespace Internal

std::vector<Detection> nonMaximumSuppression(std::vector<Detection> detections,
                                             double iouThreshold);
double iou(const cv::Rect2d &a, const cv::Rect2d &b);

} // namespace edgetrain::vision

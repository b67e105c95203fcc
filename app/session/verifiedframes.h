#pragma once

#include "stepprogress.h"
#include "vision/detectionmetrics.h"
#include "vision/detectionrun.h"
#include "vision/groundtruth.h"
#include "vision/teacher.h"

#include <QString>

#include <atomic>
#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace edgetrain::vision {
class FrameSource;
}

namespace edgetrain::app {

/**
 * Hand-verified boxes from a MOT gt.txt and the list of the frames checked whole (one index a
 * line; frames without boxes included): those frames are done, the others of gt.txt kept as not
 * done. An empty `framesFile`: gt.txt's frames as imported. Throws core::IoError for a file it
 * cannot read and core::FormatError naming file:line for a line that is not a frame of `source`.
 */
vision::GroundTruth readVerifiedTruth(const std::string &motFile, const std::string &framesFile,
                                      vision::FrameSource &source);

/** The detector in a teacher spec: "hog+motion" -> "hog"; "motion" -> "motion". */
std::string detectorPart(const QString &teacherSpec);
/** A video file: a fixed camera, where the motion baseline applies. */
bool fixedCamera(const QString &source);

/** One detector scored on the verified frames: run down to `runThreshold` (so the
 *  precision-recall curve reaches low scores; < 0: its own threshold), scored at `threshold`. */
struct VerifiedDetector
{
    std::string name;
    vision::Teacher *detector = nullptr; // not owned
    float threshold = 0.0f;
    float runThreshold = -1.0f;
};

/** The baselines a student is compared with: the teacher's detector (the "hog" of "hog+motion",
 *  at its own threshold or `teacherThreshold`), and `motion` where the source is a video file
 *  (a fixed camera) whose labelling found no scene cut (`sceneCuts`: a cut means the view
 *  changes, where background subtraction has nothing to say). Owns them. */
struct BaselineDetectors
{
    BaselineDetectors(const QString &teacherSpec, const QString &source,
                      std::optional<float> teacherThreshold = std::nullopt, bool sceneCuts = false);
    std::vector<VerifiedDetector> list() const;

    std::unique_ptr<vision::Teacher> teacher, motion;
};

/**
 * One DetectionRun of the detectors over the verified frames in [first, last] of `truth` (with
 * `pendingToo`, also over its picked frames nobody has finished yet, so their figures follow
 * once they are), then scored (DetectionMetrics, done frames only) on any span of them: the
 * window's and the CLI's evaluation against ground truth. Throws what DetectionRun throws;
 * stopped, it holds what was run.
 */
class VerifiedRun
{
public:
    VerifiedRun(vision::FrameSource &source, vision::GroundTruth truth,
                std::vector<VerifiedDetector> detectors, int first, int last,
                const StepProgress &progress, const std::atomic<bool> *stop,
                bool pendingToo = false);

    /** Verified frames in [first, last]. */
    int frames(int first = 0, int last = INT_MAX) const;
    /** Every detector, in the order given, on the frames in [first, last] at `iou`. */
    std::vector<vision::DetectorScore> score(int first, int last, double iou) const;
    /** Frames per second of detector `i` (its detect() calls alone). */
    double fps(std::size_t i) const;
    const std::vector<VerifiedDetector> &detectors() const { return m_detectors; }
    /** Detector `i`'s boxes, by frame (down to its run threshold). */
    const vision::FrameDetections &detections(std::size_t i) const { return m_run.detections[i]; }
    /** The frames the detectors ran on, sorted. */
    const std::vector<int> &ranFrames() const { return m_frames; }
    const vision::GroundTruth &truth() const { return m_truth; }

private:
    vision::GroundTruth m_truth;
    std::vector<VerifiedDetector> m_detectors;
    vision::DetectionRunResult m_run;
    std::vector<int> m_frames;
};

} // namespace edgetrain::app

#pragma once

#include "detectionmetrics.h"
#include "labeling.h"
#include "scenepaste.h"

#include <atomic>
#include <functional>
#include <string>

namespace edgetrain::vision {

class FrameSource;
class Teacher;

/** A detector's operating threshold and what it achieves where it was chosen. */
struct OperatingPoint
{
    float threshold = 0.3f;
    double recall = 0, precision = 0, f1 = 0; // against the boxes it was chosen on
    double beta = 1.0, f_beta = 0;            // the F-beta it maximised (1: F1) and its value
    int frames = 0, boxes = 0;                // frames and non-ignore boxes it was chosen on
};

/**
 * Chooses a full-frame student's operating threshold on the frames it trained on, against the
 * session's own labels there (the boxes and ignore regions FrameDataset trained it with): the
 * threshold of the best F-beta at IoU `iou`, precision weighing more than recall (F0.5 by
 * default; see Options::beta). Hundreds of label boxes make a steadier choice than
 * the handful of verified frames a user has before the held-out span (on vtest.avi, one model:
 * 44 verified people on 8 frames picked 0.54, 339 label boxes on 60 frames 0.40). This is a
 * calibration, not a quality claim: the student's quality is what it achieves on verified
 * frames.
 */
class OperatingPointCalibration
{
public:
    struct Options
    {
        int frames = 60; // labelled frames used, spread evenly over [0, last_frame]
        /** The F-beta maximised: below 1 precision weighs more. The student repeats the
         *  labels' own wrong boxes, which the labels count as hits, so against a person's truth
         *  on the same frames its precision falls further below the labels' figure than its
         *  recall does; and a session nobody has verified reports at this point. 0.5 is the
         *  usual precision-first choice (recall counts half as much). 1: the best F1. */
        double beta = 0.5;
        int last_frame = -1; // inclusive; -1: every labelled frame (< the labels' max_frames)
        double iou = 0.5;
        float min_tracker_confidence = 0.45f; // as the frame dataset (FrameDatasetOptions)
        /** The dataset's ground plane (FrameDatasetStats::ground), so the labels here are the
         *  targets the student trained on (FrameDataset::frameBoxes settles nested boxes by it). */
        GroundPlane plane;
    };

    /** The best F1 point of a score's curve (threshold 0.3 and zeros when it has no curve). */
    static OperatingPoint bestF1(const DetectorScore &score) { return bestF(score, 1.0); }

    /** The best F-beta point of a score's curve (beta > 0; ties: the highest threshold). */
    static OperatingPoint bestF(const DetectorScore &score, double beta);

    /** Runs `student` (its threshold lowered to see the whole curve, then restored) over the
     *  chosen frames of `source` and returns the best F-beta point (Options::beta) against
     *  `labels`. Throws SourceError if the source cannot be read; stops early (what it has)
     *  when `stop` is set. */
    static OperatingPoint calibrate(FrameSource &source, Teacher &student,
                                    const LabelResult &labels, const Options &options,
                                    const std::function<void(int done, int total)> &progress = {},
                                    const std::atomic<bool> *stop = nullptr);
};

} // namespace edgetrain::vision

#pragma once

#include "groundtruth.h"

#include <opencv2/core.hpp>

#include <climits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace edgetrain::vision {

/** A detection in source pixels with its detector's score (higher: more sure). */
struct ScoredBox
{
    cv::Rect2d box;
    float score = 1.0f;
};

using FrameDetections = std::map<int, std::vector<ScoredBox>>; // by frame index

/** One point of a precision-recall curve: what a detector achieves keeping scores >= threshold. */
struct PrPoint
{
    double recall, precision;
    float threshold;
};

/** A detector's figures against verified frames. */
struct DetectorScore
{
    std::string name;
    int frames = 0;          // verified frames scored
    int truths = 0;          // non-ignore boxes on them
    int detections = 0;      // at the operating threshold, not matched to an ignore box
    int true_positives = 0;  // at the operating threshold
    int false_positives = 0; // at the operating threshold
    double recall = 0, precision = 0, f1 = 0; // at the operating threshold (0 when undefined)
    double ap50 = 0, ap50_95 = 0; // COCO-style 101-point interpolated AP (0 without truths)
    float threshold = 0;          // the operating threshold used
    std::vector<PrPoint> curve;   // at MetricsOptions::iou, by descending score, one per score
};

struct MetricsOptions
{
    double iou = 0.5;       // for the operating point and the curve (AP uses its own IoUs)
    float threshold = 0.0f; // operating point: detections scoring below it are not counted
    bool only_done_frames = true;
    int first_frame = 0;
    int last_frame = INT_MAX; // inclusive
};

/** A detection as the matching judged it: its score and whether it took a truth. */
struct MatchedDetection
{
    float score = 0;
    bool true_positive = false;
};

/** One verified frame as the matching saw it: its non-ignore truths and its detections (those an
 *  ignore box absorbed left out), best score first (ties in the detector's order), matched at
 *  MetricsOptions::iou over ALL scores. Greedy by score, so keeping those >= a threshold
 *  afterwards gives the same true and false positives as matching at that threshold. */
struct FrameMatch
{
    int frame = 0;  // the frame's index in the video
    int truths = 0; // non-ignore boxes
    std::vector<MatchedDetection> detections;
};

/**
 * Detection figures as COCO computes them, against a GroundTruth.
 * Greedy matching by score: each detection of a frame, best score first, takes the unmatched
 * non-ignore truth with the highest IoU >= iou; if none, a detection that matches an ignore box
 * (IoU >= iou, or mostly inside it: intersection / detection area >= 0.5; an ignore box can
 * absorb several) is neither true nor false; otherwise it is false. Only frames of the truth
 * (done ones, if only_done_frames) within [first_frame, last_frame] count; detections on other
 * frames are not looked at; a frame without detections counts its truths as missed.
 * AP: detections of all frames sorted by score, precision made monotone (the envelope), sampled
 * at recall 0, 0.01, ..., 1 (101 points) and averaged; AP@[.5:.95] averages AP over IoU 0.50,
 * 0.55, ..., 0.95. Throws nothing; a truth without boxes gives recall and AP 0.
 */
class DetectionMetrics
{
public:
    static DetectorScore evaluate(const std::string &name, const FrameDetections &detections,
                                  const GroundTruth &truth, const MetricsOptions &options);
    /** The same for a list of detectors (name, detections) with one option set, in order. */
    static std::vector<DetectorScore>
    evaluate(const std::vector<std::pair<std::string, FrameDetections>> &detectors,
             const GroundTruth &truth, const MetricsOptions &options);
    /** Each scored frame's matches (frames chosen exactly as evaluate() chooses them: done ones
     *  if only_done_frames, within the span), sorted by frame; options.threshold is ignored. */
    static std::vector<FrameMatch> frameMatches(const FrameDetections &detections,
                                                const GroundTruth &truth,
                                                const MetricsOptions &options);

    /** Figures from frame matches. A figure that is undefined is 0, as in evaluate(); tell it
     *  by the counts: recall and ap50 need truths, precision needs detections, f1 either. */
    struct Figures
    {
        double recall = 0, precision = 0, f1 = 0, ap50 = 0;
        int truths = 0, detections = 0, true_positives = 0; // detections: at the threshold
    };
    /**
     * Recall, precision and f1 at `threshold`, and the 101-point AP of all detections (at the
     * IoU the frames were matched at: evaluate()'s ap50 when that is 0.5), each frame counted
     * `weight[i]` times (empty: once each). Counted w times means as if the frame were listed w
     * times in a row, so tied scores keep evaluate()'s order (by frame, then the frame's own).
     * Given evaluate()'s frames and no weights, every figure is the same double evaluate() gives.
     * Throws core::Error if `weight` is neither empty nor one non-negative count per frame.
     */
    static Figures figures(const std::vector<FrameMatch> &frames, float threshold,
                           const std::vector<int> &weight = {});

    /** Intersection over union of two boxes (0 if either has no area). */
    static double iou(const cv::Rect2d &a, const cv::Rect2d &b);
};

} // namespace edgetrain::vision

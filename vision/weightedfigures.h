#pragma once

#include "detectionmetrics.h"

#include <vector>

namespace edgetrain::vision {

/**
 * Frame matches prepared once at a threshold (per-frame counts, all detections sorted by score)
 * so that DetectionMetrics::figures under many weightings, a bootstrap's draws, costs one pass
 * over the detections each instead of a sort. figures(w) gives what DetectionMetrics::figures
 * gives for the same frames, threshold and weights, to the bit. figures() may run on several
 * threads at once (its scratch space is per thread).
 */
class WeightedFigures
{
public:
    WeightedFigures(const std::vector<FrameMatch> &frames, float threshold);

    int frameCount() const { return int(m_frames.size()); }
    /** `weight`: empty (each frame once) or one non-negative count per frame; else throws
     *  core::Error. */
    DetectionMetrics::Figures figures(const std::vector<int> &weight = {}) const;

private:
    struct FrameCounts
    {
        int truths = 0, detections = 0, true_positives = 0; // detections: at the threshold
    };
    /** Detections of one frame with one score, consecutive in the sorted order: counted w
     *  times, they repeat as a block (a frame listed w times in a row), not one by one. */
    struct TiedRun
    {
        int frame = 0;          // position in m_frames
        int first = 0, end = 0; // into m_true_positive
    };

    std::vector<FrameCounts> m_frames;
    std::vector<TiedRun> m_runs;       // by descending score, ties by frame
    std::vector<char> m_true_positive; // per detection, in m_runs' order
};

} // namespace edgetrain::vision

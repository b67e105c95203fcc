#pragma once

#include "detectionmetrics.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace edgetrain::vision {

/** A confidence interval [lo, hi]. draws: how many resamples defined the figure. */
struct Interval
{
    double lo = 0, hi = 0;
    int draws = 0;
    bool contains(double v) const { return lo <= v && v <= hi; }
    /** Strictly on one side of zero ([0, 0.1] is not). */
    bool clearOfZero() const { return lo > 0 || hi < 0; }
};

struct FigureIntervals
{
    Interval recall, precision, f1, ap50;
};

struct BootstrapOptions
{
    int resamples = 2000;
    std::uint64_t seed = 20261128;
    double level = 0.95; // in (0, 1)
};

/** A detector's matches on the verified frames, and the threshold of its operating point. */
struct BootstrapDetector
{
    std::string name;
    float threshold = 0;
    std::vector<FrameMatch> frames; // DetectionMetrics::frameMatches
};

struct BootstrapDifference
{
    std::string a, b;                    // detector names
    DetectionMetrics::Figures a_minus_b; // recall, precision, f1, ap50: a's minus b's (counts: a's)
    FigureIntervals ci;                  // of those differences
};

struct BootstrapResult
{
    int frames = 0, resamples = 0;
    std::uint64_t seed = 0;
    double level = 0.95;
    std::vector<DetectionMetrics::Figures> figures; // point figures, one per detector, in order
    std::vector<FigureIntervals> intervals;         // one per detector, in the given order
    std::vector<BootstrapDifference> differences;   // one per requested pair, in order
};

/**
 * Percentile bootstrap intervals for detection figures, over verified frames (a frame's boxes are
 * not independent of each other; frames are the unit), paired: each draw of frames is scored for
 * every detector, so a difference's interval sees how the detectors vary together.
 *
 * Bounds are order statistics of the draws' figures at floor(a(m-1)) and ceil((1-a)(m-1)),
 * a = (1 - level) / 2, m the draws that define the figure: no interpolation, so every bound is a
 * figure some draw produced and the bounds are the same bits on every platform.
 * A figure undefined in a draw (recall or ap50 without truths, precision without detections at
 * the threshold, f1 without either) is left out for that draw; a difference needs both sides.
 * If fewer than half the draws define a figure, its interval is the whole range ([0, 1], for a
 * difference [-1, 1]): the frames cannot say where it lies.
 * With fewer than 2 frames every interval is the whole range, since one frame resampled is always
 * itself and its spread would say nothing about frames not verified.
 * Without truths on any frame, recall and ap50 are undefined in every draw: whole range.
 */
class Bootstrap
{
public:
    /**
     * `resamples` draws of n frames with replacement (std::mt19937_64 seeded with `seed`, indices
     * by Lemire's multiply-shift with rejection, so the same inputs give the same bounds
     * everywhere), each detector's figures on the same draw; pairs are (index a, index b) into
     * detectors. Throws core::Error when the detectors' frames differ (index or truths, in
     * order), a pair index is out of range, resamples < 1 or level is not in (0, 1).
     */
    static BootstrapResult run(const std::vector<BootstrapDetector> &detectors,
                               const std::vector<std::pair<int, int>> &pairs,
                               const BootstrapOptions &options = {});

    /**
     * How many MORE verified frames the difference (point `delta`, interval `ci` from `frames`
     * frames) would need to be clear of zero, if the interval's reach from delta on the side of
     * zero shrinks as 1/sqrt(frames): 0 when already clear; nullopt when delta is 0, frames < 1,
     * or more than `cap` frames would be needed.
     */
    static std::optional<int> framesToSettle(int frames, double delta, const Interval &ci,
                                             int cap = 500);
};

} // namespace edgetrain::vision

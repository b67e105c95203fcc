#pragma once

#include <opencv2/core.hpp>

#include <optional>
#include <string>

namespace edgetrain::vision {

/** Why a box was kept away from OpenCV. */
enum class BoxFault { NotFinite, Outside, TooSmall };
/** "not_finite", "outside", "too_small" (the JSON keys of DroppedBoxes). */
const char *boxFaultName(BoxFault fault);

/** A box as BoxGuard::check left it: clipped to the frame, or refused with the reason. */
struct GuardedBox
{
    cv::Rect2d box;  ///< clipped to the frame (frame pixels); empty when refused
    cv::Rect pixels; ///< the whole pixels it covers, inside the frame; empty when refused
    std::optional<BoxFault> fault;
    bool ok() const { return !fault; }
};

/** Boxes refused on their way in, by reason; summed over a run. */
struct DroppedBoxes
{
    int not_finite = 0, outside = 0, too_small = 0;

    void count(BoxFault fault);
    int total() const { return not_finite + outside + too_small; }
    /** "2 outside the frame, 1 under 12 px" ("" when none). */
    std::string summary(double minSide_px) const;
};

/**
 * The one gate a box passes before it becomes a region of an image: a tracker's init, a crop,
 * a histogram, a gallery tile. OpenCV asserts on an empty or out-of-frame ROI and on a box of a
 * pixel or two (KCF, CSRT, MOSSE), and its MIL tracker loops for ever on one of 4 px or less; an
 * assertion inside labelling used to end the whole run. Nothing that fails this check may reach
 * OpenCV.
 */
class BoxGuard
{
public:
    /** The smallest side, in the tracker's image, that every tracker of trackerNames() takes
     *  (MIL hangs at 4 px; 5 px works for all; one more for rounding). */
    static constexpr int kTrackerMinSide_px = 6;

    /** `box` clipped to a frame of `frame` size. Refused: a coordinate or side that is NaN or
     *  infinite (NotFinite); nothing left inside the frame, a negative side included (Outside);
     *  a side under `minSide_px` once clipped, or a frame without area (TooSmall). */
    static GuardedBox check(const cv::Rect2d &box, cv::Size frame, double minSide_px = 1.0);
};

} // namespace edgetrain::vision

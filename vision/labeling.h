#pragma once

#include "framesource.h"
#include "labelresult.h"
#include "teacher.h"

#include <atomic>
#include <functional>
#include <string>

namespace edgetrain::vision {

/**
 * Label propagation: the teacher runs every k-th frame (the others go to its observe(), for a
 * teacher with a model of the scene); each hit either continues a track it
 * overlaps or starts one, which is followed backwards (through the frames kept in memory) and
 * forwards with an OpenCV tracker until the tracker fails, the box leaves the frame, a scene cut
 * comes, or a drift check fails: the box's colour histogram no longer resembles the teacher's
 * view of the object, its size runs away, or no teacher hit has confirmed it for too long.
 * Trackers' own verdicts are not trusted: on vtest.avi they slide onto the lamp post reporting
 * success. A backward run that meets another track's box merges the two. At the end, tracks
 * shorter than `min_track_boxes` and tracks the teacher confirmed too rarely (`min_teacher_share`
 * of its runs over the track's span) are rejected, with a note saying why.
 *
 * What no tracker can take never reaches one: teacher boxes are clipped to the frame and those
 * left under BoxGuard::kTrackerMinSide_px at the trackers' scale, or not finite, are dropped and
 * counted (LabelStats::dropped). An OpenCV error inside a tracker ends that object's run (its
 * Track::failure), not the labelling.
 */
class Labeler
{
public:
    using Progress = std::function<void(int frame, int frames, const LabelStats &)>;
    /** Handed the labels so far, as they would be if the run ended here, every
     *  LabelOptions::checkpoint_every_s of work: the caller saves them, so that a process killed
     *  mid-run loses little. An exception it throws (a full disk) stops the run like any other. */
    using Checkpoint = std::function<void(const LabelResult &)>;

    /** Throws core::SpecError for bad options or an unknown tracker, before any work. Anything
     *  that stops the run after that (an unreadable frame, a teacher's error, a checkpoint that
     *  cannot be written) does not throw: the result holds the tracks up to there and
     *  LabelResult::stopped says why. */
    static LabelResult run(FrameSource &source, Teacher &teacher, const LabelOptions &options,
                           const Progress &progress = {}, const std::atomic<bool> *stop = nullptr,
                           const Checkpoint &checkpoint = {});
};

/** Frame histogram difference for scene cuts (Bhattacharyya distance of HSV histograms). */
double sceneChange(const cv::Mat &a, const cv::Mat &b);
/** Hue-saturation histogram of a region, normalised, for appearance checks; empty for a box
 *  that holds fewer than 2x2 pixels of the image. */
cv::Mat appearance(const cv::Mat &bgr, const cv::Rect2d &box);
double similarity(const cv::Mat &histA, const cv::Mat &histB);

} // namespace edgetrain::vision

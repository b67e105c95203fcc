#pragma once

#include "labelresult.h"

#include <opencv2/video/tracking.hpp>

#include <deque>
#include <string>

namespace edgetrain::vision {

/**
 * One tracker run of the Labeler: follows a box from an anchor frame, judging every step itself
 * (trackers' own verdicts are not trusted). The tracker's image is the frame resized by the
 * run's scale; boxes are in frame pixels. An OpenCV error inside the tracker ends the run
 * (Verdict::Failed, error() says what), never the labelling.
 */
class TrackFollower
{
public:
    enum class Verdict { Ok, Lost, Left, Drift, Stale, Failed };

    /** Starts a tracker of `kind` on `box` in `image` (the frame at `scale`), as confirmed by
     *  the teacher at `frame`. False, with error() set, when the box is too small for a tracker
     *  at that scale (BoxGuard) or the tracker refuses it: the follower must not be stepped. */
    bool start(const std::string &kind, const cv::Mat &image, const cv::Rect2d &box, int frame,
               double scale);
    /** Advances to `image` (frame `frame`); on Ok, box() is the new box and `*confidence` its
     *  appearance similarity, decayed by the frames since the teacher's confirmation. */
    Verdict step(const cv::Mat &image, int frame, const LabelOptions &options, float *confidence);

    const cv::Rect2d &box() const { return m_box; }
    const std::string &error() const { return m_error; }

    int track = -1; // the Track this run adds to

private:
    /** A box that moved briskly and then freezes on the spot has slid onto the background. */
    bool froze() const;

    cv::Ptr<cv::Tracker> m_tracker;
    cv::Mat m_anchor; // appearance at the last teacher confirmation
    double m_anchorArea = 0.0;
    int m_lastTeacher = 0;
    cv::Rect2d m_box;
    double m_scale = 1.0;
    std::deque<cv::Point2d> m_centres; // of the last boxes, newest last
    std::string m_error;
};

} // namespace edgetrain::vision

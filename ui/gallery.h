#pragma once

#include "app/session/session.h"
#include "vision/framedataset.h"
#include "vision/groundtruth.h"
#include "vision/labeling.h"

#include <QImage>
#include <QList>
#include <opencv2/core.hpp>

namespace edgetrain::ui {

/**
 * Pictures of frames for viewers and reports: a decoded frame as a QImage, and the gallery of
 * the evaluation's gains (frames where the student found a person the teacher missed).
 */
class Gallery
{
public:
    /** A cv::Mat (BGR) as a QImage (deep copy). */
    static QImage toImage(const cv::Mat &bgr);

    /**
     * One sample of the full-frame dataset (vision::FrameDataset) as the student trains on it:
     * its image from `folder` (FrameDataset::folder) scaled to `height` pixels, the objects in
     * the tracker's pen (the labels are the tracks the teacher's hits started), ignore regions
     * hatched in the ignore pen, and on top what it is (a frame, a jittered or pasted copy, the
     * background) with its counts. `copy` says it is a training copy of its frame. A null image
     * if the file cannot be read.
     */
    static QImage renderSample(const QString &folder, const vision::FrameSample &sample, bool copy,
                               int height);

    /**
     * Up to `max` of the session's evaluation gains, spread over the list: each the person with
     * some surroundings at `height` pixels, the labelled box (the tracker's) and the student's in
     * their BoxStyle pens, the frame number on top. Decodes the source: blocking, call it off the
     * GUI thread. Frames that cannot be read are left out; throws vision's error if the source
     * cannot be opened.
     */
    static QList<QImage> renderGains(const app::Session &session, const vision::LabelResult &labels,
                                     int max, int height = 220);

    /**
     * Up to `max` verified frames (done, from `first_frame` on, spread over them), each the whole
     * frame `height` pixels high: the verified boxes, ignore boxes, the teacher's and the
     * student's detections in their BoxStyle pens, each at its operating threshold in
     * `scores` (by name; the detector's own threshold if absent); on top the frame number and
     * how many boxes each found (IoU 0.5) beside its line style. The teacher is
     * Teacher::create(capture.teacher), the student the session's full-frame student (left out if
     * the session has none); both run through vision::DetectionRun, which decodes the source from
     * its start to the last chosen frame (a motion teacher sees every frame). Blocking, seconds:
     * call it off the GUI thread. Throws vision's and core's errors (source, teacher, weights).
     */
    static QList<QImage> renderVerified(const app::Session &session,
                                        const vision::GroundTruth &truth, int first_frame,
                                        const std::vector<vision::DetectorScore> &scores, int max,
                                        int height = 300);
};

} // namespace edgetrain::ui

#pragma once

#include "app/session/session.h"
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
     * Up to `max` of the session's evaluation gains, spread over the list: each the person with
     * some surroundings at `height` pixels, the labelled box dashed orange, the student's green,
     * the frame number on top. Decodes the source: blocking, call it off the GUI thread. Frames
     * that cannot be read are left out; throws vision's error if the source cannot be opened.
     */
    static QList<QImage> renderGains(const app::Session &session, const vision::LabelResult &labels,
                                     int max, int height = 220);
};

} // namespace edgetrain::ui

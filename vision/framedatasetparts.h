#pragma once

#include "core/detectionloss.h"
#include "core/json.h"
#include "core/random.h"
#include "datasetfolder.h"

#include <opencv2/core.hpp>

#include <string>
#include <vector>

/** The pieces the frame dataset's build (framedatasetbuild.cpp) and its reading
 *  (framedataset.cpp) share: box arithmetic, the jitter and colour changes of the copies, the
 *  median background, and where the dataset's folder is. */
namespace edgetrain::vision::frameparts {

cv::Rect2d rectOf(const core::LabelBox &b);
/** Boxes scaled from source pixels to input pixels; a box under `minHeight` becomes ignore. */
std::vector<core::LabelBox> scaled(const std::vector<core::LabelBox> &boxes, double kx, double ky,
                                   double minHeight);
/** Clips boxes to the input; a box mostly cut becomes an ignore region, one nearly gone is
 *  dropped. */
std::vector<core::LabelBox> clipped(const std::vector<core::LabelBox> &boxes, cv::Size input);
/** Brightness, contrast and a gain per colour channel. */
cv::Mat photometric(const cv::Mat &image, core::Rng &rng);
/** A jittered copy: flip, scale 0.7-2.4 (log-uniform) about a random centre, a shift of up to
 *  15 % of the frame, brightness, contrast and a gain per colour channel; `outBoxes` the boxes
 *  moved with it. */
cv::Mat augment(const cv::Mat &image, const std::vector<core::LabelBox> &boxes, core::Rng &rng,
                std::vector<core::LabelBox> *outBoxes);
/** The per-pixel median of images of one size and type. */
cv::Mat medianImage(const std::vector<cv::Mat> &images);
/** <session>/frames, staged in <session>/frames.tmp. */
DatasetFolder frameFolder(const std::string &sessionDir);
/** Boxes as index.json holds them: [x0, y0, x1, y1, ignore]. */
core::Json boxesJson(const std::vector<core::LabelBox> &boxes);

} // namespace edgetrain::vision::frameparts

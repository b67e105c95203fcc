#pragma once

#include <opencv2/core.hpp>
#include <opencv2/video/tracking.hpp>

#include <string>
#include <vector>

namespace edgetrain::vision {

/** csrt, kcf, mil (OpenCV's tracking API) and the fast legacy mosse, medianflow. */
std::vector<std::string> trackerNames();
/** Throws core::SpecError for an unknown name. */
cv::Ptr<cv::Tracker> createTracker(const std::string &name);

} // namespace edgetrain::vision

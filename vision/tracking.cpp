#include "tracking.h"

#include "core/error.h"

#include <opencv2/tracking.hpp>
#include <opencv2/tracking/tracking_legacy.hpp>

namespace edgetrain::vision {

std::vector<std::string> trackerNames()
{
    return {"csrt", "kcf", "mil", "mosse", "medianflow"};
}

cv::Ptr<cv::Tracker> createTracker(const std::string &name)
{
    if (name == "csrt")
        return cv::TrackerCSRT::create();
    if (name == "kcf")
        return cv::TrackerKCF::create();
    if (name == "mil")
        return cv::TrackerMIL::create();
    if (name == "mosse")
        return cv::legacy::upgradeTrackingAPI(cv::legacy::TrackerMOSSE::create());
    if (name == "medianflow")
        return cv::legacy::upgradeTrackingAPI(cv::legacy::TrackerMedianFlow::create());
    throw core::SpecError("tracker must be csrt, kcf, mil, mosse or medianflow, not '" + name +
                          "'");
}

} // namespace edgetrain::vision

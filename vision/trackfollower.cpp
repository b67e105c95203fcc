#include "trackfollower.h"

#include "labeling.h"
#include "tracking.h"

#include <cmath>

namespace edgetrain::vision {

namespace {

cv::Rect2d scaled(const cv::Rect2d &b, double k)
{
    return {b.x * k, b.y * k, b.width * k, b.height * k};
}

/** OpenCV's words without its version and source path: "init: !(roi & image_roi).empty()". */
std::string openCvReason(const cv::Exception &e)
{
    return (e.func.empty() ? std::string() : e.func + ": ") + (e.err.empty() ? e.msg : e.err);
}

} // namespace

bool TrackFollower::start(const std::string &kind, const cv::Mat &image, const cv::Rect2d &box,
                          int frame, double scale)
{
    m_scale = scale;
    m_tracker.reset();
    const GuardedBox g =
        BoxGuard::check(scaled(box, scale), image.size(), BoxGuard::kTrackerMinSide_px);
    if (!g.ok()) {
        m_error = std::string("the box is ") + boxFaultName(*g.fault) + " at the tracker's scale";
        return false;
    }
    try {
        auto tracker = createTracker(kind);
        tracker->init(image, g.pixels);
        m_tracker = tracker;
    } catch (const cv::Exception &e) {
        m_error = openCvReason(e);
        return false;
    }
    m_anchor = appearance(image, g.box);
    m_anchorArea = box.area();
    m_lastTeacher = frame;
    m_box = box;
    m_centres.push_back((box.tl() + box.br()) * 0.5);
    return true;
}

bool TrackFollower::froze() const
{
    // vtest.avi's lamp post: an object that stops does so gradually, a tracker at once.
    constexpr std::size_t kWindow = 12;
    if (m_centres.size() < 2 * kWindow)
        return false;
    const auto n = m_centres.size();
    const double before = cv::norm(m_centres[n - kWindow - 1] - m_centres[n - 2 * kWindow]);
    const double after = cv::norm(m_centres[n - 1] - m_centres[n - kWindow]);
    return before > 1.0 * double(kWindow) && after < 0.1 * before;
}

TrackFollower::Verdict TrackFollower::step(const cv::Mat &image, int frame, const LabelOptions &o,
                                           float *confidence)
{
    if (!m_tracker)
        return Verdict::Failed;
    cv::Rect r;
    bool ok = false;
    try {
        ok = m_tracker->update(image, r);
    } catch (const cv::Exception &e) {
        m_error = openCvReason(e);
        m_tracker.reset();
        return Verdict::Failed;
    }
    if (!ok || r.area() <= 0)
        return Verdict::Lost;
    const cv::Rect2d inImage(r);
    if ((inImage & cv::Rect2d(0, 0, image.cols, image.rows)).area() < 0.6 * inImage.area())
        return Verdict::Left;
    const cv::Rect2d b = scaled(inImage, 1.0 / m_scale);
    if (std::abs(frame - m_lastTeacher) > o.max_tracker_run)
        return Verdict::Stale;
    const double ratio = b.area() / std::max(m_anchorArea, 1.0);
    if (ratio > o.max_scale_change || ratio < 1.0 / o.max_scale_change)
        return Verdict::Drift;
    const double sim = similarity(appearance(image, inImage), m_anchor);
    if (sim < o.min_appearance)
        return Verdict::Drift;
    // A box the tracker shrank below what a tracker can take: the next update could assert or,
    // for MIL, never return.
    if (!BoxGuard::check(inImage, image.size(), BoxGuard::kTrackerMinSide_px).ok())
        return Verdict::Lost;
    m_box = b;
    m_centres.push_back((b.tl() + b.br()) * 0.5);
    while (m_centres.size() > 24)
        m_centres.pop_front();
    if (froze())
        return Verdict::Drift;
    *confidence = float(sim * std::pow(0.99, std::abs(frame - m_lastTeacher)));
    return Verdict::Ok;
}

} // namespace edgetrain::vision

#include "boxguard.h"

#include <cmath>
#include <cstdio>

namespace edgetrain::vision {

const char *boxFaultName(BoxFault fault)
{
    switch (fault) {
    case BoxFault::NotFinite:
        return "not_finite";
    case BoxFault::Outside:
        return "outside";
    case BoxFault::TooSmall:
        return "too_small";
    }
    return "";
}

void DroppedBoxes::count(BoxFault fault)
{
    switch (fault) {
    case BoxFault::NotFinite:
        ++not_finite;
        break;
    case BoxFault::Outside:
        ++outside;
        break;
    case BoxFault::TooSmall:
        ++too_small;
        break;
    }
}

std::string DroppedBoxes::summary(double minSide_px) const
{
    std::string out;
    auto add = [&](int n, const std::string &what) {
        if (n == 0)
            return;
        out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + what;
    };
    char small[48];
    std::snprintf(small, sizeof small, "under %.0f px", minSide_px);
    add(too_small, small);
    add(outside, "outside the frame");
    add(not_finite, "with a coordinate not a number");
    return out;
}

GuardedBox BoxGuard::check(const cv::Rect2d &box, cv::Size frame, double minSide_px)
{
    GuardedBox g;
    if (!std::isfinite(box.x) || !std::isfinite(box.y) || !std::isfinite(box.width) ||
        !std::isfinite(box.height) || !std::isfinite(box.x + box.width) ||
        !std::isfinite(box.y + box.height)) {
        g.fault = BoxFault::NotFinite;
        return g;
    }
    if (frame.width <= 0 || frame.height <= 0) {
        g.fault = BoxFault::TooSmall;
        return g;
    }
    const double x0 = std::max(box.x, 0.0), y0 = std::max(box.y, 0.0);
    const double x1 = std::min(box.x + box.width, double(frame.width));
    const double y1 = std::min(box.y + box.height, double(frame.height));
    if (box.width < 0 || box.height < 0 || x1 <= x0 || y1 <= y0) {
        g.fault = BoxFault::Outside;
        return g;
    }
    const double minSide = std::max(minSide_px, 1.0);
    if (x1 - x0 < minSide || y1 - y0 < minSide) {
        g.fault = BoxFault::TooSmall;
        return g;
    }
    g.box = cv::Rect2d(x0, y0, x1 - x0, y1 - y0);
    // The pixels whose centres it covers, at least the rounded size: within the frame by
    // construction (x0 >= 0, x1 <= width), and never empty (each side >= 1 px above).
    const int px0 = std::min(int(std::lround(x0)), frame.width - 1);
    const int py0 = std::min(int(std::lround(y0)), frame.height - 1);
    const int px1 = std::clamp(int(std::lround(x1)), px0 + 1, frame.width);
    const int py1 = std::clamp(int(std::lround(y1)), py0 + 1, frame.height);
    g.pixels = cv::Rect(px0, py0, px1 - px0, py1 - py0);
    return g;
}

} // namespace edgetrain::vision

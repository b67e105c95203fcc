#include "scenepaste.h"

#include "boxguard.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

namespace edgetrain::vision {

GroundPlane GroundPlane::fit(const std::vector<cv::Rect2d> &boxes, cv::Size frame)
{
    GroundPlane g;
    g.boxes = int(boxes.size());
    if (boxes.empty())
        return g;
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    g.low = g.high = boxes.front().y + boxes.front().height;
    for (const cv::Rect2d &b : boxes) {
        const double x = b.y + b.height, y = b.height;
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
        syy += y * y;
        g.low = std::min(g.low, x);
        g.high = std::max(g.high, x);
    }
    const double n = double(boxes.size());
    const double var = sxx - sx * sx / n;
    if (var <= 0)
        return g;
    const double cov = sxy - sx * sy / n, varHeight = syy - sy * sy / n;
    g.slope = cov / var;
    g.offset = (sy - g.slope * sx) / n;
    g.r2 = varHeight > 0 ? cov * cov / (var * varHeight) : 0.0;
    const double atBottom = g.heightAt(frame.height);
    g.usable = g.boxes >= 20 && g.high - g.low >= 0.1 * frame.height && g.slope > 0 &&
               g.r2 >= 0.3 && atBottom >= 8 && atBottom <= 0.95 * frame.height;
    return g;
}

std::optional<Cutout> ScenePaste::cut(const cv::Mat &frame, const cv::Mat &background,
                                      const cv::Rect2d &box)
{
    if (!BoxGuard::check(box, frame.size(), 4.0).ok())
        return std::nullopt;
    const cv::Rect inside(0, 0, frame.cols, frame.rows);
    const cv::Rect b(int(std::floor(box.x)), int(std::floor(box.y)), int(std::ceil(box.width)),
                     int(std::ceil(box.height)));
    if (b.height < 24 || b.width < 4 || (b & inside) != b || background.size() != frame.size())
        return std::nullopt;
    // The label box and a margin of a tenth of its size: loose boxes cut nothing off.
    const int mx = std::max(2, b.width / 10), my = std::max(2, b.height / 10);
    const cv::Rect patch =
        cv::Rect(b.x - mx, b.y - my, b.width + 2 * mx, b.height + 2 * my) & inside;
    cv::Mat diff;
    cv::absdiff(frame(patch), background(patch), diff);
    std::vector<cv::Mat> channels;
    cv::split(diff, channels);
    cv::Mat most = channels[0];
    for (std::size_t c = 1; c < channels.size(); ++c)
        most = cv::max(most, channels[c]);
    cv::Mat mask = most > 30;
    cv::morphologyEx(mask, mask, cv::MORPH_OPEN,
                     cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(3, 3)));
    cv::morphologyEx(mask, mask, cv::MORPH_CLOSE,
                     cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(7, 7)));
    // An object: it differs from the background over a fifth of its box at least, and the
    // margin around the box is mostly background (a light change or a crowd fills both).
    const cv::Rect inPatch(b.x - patch.x, b.y - patch.y, b.width, b.height);
    const double within = cv::countNonZero(mask(inPatch));
    const double margin = double(patch.area() - inPatch.area());
    const double around = margin > 0 ? (cv::countNonZero(mask) - within) / margin : 0.0;
    if (within < 0.2 * inPatch.area() || around > 0.5)
        return std::nullopt;
    Cutout c;
    frame(patch).copyTo(c.bgr);
    mask.convertTo(c.alpha, CV_32F, 1.0 / 255.0);
    cv::GaussianBlur(c.alpha, c.alpha, cv::Size(5, 5), 0);
    c.box = cv::Rect2d(box.x - patch.x, box.y - patch.y, box.width, box.height);
    return c;
}

std::vector<core::LabelBox> ScenePaste::paste(cv::Mat &image, const std::vector<Cutout> &cutouts,
                                              const GroundPlane &plane, cv::Size frame, double kx,
                                              double ky,
                                              const std::vector<core::LabelBox> &existing,
                                              core::Rng &rng)
{
    std::vector<core::LabelBox> pasted;
    if (cutouts.empty() || !plane.usable)
        return pasted;
    std::vector<core::LabelBox> taken = existing;
    auto overlaps = [&](const core::LabelBox &a) {
        return std::any_of(taken.begin(), taken.end(), [&](const core::LabelBox &t) {
            const double w = std::min(a.x1, t.x1) - std::max(a.x0, t.x0);
            const double h = std::min(a.y1, t.y1) - std::max(a.y0, t.y0);
            if (w <= 0 || h <= 0)
                return false;
            const double smaller = std::min(double(a.x1 - a.x0) * double(a.y1 - a.y0),
                                            double(t.x1 - t.x0) * double(t.y1 - t.y0));
            return w * h > 0.25 * smaller;
        });
    };
    const int wanted = 1 + int(rng.below(3));
    for (int tries = 0; int(pasted.size()) < wanted && tries < 12 * wanted; ++tries) {
        const Cutout &c = cutouts[std::size_t(rng.below(cutouts.size()))];
        const double bottom = rng.uniform(float(plane.low), float(frame.height));
        const double height = plane.heightAt(bottom) * rng.uniform(0.9f, 1.1f);
        const double k = height / c.box.height; // cut-out pixels -> source pixels
        const double width = c.box.width * k;
        if (height < 24 || height > 0.95 * frame.height || width >= frame.width ||
            bottom - height < 0)
            continue;
        const double x0 = rng.uniform(0.0f, float(frame.width - width));
        const bool flip = rng.uniform() < 0.5f;
        // The label box in input pixels, and where the cut-out's own pixels land.
        core::LabelBox box;
        box.x0 = float(x0 * kx);
        box.x1 = float((x0 + width) * kx);
        box.y0 = float((bottom - height) * ky);
        box.y1 = float(bottom * ky);
        if (overlaps(box))
            continue;
        const double sx = k * kx, sy = k * ky; // cut-out pixels -> input pixels
        const double left = flip ? c.bgr.cols - (c.box.x + c.box.width) : c.box.x;
        const cv::Rect target(int(std::lround(box.x0 - left * sx)),
                              int(std::lround(box.y0 - c.box.y * sy)),
                              std::max(1, int(std::lround(c.bgr.cols * sx))),
                              std::max(1, int(std::lround(c.bgr.rows * sy))));
        const cv::Rect visible = target & cv::Rect(0, 0, image.cols, image.rows);
        if (visible.area() <= 0)
            continue;
        cv::Mat bgr, alpha;
        cv::resize(c.bgr, bgr, target.size(), 0, 0, cv::INTER_AREA);
        cv::resize(c.alpha, alpha, target.size(), 0, 0, cv::INTER_AREA);
        if (flip) {
            cv::flip(bgr, bgr, 1);
            cv::flip(alpha, alpha, 1);
        }
        const cv::Rect from(visible.x - target.x, visible.y - target.y, visible.width,
                            visible.height);
        for (int y = 0; y < visible.height; ++y) {
            cv::Vec3b *dst = image.ptr<cv::Vec3b>(visible.y + y) + visible.x;
            const cv::Vec3b *src = bgr.ptr<cv::Vec3b>(from.y + y) + from.x;
            const float *a = alpha.ptr<float>(from.y + y) + from.x;
            for (int x = 0; x < visible.width; ++x)
                for (int ch = 0; ch < 3; ++ch)
                    dst[x][ch] =
                        cv::saturate_cast<uchar>(a[x] * src[x][ch] + (1.0f - a[x]) * dst[x][ch]);
        }
        box.x0 = std::clamp(box.x0, 0.0f, float(image.cols));
        box.x1 = std::clamp(box.x1, 0.0f, float(image.cols));
        box.y0 = std::clamp(box.y0, 0.0f, float(image.rows));
        box.y1 = std::clamp(box.y1, 0.0f, float(image.rows));
        taken.push_back(box);
        pasted.push_back(box);
    }
    return pasted;
}

} // namespace edgetrain::vision

#include "framedatasetparts.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace edgetrain::vision::frameparts {

namespace fs = std::filesystem;

cv::Rect2d rectOf(const core::LabelBox &b)
{
    return {b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0};
}

std::vector<core::LabelBox> scaled(const std::vector<core::LabelBox> &boxes, double kx, double ky,
                                   double minHeight)
{
    std::vector<core::LabelBox> out;
    for (core::LabelBox b : boxes) {
        b.x0 = float(b.x0 * kx);
        b.x1 = float(b.x1 * kx);
        b.y0 = float(b.y0 * ky);
        b.y1 = float(b.y1 * ky);
        if (b.y1 - b.y0 < minHeight)
            b.ignore = true;
        out.push_back(b);
    }
    return out;
}

std::vector<core::LabelBox> clipped(const std::vector<core::LabelBox> &boxes, cv::Size input)
{
    std::vector<core::LabelBox> out;
    for (core::LabelBox b : boxes) {
        const double area = double(b.x1 - b.x0) * double(b.y1 - b.y0);
        core::LabelBox c = b;
        c.x0 = std::clamp(b.x0, 0.0f, float(input.width));
        c.x1 = std::clamp(b.x1, 0.0f, float(input.width));
        c.y0 = std::clamp(b.y0, 0.0f, float(input.height));
        c.y1 = std::clamp(b.y1, 0.0f, float(input.height));
        const double visible = std::max(0.0f, c.x1 - c.x0) * double(std::max(0.0f, c.y1 - c.y0));
        if (area <= 0 || visible < 0.05 * area || c.x1 - c.x0 < 1 || c.y1 - c.y0 < 1)
            continue;
        if (visible < 0.6 * area)
            c.ignore = true;
        out.push_back(c);
    }
    return out;
}

cv::Mat photometric(const cv::Mat &image, core::Rng &rng)
{
    const double alpha = rng.uniform(0.7f, 1.3f), beta = rng.uniform(-30.0f, 30.0f);
    const cv::Scalar gain(alpha * rng.uniform(0.85f, 1.15f), alpha * rng.uniform(0.85f, 1.15f),
                          alpha * rng.uniform(0.85f, 1.15f));
    cv::Mat out;
    cv::multiply(image, gain, out);
    out.convertTo(out, -1, 1.0, beta);
    return out;
}

cv::Mat augment(const cv::Mat &image, const std::vector<core::LabelBox> &boxes, core::Rng &rng,
                std::vector<core::LabelBox> *outBoxes)
{
    const double W = image.cols, H = image.rows;
    const bool flip = rng.uniform() < 0.5f;
    const double s = std::exp(rng.uniform(std::log(0.7f), std::log(2.4f)));
    const double cx = rng.uniform(0.1f, 0.9f) * W, cy = rng.uniform(0.1f, 0.9f) * H;
    const double tx = rng.uniform(-0.15f, 0.15f) * W, ty = rng.uniform(-0.15f, 0.15f) * H;
    // Continuous coordinates (pixel i spans [i, i+1]): x' = a x + b, y' = s y + d.
    const double a = flip ? -s : s;
    const double b = (flip ? W - cx * (1 - s) : cx * (1 - s)) + tx;
    const double d = cy * (1 - s) + ty;
    // warpAffine maps pixel centres: i' + 0.5 = a (i + 0.5) + b.
    const cv::Matx23d m(a, 0, b + 0.5 * a - 0.5, 0, s, d + 0.5 * s - 0.5);
    cv::Mat warped;
    cv::warpAffine(image, warped, m, image.size(), cv::INTER_LINEAR, cv::BORDER_REPLICATE);
    const cv::Mat out = photometric(warped, rng);
    std::vector<core::LabelBox> moved;
    for (core::LabelBox box : boxes) {
        float x0 = float(a * box.x0 + b), x1 = float(a * box.x1 + b);
        if (x0 > x1)
            std::swap(x0, x1);
        box.x0 = x0;
        box.x1 = x1;
        box.y0 = float(s * box.y0 + d);
        box.y1 = float(s * box.y1 + d);
        moved.push_back(box);
    }
    *outBoxes = clipped(moved, image.size());
    return out;
}

cv::Mat medianImage(const std::vector<cv::Mat> &images)
{
    cv::Mat out(images.front().size(), images.front().type());
    std::vector<uchar> values(images.size());
    const std::size_t mid = values.size() / 2;
    const int bytes = images.front().cols * images.front().channels();
    for (int y = 0; y < out.rows; ++y) {
        uchar *o = out.ptr<uchar>(y);
        for (int x = 0; x < bytes; ++x) {
            for (std::size_t i = 0; i < images.size(); ++i)
                values[i] = images[i].ptr<uchar>(y)[x];
            std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(mid), values.end());
            o[x] = values[mid];
        }
    }
    return out;
}

DatasetFolder frameFolder(const std::string &sessionDir)
{
    return {fs::path(sessionDir) / "frames", fs::path(sessionDir) / "frames.tmp"};
}

core::Json boxesJson(const std::vector<core::LabelBox> &boxes)
{
    core::Json list = core::Json::array();
    for (const core::LabelBox &b : boxes) {
        core::Json row = core::Json::array();
        row.push(double(b.x0)).push(double(b.y0)).push(double(b.x1)).push(double(b.y1));
        row.push(b.ignore ? 1 : 0);
        list.push(std::move(row));
    }
    return list;
}

} // namespace edgetrain::vision::frameparts

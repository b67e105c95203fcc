#include "motionteacher.h"

#include <opencv2/imgproc.hpp>
#include <opencv2/video/background_segm.hpp>

#include <algorithm>

namespace edgetrain::vision {

MotionOptions MotionOptions::parse(const std::string &text, const std::string &spec)
{
    MotionOptions o;
    if (text.empty())
        return o;
    bool thresholdGiven = false;
    for (const auto &[key, value] : Internal::parseOptions(text, spec)) {
        if (key == "model") {
            if (value != "mog2" && value != "knn")
                throw core::SpecError("teacher '" + spec + "': model must be mog2 or knn, not '" +
                                      value + "'");
            o.model = value == "knn" ? Model::Knn : Model::Mog2;
        } else if (key == "history") {
            o.history = int(Internal::optionNumber(key, value, 1, 100000, spec));
        } else if (key == "threshold") {
            o.threshold = Internal::optionNumber(key, value, 0.1, 100000, spec);
            thresholdGiven = true;
        } else if (key == "min_area") {
            o.min_area_px = Internal::optionNumber(key, value, 1, 1e7, spec);
        } else if (key == "warmup") {
            o.warmup_frames = int(Internal::optionNumber(key, value, 0, 100000, spec));
        } else if (key == "scale") {
            o.scale = Internal::optionNumber(key, value, 0.1, 1.0, spec);
        } else {
            throw core::SpecError("teacher '" + spec + "': unknown option '" + key +
                                  "' (motion knows model, history, threshold, min_area, warmup, "
                                  "scale)");
        }
    }
    if (o.model == Model::Knn && !thresholdGiven)
        o.threshold = 400.0;
    return o;
}

struct MotionTeacher::Impl
{
    cv::Ptr<cv::BackgroundSubtractor> model;
    cv::Size size; // of the frames the model was built for
    cv::Mat open, close;
};

MotionTeacher::MotionTeacher(MotionOptions options)
    : m_impl(std::make_unique<Impl>()), m_options(options)
{
    m_impl->open = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(3, 3));
    m_impl->close = cv::getStructuringElement(cv::MORPH_ELLIPSE, cv::Size(7, 7));
}

MotionTeacher::~MotionTeacher() = default;

cv::Mat MotionTeacher::foreground(const cv::Mat &bgr)
{
    cv::Mat image = bgr;
    if (m_options.scale != 1.0)
        cv::resize(bgr, image, cv::Size(), m_options.scale, m_options.scale, cv::INTER_AREA);
    if (!m_impl->model || m_impl->size != image.size()) {
        // A new frame size is a new camera: the model starts again.
        if (m_options.model == MotionOptions::Model::Knn)
            m_impl->model =
                cv::createBackgroundSubtractorKNN(m_options.history, m_options.threshold, true);
        else
            m_impl->model =
                cv::createBackgroundSubtractorMOG2(m_options.history, m_options.threshold, true);
        m_impl->size = image.size();
        m_frames = 0;
    }
    cv::Mat mask;
    m_impl->model->apply(image, mask);
    ++m_frames;
    return mask;
}

void MotionTeacher::observe(const cv::Mat &bgr)
{
    (void)foreground(bgr);
}

std::vector<Detection> MotionTeacher::detect(const cv::Mat &bgr)
{
    cv::Mat mask = foreground(bgr);
    // Shadows are 127, foreground 255: keep the foreground only.
    cv::threshold(mask, mask, 200, 255, cv::THRESH_BINARY);
    cv::morphologyEx(mask, mask, cv::MORPH_OPEN, m_impl->open);
    cv::morphologyEx(mask, mask, cv::MORPH_CLOSE, m_impl->close);
    cv::Mat stats, centroids;
    const int n = cv::connectedComponentsWithStats(mask, m_labels, stats, centroids, 8, CV_32S);
    const double k = 1.0 / m_options.scale;
    const double minArea =
        m_options.min_area_px * double(bgr.cols) * double(bgr.rows) / (768.0 * 576.0);
    m_blobs.clear();
    for (int i = 1; i < n; ++i) {
        const double area = stats.at<int>(i, cv::CC_STAT_AREA) * k * k;
        if (area < minArea)
            continue;
        const cv::Rect2d box(
            stats.at<int>(i, cv::CC_STAT_LEFT) * k, stats.at<int>(i, cv::CC_STAT_TOP) * k,
            stats.at<int>(i, cv::CC_STAT_WIDTH) * k, stats.at<int>(i, cv::CC_STAT_HEIGHT) * k);
        m_blobs.push_back({box & cv::Rect2d(0, 0, bgr.cols, bgr.rows), area, i});
    }
    std::vector<Detection> out;
    if (m_frames <= m_options.warmup_frames)
        return out;
    for (const Blob &b : m_blobs) {
        const float fill = float(std::min(1.0, b.area_px / std::max(b.box.area(), 1.0)));
        if (fill >= threshold)
            out.push_back({b.box, fill, 0});
    }
    return corrected(std::move(out), bgr.size());
}

} // namespace edgetrain::vision

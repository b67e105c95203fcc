#include "teacher.h"

#include "studentteacher.h"

#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/objdetect.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace edgetrain::vision {

double iou(const cv::Rect2d &a, const cv::Rect2d &b)
{
    const double inter = (a & b).area();
    const double uni = a.area() + b.area() - inter;
    return uni > 0 ? inter / uni : 0.0;
}

std::vector<Detection> nonMaximumSuppression(std::vector<Detection> d, double iouThreshold)
{
    std::sort(d.begin(), d.end(),
              [](const Detection &a, const Detection &b) { return a.score > b.score; });
    std::vector<Detection> kept;
    for (const Detection &x : d) {
        bool suppressed = false;
        for (const Detection &k : kept)
            if (k.label == x.label &&
                (iou(k.box, x.box) > iouThreshold ||
                 (k.box & x.box).area() > 0.7 * std::min(k.box.area(), x.box.area()))) {
                suppressed = true;
                break;
            }
        if (!suppressed)
            kept.push_back(x);
    }
    return kept;
}

// ---- HOG

struct HogTeacher::Impl
{
    cv::HOGDescriptor hog;
};

HogTeacher::HogTeacher() : m_impl(std::make_unique<Impl>())
{
    m_impl->hog.setSVMDetector(cv::HOGDescriptor::getDefaultPeopleDetector());
}

HogTeacher::~HogTeacher() = default;

std::vector<Detection> HogTeacher::detect(const cv::Mat &bgr)
{
    cv::Mat image = bgr;
    if (upscale != 1.0)
        cv::resize(bgr, image, cv::Size(), upscale, upscale, cv::INTER_LINEAR);
    std::vector<cv::Rect> found;
    std::vector<double> weights;
    m_impl->hog.detectMultiScale(image, found, weights, 0.0, cv::Size(8, 8), cv::Size(8, 8), 1.1,
                                 2.0);
    std::vector<Detection> out;
    for (std::size_t i = 0; i < found.size(); ++i) {
        const float score = i < weights.size() ? float(weights[i]) : 1.0f;
        if (score < threshold)
            continue;
        // HOG's boxes have a margin around the person (the 64x128 window is ~20 % wider and
        // taller than the body): shrink to the person, as annotations draw them.
        cv::Rect2d r(found[i].x / upscale, found[i].y / upscale, found[i].width / upscale,
                     found[i].height / upscale);
        r = cv::Rect2d(r.x + r.width * 0.1, r.y + r.height * 0.07, r.width * 0.8, r.height * 0.86);
        out.push_back({r & cv::Rect2d(0, 0, bgr.cols, bgr.rows), score, 0});
    }
    return out;
}

// ---- cascades

struct CascadeTeacher::Impl
{
    cv::CascadeClassifier cascade;
};

CascadeTeacher::CascadeTeacher(const std::string &file)
    : m_impl(std::make_unique<Impl>()), m_file(file)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
        throw TeacherError("cascade file '" + file + "' does not exist");
    bool loaded = false;
    try {
        loaded = m_impl->cascade.load(file);
    } catch (const cv::Exception &) {
        loaded = false;
    }
    if (!loaded || m_impl->cascade.empty())
        throw TeacherError("'" + file + "' is not a Haar or LBP cascade OpenCV can load");
}

CascadeTeacher::~CascadeTeacher() = default;

std::vector<Detection> CascadeTeacher::detect(const cv::Mat &bgr)
{
    cv::Mat gray;
    cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
    cv::equalizeHist(gray, gray);
    std::vector<cv::Rect> found;
    std::vector<int> levels;
    std::vector<double> weights;
    m_impl->cascade.detectMultiScale(gray, found, levels, weights, 1.1, 3, 0, minSize, cv::Size(),
                                     true);
    std::vector<Detection> out;
    for (std::size_t i = 0; i < found.size(); ++i) {
        const float score = i < weights.size() ? float(weights[i]) : 1.0f;
        if (score >= threshold)
            out.push_back({cv::Rect2d(found[i]), score, 0});
    }
    return out;
}

// ---- ONNX

struct OnnxTeacher::Impl
{
    cv::dnn::Net net;
};

OnnxTeacher::OnnxTeacher(const std::string &file, cv::Size input)
    : m_impl(std::make_unique<Impl>()), m_file(file), m_input(input)
{
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
        throw TeacherError("ONNX file '" + file + "' does not exist");
    try {
        m_impl->net = cv::dnn::readNetFromONNX(file);
    } catch (const cv::Exception &e) {
        throw TeacherError("'" + file + "' is not an ONNX model OpenCV can load: " + e.msg);
    }
    if (m_impl->net.empty())
        throw TeacherError("'" + file + "' is not an ONNX model OpenCV can load");
    // The input size: given, or the model's own (from its first layer), or a common default.
    if (m_input.width <= 0 || m_input.height <= 0) {
        std::vector<cv::dnn::MatShape> in, out;
        m_input = cv::Size(300, 300);
        try {
            m_impl->net.getLayerShapes(cv::dnn::MatShape{}, 0, in, out);
            if (!out.empty() && out[0].size() == 4 && out[0][2] > 0 && out[0][3] > 0)
                m_input = cv::Size(out[0][3], out[0][2]);
        } catch (const cv::Exception &) {
        }
    }
    // Run once on a blank frame: the output's shape says which head this is.
    cv::Mat probe;
    try {
        m_impl->net.setInput(cv::dnn::blobFromImage(cv::Mat(m_input, CV_8UC3, cv::Scalar::all(0)),
                                                    1.0 / 255, m_input, cv::Scalar(), true, false));
        probe = m_impl->net.forward();
    } catch (const cv::Exception &e) {
        throw TeacherError("'" + file + "' does not run on a " + std::to_string(m_input.width) +
                           "x" + std::to_string(m_input.height) + " colour image: " + e.msg);
    }
    std::string shape;
    for (int i = 0; i < probe.dims; ++i) {
        if (i)
            shape.append("x");
        shape.append(std::to_string(probe.size[i]));
    }
    if (probe.dims == 4 && probe.size[0] == 1 && probe.size[1] == 1 && probe.size[3] == 7)
        m_head = Head::Ssd;
    else if (probe.dims == 3 && probe.size[0] == 1 && probe.size[2] >= 6)
        m_head = Head::Yolo;
    else
        throw TeacherError("'" + file + "' is not a detector: its output is " + shape +
                           ", neither SSD-style 1x1xNx7 nor YOLO-style 1xNx(5+classes)");
}

OnnxTeacher::~OnnxTeacher() = default;

std::vector<Detection> OnnxTeacher::detect(const cv::Mat &bgr)
{
    m_impl->net.setInput(
        cv::dnn::blobFromImage(bgr, 1.0 / 255, m_input, cv::Scalar(), true, false));
    const cv::Mat out = m_impl->net.forward();
    std::vector<Detection> found;
    const double sx = double(bgr.cols), sy = double(bgr.rows);
    if (m_head == Head::Ssd) {
        const int n = out.size[2];
        const auto *row = out.ptr<float>();
        for (int i = 0; i < n; ++i, row += 7) {
            const int label = int(row[1]);
            if (row[2] < threshold || (keepLabel >= 0 && label != keepLabel))
                continue;
            const cv::Rect2d r(row[3] * sx, row[4] * sy, (row[5] - row[3]) * sx,
                               (row[6] - row[4]) * sy);
            if (r.width > 0 && r.height > 0)
                found.push_back({r & cv::Rect2d(0, 0, sx, sy), row[2], label});
        }
    } else {
        const int n = out.size[1], width = out.size[2];
        const auto *row = out.ptr<float>();
        const double kx = sx / m_input.width, ky = sy / m_input.height;
        for (int i = 0; i < n; ++i, row += width) {
            const float *classes = row + 5;
            const int label = int(std::max_element(classes, row + width) - classes);
            const float score = row[4] * classes[label];
            if (score < threshold || (keepLabel >= 0 && label != keepLabel))
                continue;
            const cv::Rect2d r((row[0] - row[2] / 2) * kx, (row[1] - row[3] / 2) * ky, row[2] * kx,
                               row[3] * ky);
            if (r.width > 0 && r.height > 0)
                found.push_back({r & cv::Rect2d(0, 0, sx, sy), score, label});
        }
    }
    return nonMaximumSuppression(std::move(found), nmsThreshold);
}

std::unique_ptr<Teacher> Teacher::create(const std::string &spec)
{
    if (spec == "hog")
        return std::make_unique<HogTeacher>();
    if (spec.rfind("cascade:", 0) == 0)
        return std::make_unique<CascadeTeacher>(spec.substr(8));
    if (spec.rfind("onnx:", 0) == 0)
        return std::make_unique<OnnxTeacher>(spec.substr(5));
    if (spec.rfind("session:", 0) == 0)
        return StudentTeacher::fromSession(spec.substr(8));
    throw core::SpecError("teacher must be hog, cascade:FILE, onnx:FILE or session:DIR, not '" +
                          spec + "'");
}

} // namespace edgetrain::vision

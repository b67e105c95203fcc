#include "deploy/studentinference.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <chrono>

namespace edgetrain::deploy {

StudentInference::StudentInference(std::unique_ptr<vision::StudentTeacher> student,
                                   std::unique_ptr<PacedSource> camera)
    : m_student(std::move(student)), m_camera(std::move(camera))
{}

bool StudentInference::step(net::InferenceFrame *frame, QString *error)
{
    std::string why;
    if (!m_camera->read(m_frame, &why)) {
        *error = QString::fromStdString(why);
        return false;
    }
    const auto start = std::chrono::steady_clock::now();
    m_boxes = m_student->detect(m_frame);
    frame->latency_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    frame->detections = int(m_boxes.size());
    return true;
}

QByteArray StudentInference::snapshot()
{
    if (m_frame.empty())
        return {};
    // Drawn on a copy scaled down first, so the boxes keep a visible width at 320 px.
    const double scale = std::min(1.0, double(kSnapshotWidth) / double(m_frame.cols));
    cv::Mat small;
    cv::resize(m_frame, small, cv::Size(), scale, scale, cv::INTER_AREA);
    for (const vision::Detection &d : m_boxes) {
        const cv::Rect2d box(d.box.x * scale, d.box.y * scale, d.box.width * scale,
                             d.box.height * scale);
        // app::palette::onFrame(Student) in BGR: the node has no Qt Gui to read the palette from.
        cv::rectangle(small, cv::Rect(box), cv::Scalar(0xa8, 0xe0, 0x2e), 1);
    }
    std::vector<uchar> jpeg;
    cv::imencode(".jpg", small, jpeg, {cv::IMWRITE_JPEG_QUALITY, 75});
    return QByteArray(reinterpret_cast<const char *>(jpeg.data()), qsizetype(jpeg.size()));
}

} // namespace edgetrain::deploy

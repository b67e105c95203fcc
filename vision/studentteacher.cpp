#include "studentteacher.h"

namespace edgetrain::vision {

StudentTeacher::StudentTeacher(std::shared_ptr<core::Model> model, std::string name)
    : m_model(std::move(model)), m_student(*m_model), m_name(std::move(name))
{
    threshold = 0.3f;
}

std::string StudentTeacher::weightsPath(const std::string &sessionDir)
{
    return sessionDir + "/detector.safetensors";
}

std::unique_ptr<StudentTeacher> StudentTeacher::fromSession(const std::string &sessionDir)
{
    const std::string path = weightsPath(sessionDir);
    std::shared_ptr<core::Model> model = FrameStudent::loadModel(path);
    auto student = std::make_unique<StudentTeacher>(std::move(model), "session:" + sessionDir);
    if (const float saved = FrameStudent::savedThreshold(path); saved > 0)
        student->threshold = saved;                              // its calibrated operating point
    student->student().mirror = FrameStudent::savedMirror(path); // the views it was chosen with
    return student;
}

std::vector<Detection> StudentTeacher::detect(const cv::Mat &bgr)
{
    return m_student.detect(bgr, threshold);
}

} // namespace edgetrain::vision

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
    std::shared_ptr<core::Model> model = FrameStudent::loadModel(weightsPath(sessionDir));
    return std::make_unique<StudentTeacher>(std::move(model), "session:" + sessionDir);
}

std::vector<Detection> StudentTeacher::detect(const cv::Mat &bgr)
{
    return m_student.detect(bgr, threshold);
}

} // namespace edgetrain::vision

#pragma once

#include "framestudent.h"

#include <memory>
#include <string>

namespace edgetrain::vision {

/**
 * A trained full-frame student used as a teacher: by the Labeler (self-training), by
 * `edgetrain-cli detect --detector session:DIR` and by the app. Owns its model (shared with
 * whoever trained it). Scores are probabilities; `threshold` starts at 0.3 (fromSession: the
 * operating threshold saved with the weights, when there is one).
 */
class StudentTeacher : public Teacher
{
public:
    StudentTeacher(std::shared_ptr<core::Model> model, std::string name = "student");
    /** <dir>/detector.safetensors, named "session:DIR". Throws IoError / FormatError. */
    static std::unique_ptr<StudentTeacher> fromSession(const std::string &sessionDir);
    /** Where a session keeps its full-frame student. */
    static std::string weightsPath(const std::string &sessionDir);

    std::string name() const override { return m_name; }
    std::vector<Detection> detect(const cv::Mat &bgr) override;
    FrameStudent &student() { return m_student; }

private:
    std::shared_ptr<core::Model> m_model;
    FrameStudent m_student;
    std::string m_name;
};

} // namespace edgetrain::vision

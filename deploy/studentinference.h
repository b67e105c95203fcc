#pragma once

#include "deploy/pacedsource.h"
#include "net/agent/inference.h"
#include "vision/studentteacher.h"

#include <memory>
#include <vector>

namespace edgetrain::deploy {

/**
 * The student (vision::FrameStudent, at its saved operating threshold and views) on a node's
 * camera: what net::DeploymentHost runs on its thread. Owns the model and the camera.
 */
class StudentInference : public net::Inference
{
public:
    static constexpr int kSnapshotWidth = 320; // pixels, at most

    StudentInference(std::unique_ptr<vision::StudentTeacher> student,
                     std::unique_ptr<PacedSource> camera);

    bool step(net::InferenceFrame *frame, QString *error) override;
    QByteArray snapshot() override;

private:
    std::unique_ptr<vision::StudentTeacher> m_student;
    std::unique_ptr<PacedSource> m_camera;
    cv::Mat m_frame; // the last one run, and its boxes
    std::vector<vision::Detection> m_boxes;
};

} // namespace edgetrain::deploy

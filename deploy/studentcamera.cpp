#include "deploy/studentcamera.h"

#include "deploy/studentinference.h"

#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>

namespace edgetrain::deploy {

StudentCamera::StudentCamera(QString spec, double rate_fps)
    : m_spec(std::move(spec)), m_rateFps(rate_fps)
{
    PacedSource check(m_spec.toStdString(), m_rateFps);
    // A file or folder by its own name: the path is the node's business, not the window's.
    m_name = check.live() ? m_spec : QFileInfo(m_spec).fileName();
    if (m_name.isEmpty())
        m_name = m_spec;
}

std::unique_ptr<net::Inference> StudentCamera::open(const QByteArray &model)
{
    // The vision loader reads a session's detector.safetensors: the bytes go to a private
    // folder for it, removed once loaded.
    QTemporaryDir dir;
    if (!dir.isValid())
        throw core::IoError("no temporary folder for the model: " +
                            dir.errorString().toStdString());
    const std::string folder = dir.path().toStdString();
    QFile file(QString::fromStdString(vision::StudentTeacher::weightsPath(folder)));
    if (!file.open(QIODevice::WriteOnly) || file.write(model) != model.size() || !file.flush())
        throw core::IoError("cannot write the model to " + file.fileName().toStdString());
    file.close();
    std::unique_ptr<vision::StudentTeacher> student;
    try {
        student = vision::StudentTeacher::fromSession(folder);
        const cv::Size input = student->student().inputSize();
        if (input.width > kMaxInputSide || input.height > kMaxInputSide)
            throw core::FormatError("its input is " + std::to_string(input.width) + "x" +
                                    std::to_string(input.height) +
                                    " px, larger than this node runs (at most " +
                                    std::to_string(kMaxInputSide) + " px a side)");
        // One pass on a blank frame: a model that cannot run fails here, as a refusal, rather
        // than on the inference thread after the coordinator was told it runs.
        student->detect(cv::Mat(input, CV_8UC3, cv::Scalar::all(0)));
    } catch (const std::exception &e) {
        // The loader names the temporary file; the coordinator knows it as the model it sent.
        std::string why = e.what();
        const std::string path = file.fileName().toStdString();
        for (const std::string &named : {"'" + path + "'", path})
            for (std::size_t at; (at = why.find(named)) != std::string::npos;)
                why.replace(at, named.size(), "the model file");
        throw core::FormatError("not a model this node can run (a detector.safetensors from "
                                "EdgeTrain's Train step): " +
                                why);
    }
    return std::make_unique<StudentInference>(
        std::move(student), std::make_unique<PacedSource>(m_spec.toStdString(), m_rateFps));
}

} // namespace edgetrain::deploy

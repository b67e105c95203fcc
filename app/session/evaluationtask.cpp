#include "evaluationtask.h"

#include "core/parallel.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "vision/cropdataset.h"
#include "vision/framesource.h"
#include "vision/teacher.h"

#include <QThread>

#include <algorithm>

namespace edgetrain::app {

EvaluationTask::EvaluationTask(const Session &session,
                               std::shared_ptr<const vision::LabelResult> labels)
    : m_session(session), m_labels(std::move(labels))
{
}

EvaluationOutcome EvaluationTask::run(const TaskRunner::Report &report,
                                      const std::atomic<bool> *stop) const
{
    const Session &s = m_session;
    EvaluationOutcome out;
    try {
        // One core stays with the GUI (and the labeller's other work).
        core::setThreadCount(std::max(1, QThread::idealThreadCount() - 1));
        core::Model student(core::Zoo::resolve(s.plan.model.toStdString())
                                .withInputShape(core::Shape{3, s.dataset.height, s.dataset.width}),
                            1);
        core::Safetensors::loadModel(student, s.path(s.training.weights).toStdString());
        auto teacher = vision::Teacher::create(s.capture.teacher.toStdString());
        auto source = vision::FrameSource::open(m_labels->source);
        vision::StudentDetector detector(student);
        vision::ViewpointOptions o;
        o.crops.size = cv::Size(s.dataset.width, s.dataset.height);
        o.crops.negatives_per_positive = s.dataset.negativesPerPositive;
        o.crops.seed = std::uint64_t(s.dataset.seed);
        o.eval_frames = s.evaluation.frames;
        const auto splits = vision::CropDataset::splitTracks(*m_labels, o.crops);
        auto e = vision::Viewpoint::evaluate(
            *source, *teacher, detector, *m_labels, splits, o, stop, [&](int d, int n) {
                report(d, n, QStringLiteral("frame %1 of %2").arg(d).arg(n));
            });
        if (stop && stop->load())
            out.error = QStringLiteral("cancelled");
        else
            out.result = e;
    } catch (const std::exception &e) {
        out.error = QString::fromStdString(e.what());
    }
    return out;
}

QString EvaluationTask::summary(const vision::ViewpointEvaluation &e)
{
    return QStringLiteral("on boxes only the tracker found, the student finds %1 %, the teacher %2 %")
        .arg(100 * e.student_recall_tracker_only, 0, 'f', 1)
        .arg(100 * e.teacher_recall_tracker_only, 0, 'f', 1);
}

} // namespace edgetrain::app

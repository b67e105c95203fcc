#include "selftrainingtask.h"

#include "core/parallel.h"
#include "datasettask.h"
#include "detectorsteps.h"
#include "vision/framesource.h"
#include "vision/framestudent.h"

#include <QThread>

#include <algorithm>

namespace edgetrain::app {

SelfTrainingTask::SelfTrainingTask(const Session &session,
                                   std::shared_ptr<const vision::LabelResult> labels)
    : m_session(session), m_labels(std::move(labels))
{}

SelfTrainingOutcome SelfTrainingTask::run(const TaskRunner::Report &report,
                                          const std::atomic<bool> *stop) const
{
    const Session &s = m_session;
    SelfTrainingOutcome out;
    try {
        core::setThreadCount(std::max(1, QThread::idealThreadCount() - 1));
        const std::unique_ptr<core::Model> student =
            vision::FrameStudent::loadModel(s.path(s.training.weights).toStdString());
        auto labels = std::make_shared<vision::LabelResult>(*m_labels);
        labels->round = s.round + 1; // in the dataset's index and labels.json: see reconcile()
        auto source = vision::FrameSource::open(labels->source);
        const auto step = selfTrain(*labels, *source, *student,
                                    vision::SelfTrainOptions().threshold, s.dir.toStdString(),
                                    DatasetTask::frameOptions(s.dataset, *labels), report, stop);
        if (!step) {
            out.error = QStringLiteral("cancelled (the labels are unchanged)");
            return out;
        }
        out.added = step->added;
        out.frameStats = step->dataset;
        out.labels = labels;
    } catch (const std::exception &e) {
        out.error = QString::fromStdString(e.what());
    }
    return out;
}

QString SelfTrainingTask::summary(const SelfTrainingOutcome &o, int round)
{
    return QStringLiteral("self-training: the student found %1 new tracks (%2 student boxes, %3 "
                          "tracker boxes join the labels); dataset rebuilt: train round %4 next")
        .arg(o.added.new_tracks)
        .arg(o.added.student_boxes)
        .arg(o.added.tracker_boxes)
        .arg(round);
}

} // namespace edgetrain::app

#include "selftrainingtask.h"

#include "core/parallel.h"
#include "datasettask.h"
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
        vision::SelfTrainOptions o;
        o.label = labels->options; // the same frames, tracker and teacher rhythm
        out.added = vision::FrameStudentTrainer::relabel(
            *labels, *source, *student, o,
            [&](int f, int n, const vision::LabelStats &) {
                report(f, n, QStringLiteral("the student relabels frame %1 of %2").arg(f).arg(n));
            },
            stop);
        if (stop && stop->load()) {
            out.error = QStringLiteral("cancelled (the labels are unchanged)");
            return out;
        }
        const auto stats = vision::FrameDataset::build(
            s.dir.toStdString(), *labels, *source, DatasetTask::frameOptions(s.dataset, *labels),
            [&](int f, int n) {
                report(f, n,
                       QStringLiteral("rebuilding the dataset: frame %1 of %2").arg(f).arg(n));
            },
            stop);
        if (stop && stop->load()) {
            out.error = QStringLiteral("cancelled (the labels are unchanged)");
            return out;
        }
        labels->save(s.dir.toStdString()); // only once the dataset matches them: the commit
        out.frameStats = stats;
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

#include "labeltask.h"

#include "vision/framesource.h"
#include "vision/teacher.h"
#include "vision/tracking.h"

#include <chrono>

namespace edgetrain::app {

LabelTask::LabelTask(const CaptureSettings &capture, const QString &sessionDir)
    : m_capture(capture), m_sessionDir(sessionDir)
{}

LabelOutcome LabelTask::run(const TaskRunner::Report &report, const std::atomic<bool> *stop) const
{
    LabelOutcome out;
    try {
        auto source = vision::FrameSource::open(m_capture.source.toStdString());
        auto teacher = vision::Teacher::create(m_capture.teacher.toStdString());
        vision::LabelOptions o;
        o.tracker = m_capture.tracker.toStdString();
        o.every = m_capture.every;
        o.max_frames = m_capture.maxFrames;
        (void)vision::createTracker(o.tracker); // a bad name fails before the work
        auto labels = std::make_shared<vision::LabelResult>(vision::Labeler::run(
            *source, *teacher, o,
            [&, clock = std::chrono::steady_clock::now()](int frame, int frames,
                                                          const vision::LabelStats &st) {
                const double seconds =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - clock).count();
                report(frame, frames,
                       QStringLiteral("frame %1 of %2 · %3 teacher detections · %4 fps")
                           .arg(frame)
                           .arg(frames)
                           .arg(st.teacher_detections)
                           .arg(seconds > 0 ? frame / seconds : 0.0, 0, 'f', 1));
            },
            stop));
        labels->save(m_sessionDir.toStdString()); // what was labelled is kept, even if cancelled
        out.labels = labels;
    } catch (const std::exception &e) {
        out.error = QString::fromStdString(e.what());
    }
    return out;
}

QString LabelTask::summary(const vision::LabelResult &labels)
{
    const auto &st = labels.stats;
    return QStringLiteral(
               "%1: %2 frames, %3 tracks (%4 teacher boxes, %5 tracker-only boxes) in %6 s")
        .arg(labels.cancelled ? QStringLiteral("labelling cancelled") : QStringLiteral("labelled"))
        .arg(st.frames)
        .arg(st.tracks)
        .arg(st.teacher_boxes)
        .arg(st.tracker_only_boxes)
        .arg(st.seconds, 0, 'f', 1);
}

} // namespace edgetrain::app

#include "labeltask.h"

#include "vision/framesource.h"
#include "vision/teacher.h"
#include "vision/tracking.h"

#include <chrono>

namespace edgetrain::app {

vision::LabelResult labelSource(vision::FrameSource &source, vision::Teacher &teacher,
                                const vision::LabelOptions &options, const std::string &sessionDir,
                                const vision::Labeler::Progress &progress,
                                const std::atomic<bool> *stop, std::string *saveError)
{
    // Checkpoints: a process killed mid-run keeps all but the last seconds.
    auto r =
        vision::Labeler::run(source, teacher, options, progress, stop,
                             [&](const vision::LabelResult &sofar) { sofar.save(sessionDir); });
    try {
        r.save(sessionDir);
    } catch (const std::exception &e) {
        *saveError = e.what();
    }
    return r;
}

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
        std::string saveError;
        auto labels = std::make_shared<vision::LabelResult>(labelSource(
            *source, *teacher, o, m_sessionDir.toStdString(),
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
            stop, &saveError));
        // What was labelled is kept, even if cancelled or stopped by an error: in memory for the
        // window, and on disk unless the disk refuses it.
        out.labels = labels;
        if (!labels->stopped.empty())
            out.error = QStringLiteral("labelling stopped at %1 (the tracks so far are kept)")
                            .arg(QString::fromStdString(labels->stopped));
        if (!saveError.empty())
            out.error += (out.error.isEmpty() ? QString() : QStringLiteral("; ")) +
                         QString::fromStdString(saveError);
    } catch (const std::exception &e) {
        if (!out.error.isEmpty())
            out.error += QStringLiteral("; ");
        out.error += QString::fromStdString(e.what());
    }
    return out;
}

QString LabelTask::summary(const vision::LabelResult &labels)
{
    const auto &st = labels.stats;
    QString text =
        QStringLiteral("%1: %2 frames, %3 tracks (%4 teacher boxes, %5 tracker-only boxes) in %6 s")
            .arg(labels.cancelled         ? QStringLiteral("labelling cancelled")
                 : labels.stopped.empty() ? QStringLiteral("labelled")
                                          : QStringLiteral("labelling stopped"))
            .arg(st.frames)
            .arg(st.tracks)
            .arg(st.teacher_boxes)
            .arg(st.tracker_only_boxes)
            .arg(st.seconds, 0, 'f', 1);
    if (st.dropped.total() > 0)
        text += QStringLiteral("; %1 teacher boxes no tracker could take dropped (%2)")
                    .arg(st.dropped.total())
                    .arg(QString::fromStdString(st.dropped.summary(st.min_box_px)));
    if (st.tracker_failures > 0)
        text += QStringLiteral("; %1 tracker errors, each ending one object's run")
                    .arg(st.tracker_failures);
    if (labels.endedEarly())
        text += QStringLiteral("; the source ended after %1 of the %2 frames it announced")
                    .arg(st.frames)
                    .arg(labels.announced_frames);
    return text;
}

} // namespace edgetrain::app

#include "datasettask.h"

#include "vision/cropdataset.h"
#include "vision/framedataset.h"
#include "vision/framesource.h"

namespace edgetrain::app {

DatasetTask::DatasetTask(const DatasetSettings &settings, const QString &sessionDir,
                         std::shared_ptr<const vision::LabelResult> labels)
    : m_settings(settings), m_sessionDir(sessionDir), m_labels(std::move(labels))
{}

DatasetOutcome DatasetTask::run(const TaskRunner::Report &report,
                                const std::atomic<bool> *stop) const
{
    DatasetOutcome out;
    try {
        auto source = vision::FrameSource::open(m_labels->source);
        auto progress = [&](int frame, int frames) {
            report(frame, frames, QStringLiteral("frame %1 of %2").arg(frame).arg(frames));
        };
        if (m_settings.kind == QLatin1String("frames")) {
            const auto stats =
                vision::FrameDataset::build(m_sessionDir.toStdString(), *m_labels, *source,
                                            frameOptions(m_settings, *m_labels), progress, stop);
            if (!(stop && stop->load()))
                out.frameStats = stats;
            else
                out.error = QStringLiteral("cancelled (the previous dataset is unchanged)");
            return out;
        }
        vision::CropOptions o;
        o.size = cv::Size(m_settings.width, m_settings.height);
        o.negatives_per_positive = m_settings.negativesPerPositive;
        o.seed = std::uint64_t(m_settings.seed);
        const auto stats = vision::CropDataset::build(m_sessionDir.toStdString(), *m_labels,
                                                      *source, o, progress, stop);
        if (!(stop && stop->load()))
            out.stats = stats;
        else
            out.error = QStringLiteral("cancelled (the previous dataset is unchanged)");
    } catch (const std::exception &e) {
        out.error = QString::fromStdString(e.what());
    }
    return out;
}

vision::FrameDatasetOptions DatasetTask::frameOptions(const DatasetSettings &settings,
                                                      const vision::LabelResult &labels)
{
    vision::FrameDatasetOptions o;
    o.width = settings.frameWidth;
    o.every = settings.frameEvery;
    o.augmented = settings.frameAugment;
    o.max_frame = labels.options.max_frames; // never a frame the labels did not cover
    o.seed = std::uint64_t(settings.seed);
    return o;
}

QString DatasetTask::summary(const vision::FrameDatasetStats &st)
{
    const QString pasted =
        st.pasted > 0 ? QStringLiteral(", %1 of the objects pasted where the scene's ground plane "
                                       "puts them")
                            .arg(st.pasted)
                      : QString();
    const QString same =
        st.same_object > 0
            ? QStringLiteral("; %1 label boxes became ignore regions (an object boxed twice, or "
                             "boxes of very different sizes on one spot)")
                  .arg(st.same_object)
            : QString();
    return QStringLiteral("dataset: %1 frames at %2x%3 (one in %4) with %5 objects for "
                          "training (%6 samples with jittered copies and backgrounds%9), %7 frames "
                          "with %8 objects for validation%10")
        .arg(st.frames[0])
        .arg(st.input.width)
        .arg(st.input.height)
        .arg(st.every)
        .arg(st.objects[0])
        .arg(st.samples[0])
        .arg(st.frames[1])
        .arg(st.objects[1])
        .arg(pasted)
        .arg(same);
}

QString DatasetTask::summary(const vision::CropStats &st)
{
    return QStringLiteral("dataset: %1 positive and %2 negative crops for training, "
                          "%3 / %4 validation, %5 / %6 test")
        .arg(st.positives[0])
        .arg(st.negatives[0])
        .arg(st.positives[1])
        .arg(st.negatives[1])
        .arg(st.positives[2])
        .arg(st.negatives[2]);
}

} // namespace edgetrain::app

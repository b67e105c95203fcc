#include "datasettask.h"

#include "vision/cropdataset.h"
#include "vision/framesource.h"

namespace edgetrain::app {

DatasetTask::DatasetTask(const DatasetSettings &settings, const QString &sessionDir,
                         std::shared_ptr<const vision::LabelResult> labels)
    : m_settings(settings), m_sessionDir(sessionDir), m_labels(std::move(labels))
{
}

DatasetOutcome DatasetTask::run(const TaskRunner::Report &report, const std::atomic<bool> *stop) const
{
    DatasetOutcome out;
    try {
        auto source = vision::FrameSource::open(m_labels->source);
        vision::CropOptions o;
        o.size = cv::Size(m_settings.width, m_settings.height);
        o.negatives_per_positive = m_settings.negativesPerPositive;
        o.seed = std::uint64_t(m_settings.seed);
        const auto stats = vision::CropDataset::build(
            m_sessionDir.toStdString(), *m_labels, *source, o,
            [&](int frame, int frames) {
                report(frame, frames, QStringLiteral("frame %1 of %2").arg(frame).arg(frames));
            },
            stop);
        if (!(stop && stop->load()))
            out.stats = stats;
        else
            out.error = QStringLiteral("cancelled (the previous dataset is unchanged)");
    } catch (const std::exception &e) {
        out.error = QString::fromStdString(e.what());
    }
    return out;
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

#pragma once

#include "session.h"
#include "taskrunner.h"
#include "vision/labeling.h"

#include <QString>

#include <atomic>
#include <memory>
#include <optional>

namespace edgetrain::app {

/** What cutting the dataset gives: its figures, or why there are none. */
struct DatasetOutcome
{
    std::optional<vision::CropStats> stats;              // kind "crops": empty on failure or cancel
    std::optional<vision::FrameDatasetStats> frameStats; // kind "frames": the same
    QString error;
    bool ok() const { return stats || frameStats; }
};

/**
 * What "Build dataset" does (step 3), by DatasetSettings::kind:
 *  - "frames": whole labelled frames at the full-frame student's input (frameWidth wide) into
 *    the session's frames/ folder (vision's FrameDataset), train and validation by time block;
 *    only frames the labels cover (their max_frames) are read;
 *  - "crops": cuts the labelled boxes (and negatives around them) out of the source into the
 *    session's dataset/ folder, split by track into train, validation and test.
 * Cancelled, the previous dataset stays. Runs on a TaskRunner thread; holds its inputs.
 */
class DatasetTask
{
public:
    DatasetTask(const DatasetSettings &settings, const QString &sessionDir,
                std::shared_ptr<const vision::LabelResult> labels);

    /** Never throws: an unreadable source or an unwritable folder is the outcome's error. */
    DatasetOutcome run(const TaskRunner::Report &report, const std::atomic<bool> *stop) const;

    /** The status line for a dataset just cut. */
    static QString summary(const vision::CropStats &stats);
    static QString summary(const vision::FrameDatasetStats &stats);
    /** The frame dataset's options for these settings and labels. */
    static vision::FrameDatasetOptions frameOptions(const DatasetSettings &settings,
                                                    const vision::LabelResult &labels);

private:
    DatasetSettings m_settings;
    QString m_sessionDir;
    std::shared_ptr<const vision::LabelResult> m_labels;
};

} // namespace edgetrain::app

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
    std::optional<vision::CropStats> stats; // empty on failure or cancel
    QString error;
};

/**
 * What "Cut dataset" does (step 3): cuts the labelled boxes (and negatives around them) out of
 * the source into the session's dataset/ folder, split by track into train, validation and
 * test. Cancelled, the previous dataset stays. Runs on a TaskRunner thread; holds its inputs.
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

private:
    DatasetSettings m_settings;
    QString m_sessionDir;
    std::shared_ptr<const vision::LabelResult> m_labels;
};

} // namespace edgetrain::app

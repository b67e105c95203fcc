#pragma once

#include "session.h"
#include "taskrunner.h"
#include "vision/labeling.h"

#include <QString>

#include <atomic>
#include <memory>
#include <string>

namespace edgetrain::app {

/**
 * Labels `source` into `sessionDir` (the window's Label step and the CLI's viewpoint): the
 * teacher on every k-th frame and the tracker between (Labeler), labels.json saved as the run
 * goes (Labeler's checkpoints) and at its end, whatever ended it. What was labelled is returned
 * also when cancelled or stopped by an error (LabelResult::cancelled, ::stopped); a final save
 * that fails is `*saveError` (the labels are still returned). Throws what Labeler::run throws
 * before it starts.
 */
vision::LabelResult labelSource(vision::FrameSource &source, vision::Teacher &teacher,
                                const vision::LabelOptions &options, const std::string &sessionDir,
                                const vision::Labeler::Progress &progress,
                                const std::atomic<bool> *stop, std::string *saveError);

/** What labelling gives: the labels (also when cancelled or stopped by an error: what was
 *  labelled), and what went wrong. */
struct LabelOutcome
{
    std::shared_ptr<vision::LabelResult> labels; // null when nothing could be labelled
    QString error; // why it could not start, why it stopped, or why labels.json was not saved
};

/**
 * What "Label" does (step 2): runs the teacher on every k-th frame of the session's source and
 * the tracker between, and writes labels.json into the session folder (what was labelled is
 * kept, even if cancelled). Runs on a TaskRunner thread; holds copies of its inputs.
 */
class LabelTask
{
public:
    LabelTask(const CaptureSettings &capture, const QString &sessionDir);

    /** Never throws: a source, teacher or tracker that cannot be used, a run stopped by an
     *  error, or a folder that cannot be written, is the outcome's error. labels.json is saved
     *  as the run goes (Labeler's checkpoints) and at its end. */
    LabelOutcome run(const TaskRunner::Report &report, const std::atomic<bool> *stop) const;

    /** The status line for labels just made. */
    static QString summary(const vision::LabelResult &labels);

private:
    CaptureSettings m_capture;
    QString m_sessionDir;
};

} // namespace edgetrain::app

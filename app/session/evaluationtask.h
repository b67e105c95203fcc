#pragma once

#include "session.h"
#include "taskrunner.h"
#include "vision/labeling.h"
#include "vision/viewpoint.h"

#include <QString>

#include <atomic>
#include <memory>
#include <optional>

namespace edgetrain::app {

/** What the evaluation gives: the comparison of student and teacher, or why there is none. */
struct EvaluationOutcome
{
    std::optional<vision::ViewpointEvaluation> result; // empty on failure or cancel
    QString error;
};

/**
 * What "Evaluate" does (step 6, also run after a finished training): loads the trained student
 * from the session folder and compares it with the teacher on held-out frames of the source
 * (the test split's tracks). Runs on a TaskRunner thread, leaving one core to the GUI; holds a
 * copy of the session it evaluates.
 */
class EvaluationTask
{
public:
    EvaluationTask(const Session &session, std::shared_ptr<const vision::LabelResult> labels);

    /** Never throws: missing weights, a model that does not match them, or an unreadable
     *  source is the outcome's error. */
    EvaluationOutcome run(const TaskRunner::Report &report, const std::atomic<bool> *stop) const;

    /** The status line for a finished evaluation. */
    static QString summary(const vision::ViewpointEvaluation &result);

private:
    Session m_session;
    std::shared_ptr<const vision::LabelResult> m_labels;
};

} // namespace edgetrain::app

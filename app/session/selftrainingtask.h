#pragma once

#include "session.h"
#include "taskrunner.h"
#include "vision/framedataset.h"
#include "vision/framestudenttrainer.h"
#include "vision/labeling.h"

#include <QString>

#include <atomic>
#include <memory>
#include <optional>

namespace edgetrain::app {

/** What a self-training pass gives: the grown labels and the rebuilt frame dataset. */
struct SelfTrainingOutcome
{
    std::shared_ptr<vision::LabelResult> labels; // null on failure or cancel
    vision::SelfTrainStats added;
    std::optional<vision::FrameDatasetStats> frameStats;
    QString error;
};

/**
 * What "Self-train" does (after a round was trained and evaluated): the trained full-frame
 * student relabels the labelled frames (FrameStudentTrainer::relabel: its confident boxes that
 * overlap no label join as new tracks, source "student"), the frame dataset is rebuilt from the
 * grown labels, then labels.json is written; both carry the next round (LabelResult::round,
 * FrameDatasetStats::round). The workflow then raises the session's round and saves it. Killed
 * before labels.json, the folder reopens at this round without a frame dataset (one of the next
 * round is not counted); killed after it, at the next round (Session::reconcile). The next Train
 * starts the next round. Runs on a TaskRunner thread; holds copies of its inputs. Cancelled,
 * labels.json and the dataset stay as they were.
 */
class SelfTrainingTask
{
public:
    SelfTrainingTask(const Session &session, std::shared_ptr<const vision::LabelResult> labels);

    /** Never throws: missing weights, an unreadable source or an unwritable folder is the
     *  outcome's error. */
    SelfTrainingOutcome run(const TaskRunner::Report &report, const std::atomic<bool> *stop) const;

    static QString summary(const SelfTrainingOutcome &outcome, int round);

private:
    Session m_session;
    std::shared_ptr<const vision::LabelResult> m_labels;
};

} // namespace edgetrain::app

#pragma once

#include "session.h"
#include "taskrunner.h"
#include "verifiedscoring.h"
#include "vision/groundtruth.h"
#include "vision/labeling.h"
#include "vision/operatingpoint.h"
#include "vision/viewpoint.h"

#include <QString>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

namespace edgetrain::app {

/** What the evaluation gives: the figures, or why there are none. */
struct EvaluationOutcome
{
    /** Against the tracker's own labels (held-out tracks); empty on failure or cancel. */
    std::optional<vision::ViewpointEvaluation> result;
    /** Against the verified frames (full-frame student only), when the session has done ones. */
    std::optional<VerifiedRound> verified;
    double student_fps = 0, teacher_fps = 0, motion_fps = 0; // detect() only, one thread
    /** The full-frame student's operating threshold, and what it was chosen against: "labels"
     *  or "verified" (frames a person verified in the span the student trained on). */
    std::optional<vision::OperatingPoint> operating_point;
    QString operating_point_against = QStringLiteral("labels");
    /** Each detector's boxes on the picked frames, for scoring them again as more are verified
     *  (saved as <session>/verified-detections.json). */
    std::optional<VerifiedDetections> detections;
    QString error;
};

/**
 * What "Evaluate" does (step 6, also run after a finished training). Runs on a TaskRunner
 * thread with one compute thread (the frames/s are one core's); holds copies of what it reads.
 *
 * 0. Full-frame student: its operating threshold, the best F0.5 against the session's labels on
 *    60 training frames (calibrateStudent), saved with its weights.
 * 1. The picked frames (kind "frames", when `truth` has any): a DetectionRun from the source's
 *    start to the last picked frame with the teacher's detector part (the "hog" of "hog+motion",
 *    at its own threshold), `motion` (when the source is a video file: a fixed camera) and the
 *    student detecting down to kCurveScore (or its operating threshold, if lower) so the
 *    precision-recall curve reaches low scores. Frames picked but not yet verified run too, so
 *    their figures follow as soon as they are (VerifiedDetections).
 * 2. When enough frames before heldOutFrom(labels) are verified, the student's threshold is
 *    chosen on them instead (verifiedOperatingPoint: a person's truth rather than the labels)
 *    and saved with its weights; the held-out frames are never looked at for it.
 * 3. Against the tracker's labels: the trained student and the capture teacher's detector on
 *    frames of held-out tracks (crops: the test split's tracks; frames: tracks that start in a
 *    validation time block of the frame dataset), each at its operating threshold.
 * 4. The verified round (scoreVerified): the done frames >= heldOutFrom(labels), each detector
 *    at its operating point, with 95 % bootstrap intervals and the student's lead over each
 *    baseline. The round is the session's.
 */
class EvaluationTask
{
public:
    static constexpr float kCurveScore = 0.05f;

    EvaluationTask(const Session &session, std::shared_ptr<const vision::LabelResult> labels,
                   vision::GroundTruth truth = {});

    /** Never throws: missing weights, a model that does not match them, or an unreadable
     *  source is the outcome's error. */
    EvaluationOutcome run(const TaskRunner::Report &report, const std::atomic<bool> *stop) const;

    /** The status line for a finished evaluation (the verified figures when there are any). */
    static QString summary(const EvaluationOutcome &outcome);
    static QString summary(const vision::ViewpointEvaluation &result);
    static QString summary(const VerifiedRound &round);

    /** The detector in a teacher spec: "hog+motion" -> "hog"; "motion" -> "motion". */
    static std::string detectorPart(const QString &teacher);
    /** A video file: a fixed camera, where the motion baseline applies. */
    static bool fixedCamera(const QString &source);
    /** The first frame the student never saw: the labels' max_frames when labelling stopped
     *  before the source's end, else 0 (every verified frame is scored). */
    static int heldOutFrom(const vision::LabelResult &labels, int sourceFrames);

private:
    EvaluationOutcome runFrames(const TaskRunner::Report &report,
                                const std::atomic<bool> *stop) const;
    EvaluationOutcome runCrops(const TaskRunner::Report &report,
                               const std::atomic<bool> *stop) const;

    Session m_session;
    std::shared_ptr<const vision::LabelResult> m_labels;
    vision::GroundTruth m_truth;
};

} // namespace edgetrain::app

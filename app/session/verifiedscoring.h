#pragma once

#include "session.h"
#include "vision/bootstrap.h"
#include "vision/detectionmetrics.h"
#include "vision/groundtruth.h"
#include "vision/operatingpoint.h"

#include <QString>

#include <climits>
#include <optional>
#include <string>
#include <vector>

namespace edgetrain::app {

/**
 * Each detector's boxes on the picked frames of an evaluation (<session>/verified-detections.json),
 * kept so the figures follow the truth while a person verifies more of those frames: scoring them
 * again needs the truth and these boxes, not another run of the detectors.
 */
struct VerifiedDetections
{
    struct Detector
    {
        std::string name;    // "teacher", "motion", "student"
        float threshold = 0; // its operating threshold (the student's boxes reach lower scores)
        vision::FrameDetections frames;
    };
    int round = 1;
    int first_frame = 0;     // verified frames from here on are held out (0: all are)
    std::vector<int> frames; // the frames the detectors ran on, sorted
    std::vector<Detector> detectors;

    const Detector *detector(const std::string &name) const;
    /** Writes <dir>/verified-detections.json atomically; false with the reason. */
    bool save(const QString &sessionDir, QString *error) const;
    /** Reads it back; nullopt when there is none, or with `error` set when it cannot be read. */
    static std::optional<VerifiedDetections> load(const QString &sessionDir, QString *error);
    static constexpr const char *kFile = "verified-detections.json";
};

/** The bootstrap every verified figure is reported with: 2000 resamples of the frames, a fixed
 *  seed, so the same session gives the same bounds in the window, the CLI and the PDF. */
vision::BootstrapOptions verifiedBootstrap();

/** Verified frames in the span the student trained on that are enough to choose its operating
 *  threshold on (a person's truth beats the session's labels): at least this many frames ... */
constexpr int kMinThresholdFrames = 3;
/** ... holding at least this many counted boxes. */
constexpr int kMinThresholdBoxes = 5;

/**
 * The student's operating point chosen on the done frames of `truth` before `firstHeldOut` (the
 * span it trained on): the best F1 of its curve there at IoU `iou`; nullopt when there are fewer
 * than kMinThresholdFrames such frames or kMinThresholdBoxes boxes on them (today's calibration
 * against the labels then stands). The held-out frames are never looked at.
 */
std::optional<vision::OperatingPoint> verifiedOperatingPoint(const vision::GroundTruth &truth,
                                                             const vision::FrameDetections &student,
                                                             int firstHeldOut, double iou = 0.5);

/** Every detector's figures with intervals, and the student's lead over each baseline, on the
 *  done frames of `truth` in [first, last] that `frames` lists. */
struct IntervalScores
{
    std::vector<vision::DetectorScore> scores;
    vision::BootstrapResult bootstrap; // intervals per score; differences student − each other
};
IntervalScores scoreWithIntervals(const vision::GroundTruth &truth,
                                  const std::vector<VerifiedDetections::Detector> &detectors,
                                  int first = 0, int last = INT_MAX, double iou = 0.5);

/** The frames a headline is computed from: the done ones in [first, last]; when some came from
 *  the spread pick (or were imported or drawn by hand) and others from the disagreement pick,
 *  the former alone. */
struct HeadlineFrames
{
    vision::GroundTruth truth;   // those frames only
    int disagreement_frames = 0; // left out
    bool biased = false;         // only disagreement frames: they are used, and say so
};
HeadlineFrames headlineFrames(const vision::GroundTruth &truth, int first = 0, int last = INT_MAX);

/** Whether the student's lead is settled: enough frames and the F1 difference's interval clear
 *  of zero. The one rule of the Verify step, the report, the CLI and the CSV. */
bool leadSettled(int frames, const vision::BootstrapDifference &lead);

/**
 * The round's verified figures from the stored boxes: the done frames from `first_frame` on that
 * the detectors ran on; when some of them came from the spread pick (or were imported or drawn
 * by hand) and others from the disagreement pick, only the former count — frames chosen because
 * the detectors disagree there are the hardest, so they would pull every figure down and say
 * little about the camera as a whole. Each score carries its interval (VerifiedRound::intervals)
 * and the round the student's lead over teacher and motion.
 */
VerifiedRound scoreVerified(const vision::GroundTruth &truth, const VerifiedDetections &detections);

/** Fewer verified frames than this settle no comparison, whatever their interval says: a
 *  handful of frames resampled has only a few distinct draws, and its spread understates how
 *  much frames not verified would differ. */
constexpr int kMinFramesToCompare = 5;

/** A whole percent with its interval, "86 % (78–93 %)" ("86 %" without one): the Verify line's
 *  and the report's. */
QString percentWithRange(double fraction, const vision::Interval *ci);
/** A signed difference, "+0.18" / "−0.04" (never "−0.00"). */
QString signedDifference(double v);

/** How the Verify step says whether the verified frames are enough (the manual's rule). */
struct VerifiedEnough
{
    /** "On 16 verified frames the student finds 86 % (78–93 %) of the people at 88 % (81–94 %)
     *  precision"; empty without a scored student. */
    QString headline;
    QStringList comparisons; // one sentence per baseline
    int pending = 0;         // done held-out frames the last evaluation did not run on
    bool settled = false;    // every comparison's F1 difference is clear of zero
};
VerifiedEnough verifiedEnough(const VerifiedRound &round, int pendingFrames,
                              const QString &objects);

/** Done frames from `first_frame` on that `detections` did not run on. */
int pendingVerifiedFrames(const vision::GroundTruth &truth, const VerifiedDetections &detections);

} // namespace edgetrain::app

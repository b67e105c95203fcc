#pragma once

#include "stepprogress.h"
#include "vision/detectionmetrics.h"
#include "vision/labelresult.h"

#include <QString>

#include <atomic>
#include <set>
#include <string>
#include <vector>

namespace edgetrain::app {

/** One source of boxes over candidate frames: a detector's detections, or the session's labels. */
struct DisagreementSource
{
    std::string name; // "teacher", "motion", "tracker", "student"
    /** By frame. A frame absent: the source did not look there (the tracker past the labelled
     *  frames); present and empty: it looked and found nobody. */
    vision::FrameDetections boxes;
    float threshold = 0.0f; // boxes scoring below it are not found (the operating threshold)
    /** > 0: boxes scoring within this of `threshold` (either side) are "near the threshold" (the
     *  student's, run below its threshold so the ones just under it are seen). */
    float nearMargin = 0.0f;
};

/** How much the sources disagree on one frame, in parts. */
struct FrameDisagreement
{
    int frame = 0;
    int sources = 0; // sources that looked at the frame
    /** Summed over every pair of sources that looked: boxes of one that the other has no box
     *  for at IoU 0.5 (one-to-one, largest IoU first). */
    int unmatched = 0;
    /** Boxes scoring within a source's nearMargin of its threshold. */
    int nearThreshold = 0;
    /** Found boxes no other looking source has a box for at IoU 0.5 (needs two sources). */
    int onlyOne = 0;

    /** The ranking score: `unmatched` per pair of looking sources (so frames the tracker also
     *  labelled do not outrank the others for their extra pairs), plus the other two parts. */
    double score() const
    {
        const int pairs = sources * (sources - 1) / 2;
        return (pairs > 0 ? double(unmatched) / pairs : 0.0) + nearThreshold + onlyOne;
    }
};

/** What the disagreement pick knows: the source's length, the count and the kept frames. */
struct DisagreementPick
{
    int frames = 0;        // in the source: picks are 0 .. frames-1
    int count = 20;        // frames wanted in all (kept ones included)
    std::vector<int> keep; // frames already verified or edited: always kept, and crowd others
    /** Picked frames lie at least this far from each other and from kept frames; <= 0: derived,
     *  frames / (2 * count), at least 1. Halved (down to 1) when the count cannot be met. */
    int minGap = 0;

    int gap() const;
};

/** What Disagreement::collect runs: the session's detectors, labels and student. */
struct DisagreementRun
{
    QString source;  // the video or folder (motion runs only for a video file: a fixed camera)
    QString teacher; // the session's teacher spec: its detector part is run ("hog" of "hog+motion")
    const vision::LabelResult *labels = nullptr; // the tracker's source: accepted tracks (or none)
    std::string sessionDir; // whose student runs (detector.safetensors, its saved threshold)
    std::set<int> frames;   // the candidate frames (Disagreement::candidates)
    float nearMargin = 0.1f;
};

/**
 * Where the detectors disagree (issue #44): frames ranked by how much teacher, motion, tracker
 * and student disagree, picked spread over time, for a person to verify after the unbiased
 * spread pick (pickFrames). Deterministic throughout.
 */
class Disagreement
{
public:
    /** The detectors run on at most about this many candidate frames, so a long video's run
     *  stays a few minutes (every frame is still decoded for motion's background). */
    static constexpr int kCandidates = 200;

    /** Every K-th frame, K = ceil(frames / kCandidates) (vtest.avi's 795 frames: every 4th). */
    static int candidateStep(int frames);
    /** 0, K, 2K, ... below `frames`, plus `extra` frames in range (e.g. verified ones). */
    static std::set<int> candidates(int frames, const std::vector<int> &extra = {});

    /** The parts for every frame some source looked at, by frame. */
    static std::vector<FrameDisagreement> score(const std::vector<DisagreementSource> &sources);
    /** One frame's parts: `perSource[i]` is source i's boxes there, or nullptr if it did not
     *  look. */
    static FrameDisagreement
    scoreFrame(int frame, const std::vector<DisagreementSource> &sources,
               const std::vector<const std::vector<vision::ScoredBox> *> &perSource);

    /**
     * The frames to verify, sorted: every `keep` frame in range, then the highest-scoring
     * frames of `scored` (ties: the earlier frame) at least `pick.gap()` from each other and from
     * the kept ones, those with a score above 0 first; when the count is not met the gap is
     * halved down to 1, and then frames without disagreement fill in the same way. Fewer than
     * `count` only when `scored` runs out.
     */
    static std::vector<int> pick(const std::vector<FrameDisagreement> &scored,
                                 const DisagreementPick &pick);

    /**
     * The long part: one vision::DetectionRun over `run.frames` with the teacher's detector (its
     * own threshold), motion (video files only) and the session's student (run down to its saved
     * operating threshold minus `nearMargin`), plus the tracker's boxes (the labels' accepted
     * tracks) on the candidates the labelling reached. Reports progress; stopped, it returns what
     * it ran. Throws core::IoError / core::FormatError when the student cannot be loaded, and
     * what DetectionRun and FrameSource::open throw.
     */
    static std::vector<DisagreementSource> collect(const DisagreementRun &run,
                                                   const StepProgress &progress,
                                                   const std::atomic<bool> *stop);

    /** The tracker's source: accepted tracks' boxes on the frames of `frames` the labelling
     *  reached (score 1). */
    static DisagreementSource trackerSource(const vision::LabelResult &labels,
                                            const std::set<int> &frames);
};

} // namespace edgetrain::app

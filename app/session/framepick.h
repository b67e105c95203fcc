#pragma once

#include "vision/labeling.h"

#include <utility>
#include <vector>

namespace edgetrain::app {

/**
 * What the Verify step knows when it picks frames for a person to check: the source's length,
 * which frames are held out from training, which frames hold a label, and which frames a person
 * has worked on already.
 */
struct FramePick
{
    int frames = 0;                           // in the source: candidates are 0 .. frames-1
    int count = 20;                           // frames wanted in all (kept ones included)
    std::vector<std::pair<int, int>> heldOut; // inclusive spans of frames never trained on
    int labelledFrames = 0;                   // frames 0 .. labelledFrames-1 went through labelling
    std::vector<int> labelled;                // of those, the frames with at least one accepted box
    std::vector<int> keep;                    // frames already verified or edited: always kept

    /** From a session's labels: held out are the spans of the test-split tracks (the dataset's
     *  split for `seed`) and the frames after the labelled ones; without labels (or without test
     * tracks), the last third of the video. */
    static FramePick fromLabels(const vision::LabelResult *labels, int frames, int count, int seed);
};

/**
 * The frames to verify, sorted: every `keep` frame, then new ones up to `count` in all (fewer
 * only when the source has fewer frames), spread evenly within each group: about a fifth of the
 * new ones among the labelled part's frames where nobody was labelled (the teacher and the tracker
 * may both have missed someone), two thirds of the rest in the held-out spans, the others over the
 * rest of the video. A group with too few frames passes its share on. Deterministic.
 */
std::vector<int> pickFrames(const FramePick &pick);

} // namespace edgetrain::app

#pragma once

#include "detectionmetrics.h"
#include "framesource.h"
#include "teacher.h"

#include <atomic>
#include <functional>
#include <set>
#include <vector>

namespace edgetrain::vision {

/** Detections of several detectors on chosen frames, and the time each spent detecting. */
struct DetectionRunResult
{
    std::vector<FrameDetections> detections; // one per detector, by frame
    std::vector<double> detect_seconds;      // detect() time only, per detector
    int frames = 0;                          // chosen frames reached
};

/**
 * Runs detectors over a source from its first frame to the last chosen one: each detector
 * detects on the chosen frames; a detector that needs every frame (motion) observes the others,
 * so its background model is what it would be live. Throws SourceError if the source cannot
 * seek to its start.
 */
class DetectionRun
{
public:
    static DetectionRunResult run(FrameSource &source, const std::vector<Teacher *> &detectors,
                                  const std::set<int> &frames,
                                  const std::function<void(int done, int total)> &progress = {},
                                  const std::atomic<bool> *stop = nullptr);
};

} // namespace edgetrain::vision

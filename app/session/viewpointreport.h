#pragma once

// The viewpoint pipeline's report: its lines and its JSON fields (the CLI's --json contract).

#include "core/json.h"
#include "verifiedframes.h"
#include "verifiedscoring.h"
#include "vision/detectionmetrics.h"
#include "vision/framedataset.h"
#include "vision/labeling.h"
#include "vision/operatingpoint.h"

#include <functional>
#include <string>
#include <vector>

namespace edgetrain::app::Internal {

using Say = std::function<void(const std::string &line)>;

/** The frame dataset's lines (its sizes, ignore regions, pasted objects) and its JSON. */
core::Json frameDatasetReport(const vision::FrameDatasetStats &stats,
                              const vision::LabelResult &labels, const Say &say);

/** The operating point's line and JSON; `against`: "labels" (the session's, on training frames)
 *  or "verified" (frames a person verified in the span the student trained on). */
core::Json operatingPointReport(const vision::OperatingPoint &point, const std::string &against,
                                const Say &say);

/** "  name  recall ... (tp/truths)". */
std::string scoreLine(const vision::DetectorScore &score);
core::Json scoreJson(const vision::DetectorScore &score);

/** Teacher, motion and every round's student (named "student rN", last) on the verified
 *  frames in [first, last]: lines and JSON (frames, iou, teacher, motion, student, rounds), each
 *  figure with its 95 % interval ("<figure>_lo", "<figure>_hi"), the last student's lead over
 *  each baseline ("leads") and the bootstrap's settings ("bootstrap"). */
core::Json verifiedSpanReport(const vision::GroundTruth &truth,
                              const std::vector<VerifiedDetections::Detector> &detectors,
                              int baselines, int first, int last, double iou,
                              const std::string &what, const Say &say);

} // namespace edgetrain::app::Internal

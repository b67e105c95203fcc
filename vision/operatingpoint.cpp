#include "operatingpoint.h"

#include "detectionrun.h"
#include "framedataset.h"
#include "teacher.h"

#include <algorithm>
#include <set>

namespace edgetrain::vision {

OperatingPoint OperatingPointCalibration::bestF(const DetectorScore &score, double beta)
{
    OperatingPoint best;
    best.beta = beta;
    best.frames = score.frames;
    best.boxes = score.truths;
    const double b2 = beta * beta;
    for (const PrPoint &p : score.curve) {
        const double sum = b2 * p.precision + p.recall;
        const double f = sum > 0 ? (1 + b2) * p.precision * p.recall / sum : 0.0;
        if (f > best.f_beta + 1e-9) {
            best.f_beta = f;
            best.f1 = p.recall + p.precision > 0
                          ? 2 * p.recall * p.precision / (p.recall + p.precision)
                          : 0.0;
            best.recall = p.recall;
            best.precision = p.precision;
            best.threshold = p.threshold;
        }
    }
    return best;
}

OperatingPoint OperatingPointCalibration::calibrate(FrameSource &source, Teacher &student,
                                                    const LabelResult &labels,
                                                    const Options &options,
                                                    const std::function<void(int, int)> &progress,
                                                    const std::atomic<bool> *stop)
{
    int last = labels.stats.frames - 1;
    for (const Track &t : labels.tracks)
        if (!t.boxes.empty())
            last = std::max(last, t.boxes.back().frame);
    if (labels.options.max_frames > 0) // labelling stopped there: the student never saw more
        last = std::min(last, labels.options.max_frames - 1);
    if (options.last_frame >= 0)
        last = std::min(last, options.last_frame);
    std::set<int> frames;
    const int n = std::max(1, options.frames);
    for (int i = 0; i < n && last >= 0; ++i)
        frames.insert(int((double(i) + 0.5) * double(last + 1) / double(n)));

    FrameDatasetOptions boxes;
    boxes.min_tracker_confidence = options.min_tracker_confidence;
    GroundTruth truth;
    truth.frame_size = labels.frame_size;
    for (const int f : frames) {
        TruthFrame frame;
        frame.index = f;
        frame.done = true;
        for (const core::LabelBox &b :
             FrameDataset::frameBoxes(labels, f, boxes, nullptr, &options.plane))
            frame.boxes.push_back({cv::Rect2d(b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0), b.ignore, -1});
        truth.frames.push_back(std::move(frame));
    }

    const float kept = student.threshold;
    student.threshold = 0.02f; // the whole curve
    DetectionRunResult run;
    try {
        run = DetectionRun::run(source, {&student}, frames, progress, stop);
    } catch (...) {
        student.threshold = kept;
        throw;
    }
    student.threshold = kept;
    MetricsOptions m;
    m.iou = options.iou;
    return bestF(DetectionMetrics::evaluate("student", run.detections.front(), truth, m),
                 options.beta);
}

} // namespace edgetrain::vision

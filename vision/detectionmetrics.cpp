#include "detectionmetrics.h"

#include "weightedfigures.h"

#include <algorithm>
#include <numeric>

namespace edgetrain::vision {

namespace {

enum class Outcome { True, False, Ignored };

struct Judged
{
    float score;
    Outcome outcome;
};

/** The frames that count, in index order. */
std::vector<const TruthFrame *> scoredFrames(const GroundTruth &truth, const MetricsOptions &o)
{
    std::vector<const TruthFrame *> out;
    for (const TruthFrame &f : truth.frames)
        if ((f.done || !o.only_done_frames) && f.index >= o.first_frame && f.index <= o.last_frame)
            out.push_back(&f);
    return out;
}

/** Greedy matching of one frame at one IoU; appends each detection's outcome. */
void matchFrame(const TruthFrame &frame, const std::vector<ScoredBox> &detections, double minIou,
                std::vector<Judged> &out)
{
    std::vector<std::size_t> order(detections.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return detections[a].score > detections[b].score;
    });
    std::vector<bool> taken(frame.boxes.size(), false);
    for (std::size_t k : order) {
        const cv::Rect2d &d = detections[k].box;
        int best = -1;
        double bestIou = minIou;
        for (std::size_t t = 0; t < frame.boxes.size(); ++t) {
            if (frame.boxes[t].ignore || taken[t])
                continue;
            const double v = DetectionMetrics::iou(d, frame.boxes[t].box);
            if (v >= bestIou) {
                best = int(t);
                bestIou = v;
            }
        }
        if (best >= 0) {
            taken[std::size_t(best)] = true;
            out.push_back({detections[k].score, Outcome::True});
            continue;
        }
        const bool ignored =
            std::any_of(frame.boxes.begin(), frame.boxes.end(), [&](const TruthBox &t) {
                if (!t.ignore)
                    return false;
                const double inside = d.area() > 0 ? (d & t.box).area() / d.area() : 0.0;
                return DetectionMetrics::iou(d, t.box) >= minIou || inside >= 0.5;
            });
        out.push_back({detections[k].score, ignored ? Outcome::Ignored : Outcome::False});
    }
}

std::vector<Judged> matchAll(const std::vector<const TruthFrame *> &frames,
                             const FrameDetections &detections, double minIou)
{
    std::vector<Judged> judged;
    for (const TruthFrame *f : frames) {
        const auto it = detections.find(f->index);
        if (it != detections.end())
            matchFrame(*f, it->second, minIou, judged);
    }
    // COCO sorts all detections by score with a stable sort (frame order breaks ties).
    std::stable_sort(judged.begin(), judged.end(),
                     [](const Judged &a, const Judged &b) { return a.score > b.score; });
    return judged;
}

/** 101-point interpolated AP of detections sorted by descending score. */
double averagePrecision(const std::vector<Judged> &judged, int truths)
{
    if (truths <= 0)
        return 0.0;
    std::vector<double> recall, precision;
    int tp = 0, fp = 0;
    for (const Judged &j : judged) {
        if (j.outcome == Outcome::Ignored)
            continue;
        (j.outcome == Outcome::True ? tp : fp)++;
        recall.push_back(double(tp) / truths);
        precision.push_back(double(tp) / (tp + fp));
    }
    for (std::size_t i = precision.size(); i-- > 1;)
        precision[i - 1] = std::max(precision[i - 1], precision[i]);
    double sum = 0.0;
    for (int r = 0; r <= 100; ++r) {
        const double level = r / 100.0;
        const auto it = std::lower_bound(recall.begin(), recall.end(), level - 1e-12);
        if (it != recall.end())
            sum += precision[std::size_t(it - recall.begin())];
    }
    return sum / 101.0;
}

} // namespace

double DetectionMetrics::iou(const cv::Rect2d &a, const cv::Rect2d &b)
{
    const double inter = (a & b).area();
    const double uni = a.area() + b.area() - inter;
    return uni > 0 ? inter / uni : 0.0;
}

DetectorScore DetectionMetrics::evaluate(const std::string &name, const FrameDetections &detections,
                                         const GroundTruth &truth, const MetricsOptions &o)
{
    DetectorScore s;
    s.name = name;
    s.threshold = o.threshold;
    const auto frames = scoredFrames(truth, o);
    s.frames = int(frames.size());
    for (const TruthFrame *f : frames)
        s.truths += int(std::count_if(f->boxes.begin(), f->boxes.end(),
                                      [](const TruthBox &b) { return !b.ignore; }));

    // Greedy matching takes detections best first, so those above the threshold are matched
    // the same with or without the ones below it: the operating point is a prefix of the curve.
    const std::vector<Judged> judged = matchAll(frames, detections, o.iou);
    int tp = 0, fp = 0;
    for (std::size_t i = 0; i < judged.size(); ++i) {
        const Judged &j = judged[i];
        if (j.outcome == Outcome::True)
            ++tp;
        else if (j.outcome == Outcome::False)
            ++fp;
        if (j.score >= o.threshold) {
            s.true_positives = tp;
            s.false_positives = fp;
        }
        // One point per score; a detection absorbed by an ignore box moves nothing.
        const bool lastOfScore = i + 1 == judged.size() || judged[i + 1].score != j.score;
        if (lastOfScore && j.outcome != Outcome::Ignored && tp + fp > 0)
            s.curve.push_back(
                {s.truths > 0 ? double(tp) / s.truths : 0.0, double(tp) / (tp + fp), j.score});
    }
    s.detections = s.true_positives + s.false_positives;
    s.recall = s.truths > 0 ? double(s.true_positives) / s.truths : 0.0;
    s.precision = s.detections > 0 ? double(s.true_positives) / s.detections : 0.0;
    s.f1 = s.recall + s.precision > 0 ? 2 * s.recall * s.precision / (s.recall + s.precision) : 0.0;

    s.ap50 = averagePrecision(o.iou == 0.5 ? judged : matchAll(frames, detections, 0.5), s.truths);
    double sum = 0.0;
    for (int k = 0; k < 10; ++k) {
        const double t = 0.5 + 0.05 * k;
        sum += k == 0 ? s.ap50 : averagePrecision(matchAll(frames, detections, t), s.truths);
    }
    s.ap50_95 = sum / 10.0;
    return s;
}

std::vector<DetectorScore>
DetectionMetrics::evaluate(const std::vector<std::pair<std::string, FrameDetections>> &detectors,
                           const GroundTruth &truth, const MetricsOptions &options)
{
    std::vector<DetectorScore> out;
    out.reserve(detectors.size());
    for (const auto &[name, detections] : detectors)
        out.push_back(evaluate(name, detections, truth, options));
    return out;
}

std::vector<FrameMatch> DetectionMetrics::frameMatches(const FrameDetections &detections,
                                                       const GroundTruth &truth,
                                                       const MetricsOptions &options)
{
    std::vector<FrameMatch> out;
    for (const TruthFrame *f : scoredFrames(truth, options)) {
        FrameMatch m;
        m.frame = f->index;
        m.truths = int(std::count_if(f->boxes.begin(), f->boxes.end(),
                                     [](const TruthBox &b) { return !b.ignore; }));
        const auto it = detections.find(f->index);
        if (it != detections.end()) {
            std::vector<Judged> judged;
            matchFrame(*f, it->second, options.iou, judged);
            for (const Judged &j : judged)
                if (j.outcome != Outcome::Ignored)
                    m.detections.push_back({j.score, j.outcome == Outcome::True});
        }
        out.push_back(std::move(m));
    }
    return out;
}

DetectionMetrics::Figures DetectionMetrics::figures(const std::vector<FrameMatch> &frames,
                                                    float threshold, const std::vector<int> &weight)
{
    return WeightedFigures(frames, threshold).figures(weight);
}

} // namespace edgetrain::vision

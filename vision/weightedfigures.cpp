#include "weightedfigures.h"

#include "core/error.h"

#include <algorithm>
#include <string>

namespace edgetrain::vision {

namespace {

struct Sorted
{
    float score;
    int frame;
    bool true_positive;
};

/** 101-point interpolated AP from the (true positives, false positives) counts after each true
 *  positive, in score order. evaluate() also keeps a point after each false positive; those never
 *  set the envelope at a recall level (a false positive has the recall of the point before it
 *  and a lower precision), so both give the same sum, term by term. */
double averagePrecision(const std::vector<std::pair<int, int>> &points, int truths)
{
    if (truths <= 0)
        return 0.0;
    std::vector<double> recall(points.size()), precision(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) {
        const auto [tp, fp] = points[i];
        recall[i] = double(tp) / truths;
        precision[i] = double(tp) / (tp + fp);
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

WeightedFigures::WeightedFigures(const std::vector<FrameMatch> &frames, float threshold)
{
    std::vector<Sorted> all;
    m_frames.reserve(frames.size());
    for (std::size_t f = 0; f < frames.size(); ++f) {
        FrameCounts c;
        c.truths = frames[f].truths;
        for (const MatchedDetection &d : frames[f].detections) {
            all.push_back({d.score, int(f), d.true_positive});
            if (d.score >= threshold) {
                ++c.detections;
                c.true_positives += d.true_positive ? 1 : 0;
            }
        }
        m_frames.push_back(c);
    }
    // evaluate()'s order: a stable sort by score of the frames' lists, concatenated by frame.
    std::stable_sort(all.begin(), all.end(),
                     [](const Sorted &a, const Sorted &b) { return a.score > b.score; });
    m_true_positive.reserve(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (i == 0 || all[i].score != all[i - 1].score || all[i].frame != all[i - 1].frame)
            m_runs.push_back({all[i].frame, int(i), int(i)});
        m_runs.back().end = int(i) + 1;
        m_true_positive.push_back(all[i].true_positive ? 1 : 0);
    }
}

DetectionMetrics::Figures WeightedFigures::figures(const std::vector<int> &weight) const
{
    if (!weight.empty() && weight.size() != m_frames.size())
        throw core::Error("detection figures: " + std::to_string(weight.size()) +
                          " frame weights for " + std::to_string(m_frames.size()) + " frames");
    if (std::any_of(weight.begin(), weight.end(), [](int w) { return w < 0; }))
        throw core::Error("detection figures: a negative frame weight");
    const auto weightOf = [&](int f) { return weight.empty() ? 1 : weight[std::size_t(f)]; };

    DetectionMetrics::Figures s;
    for (std::size_t f = 0; f < m_frames.size(); ++f) {
        const int w = weightOf(int(f));
        s.truths += w * m_frames[f].truths;
        s.detections += w * m_frames[f].detections;
        s.true_positives += w * m_frames[f].true_positives;
    }
    s.recall = s.truths > 0 ? double(s.true_positives) / s.truths : 0.0;
    s.precision = s.detections > 0 ? double(s.true_positives) / s.detections : 0.0;
    s.f1 = s.recall + s.precision > 0 ? 2 * s.recall * s.precision / (s.recall + s.precision) : 0.0;

    std::vector<std::pair<int, int>> points;
    points.reserve(m_true_positive.size());
    int tp = 0, fp = 0;
    for (const TiedRun &run : m_runs) {
        const int w = weightOf(run.frame);
        if (w == 0)
            continue;
        if (run.end - run.first == 1) {
            // w true positives in a row: only the last one's point can set the envelope.
            if (m_true_positive[std::size_t(run.first)]) {
                tp += w;
                points.emplace_back(tp, fp);
            } else {
                fp += w;
            }
            continue;
        }
        for (int copy = 0; copy < w; ++copy)
            for (int i = run.first; i < run.end; ++i) {
                if (m_true_positive[std::size_t(i)]) {
                    ++tp;
                    points.emplace_back(tp, fp);
                } else {
                    ++fp;
                }
            }
    }
    s.ap50 = averagePrecision(points, s.truths);
    return s;
}

} // namespace edgetrain::vision

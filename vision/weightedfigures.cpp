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

/** A point of the precision-recall curve after a true positive; precision is filled in as
 *  the envelope (the best precision at this recall or beyond). */
struct CurvePoint
{
    int tp, fp;
    double precision;
};

/** 101-point interpolated AP from the points after each true positive, in score order.
 *  evaluate() also keeps a point after each false positive; those never set the envelope at a
 *  recall level (a false positive has the recall of the point before it and a lower precision),
 *  so both give the same sum, term by term. Recall rises along the points, so one walk finds
 *  each level's first point where evaluate() searches for it. */
double averagePrecision(CurvePoint *points, std::size_t count, int truths)
{
    if (truths <= 0 || count == 0)
        return 0.0;
    double best = 0.0;
    for (std::size_t i = count; i-- > 0;) {
        best = std::max(best, double(points[i].tp) / (points[i].tp + points[i].fp));
        points[i].precision = best;
    }
    double sum = 0.0;
    std::size_t at = 0;
    double recall = double(points[0].tp) / truths;
    for (int r = 0; r <= 100; ++r) {
        const double level = r / 100.0;
        while (recall < level - 1e-12) {
            if (++at == count)
                return sum / 101.0;
            recall = double(points[at].tp) / truths;
        }
        sum += points[at].precision;
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

    DetectionMetrics::Figures s;
    for (std::size_t f = 0; f < m_frames.size(); ++f) {
        const int w = weight.empty() ? 1 : weight[f];
        s.truths += w * m_frames[f].truths;
        s.detections += w * m_frames[f].detections;
        s.true_positives += w * m_frames[f].true_positives;
    }
    s.recall = s.truths > 0 ? double(s.true_positives) / s.truths : 0.0;
    s.precision = s.detections > 0 ? double(s.true_positives) / s.detections : 0.0;
    s.f1 = s.recall + s.precision > 0 ? 2 * s.recall * s.precision / (s.recall + s.precision) : 0.0;

    // Reused across calls (a bootstrap asks for thousands of draws), with room for a point per
    // run: a lone detection's point is written always and kept only if it is a true positive
    // with weight, which spares a branch the draw's weights make unpredictable.
    thread_local std::vector<CurvePoint> points;
    if (points.size() < m_runs.size())
        points.resize(m_runs.size());
    std::size_t count = 0;
    int tp = 0, fp = 0;
    for (std::size_t r = 0; r < m_runs.size(); ++r) {
        const TiedRun &run = m_runs[r];
        const int w = weight.empty() ? 1 : weight[std::size_t(run.frame)];
        if (run.end - run.first == 1) {
            // w true positives in a row: only the last one's point can set the envelope.
            const int isTrue = m_true_positive[std::size_t(run.first)];
            tp += w * isTrue;
            fp += w * (1 - isTrue);
            points[count] = {tp, fp, 0.0};
            count += std::size_t(isTrue & int(w > 0));
            continue;
        }
        const std::size_t room = count + std::size_t(w * (run.end - run.first)) + m_runs.size() - r;
        if (points.size() < room)
            points.resize(room);
        for (int copy = 0; copy < w; ++copy)
            for (int i = run.first; i < run.end; ++i) {
                if (m_true_positive[std::size_t(i)])
                    points[count++] = {++tp, fp, 0.0};
                else
                    ++fp;
            }
    }
    s.ap50 = averagePrecision(points.data(), count, s.truths);
    return s;
}

} // namespace edgetrain::vision

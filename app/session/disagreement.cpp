#include "disagreement.h"

#include "verifiedframes.h"
#include "vision/detectionrun.h"
#include "vision/framesource.h"
#include "vision/studentteacher.h"

#include <algorithm>
#include <cmath>
#include <tuple>

namespace edgetrain::app {

namespace {

constexpr double kMatchIou = 0.5;

std::vector<cv::Rect2d> foundBoxes(const DisagreementSource &source,
                                   const std::vector<vision::ScoredBox> &boxes)
{
    std::vector<cv::Rect2d> found;
    for (const vision::ScoredBox &b : boxes)
        if (b.score >= source.threshold)
            found.push_back(b.box);
    return found;
}

/** Pairs of boxes matched one to one at IoU >= kMatchIou, the largest IoU first. */
int matchCount(const std::vector<cv::Rect2d> &a, const std::vector<cv::Rect2d> &b)
{
    std::vector<std::tuple<double, std::size_t, std::size_t>> pairs;
    for (std::size_t i = 0; i < a.size(); ++i)
        for (std::size_t j = 0; j < b.size(); ++j)
            if (const double iou = vision::DetectionMetrics::iou(a[i], b[j]); iou >= kMatchIou)
                pairs.emplace_back(-iou, i, j);
    std::sort(pairs.begin(), pairs.end());
    std::vector<char> usedA(a.size(), 0), usedB(b.size(), 0);
    int matched = 0;
    for (const auto &[negIou, i, j] : pairs) {
        if (usedA[i] || usedB[j])
            continue;
        usedA[i] = usedB[j] = 1;
        ++matched;
    }
    return matched;
}

bool overlapsAny(const cv::Rect2d &box, const std::vector<cv::Rect2d> &others)
{
    return std::any_of(others.begin(), others.end(), [&](const cv::Rect2d &o) {
        return vision::DetectionMetrics::iou(box, o) >= kMatchIou;
    });
}

/** Distance from `frame` to the nearest frame of `taken` (INT_MAX if none). */
int nearestDistance(const std::set<int> &taken, int frame)
{
    int d = INT_MAX;
    const auto it = taken.lower_bound(frame);
    if (it != taken.end())
        d = *it - frame;
    if (it != taken.begin())
        d = std::min(d, frame - *std::prev(it));
    return d;
}

} // namespace

int DisagreementPick::gap() const
{
    if (minGap > 0)
        return minGap;
    return count > 0 ? std::max(1, frames / (2 * count)) : 1;
}

int Disagreement::candidateStep(int frames)
{
    return std::max(1, (frames + kCandidates - 1) / kCandidates);
}

std::set<int> Disagreement::candidates(int frames, const std::vector<int> &extra)
{
    std::set<int> c;
    const int step = candidateStep(frames);
    for (int f = 0; f < frames; f += step)
        c.insert(f);
    for (int f : extra)
        if (f >= 0 && f < frames)
            c.insert(f);
    return c;
}

FrameDisagreement
Disagreement::scoreFrame(int frame, const std::vector<DisagreementSource> &sources,
                         const std::vector<const std::vector<vision::ScoredBox> *> &perSource)
{
    FrameDisagreement d;
    d.frame = frame;
    std::vector<std::vector<cv::Rect2d>> found;
    for (std::size_t i = 0; i < sources.size(); ++i) {
        if (!perSource[i])
            continue;
        ++d.sources;
        found.push_back(foundBoxes(sources[i], *perSource[i]));
        if (sources[i].nearMargin > 0)
            for (const vision::ScoredBox &b : *perSource[i])
                d.nearThreshold +=
                    std::abs(b.score - sources[i].threshold) <= sources[i].nearMargin;
    }
    for (std::size_t i = 0; i < found.size(); ++i)
        for (std::size_t j = i + 1; j < found.size(); ++j)
            d.unmatched +=
                int(found[i].size() + found[j].size()) - 2 * matchCount(found[i], found[j]);
    if (found.size() < 2)
        return d;
    for (std::size_t i = 0; i < found.size(); ++i)
        for (const cv::Rect2d &box : found[i]) {
            bool seen = false;
            for (std::size_t j = 0; j < found.size() && !seen; ++j)
                seen = j != i && overlapsAny(box, found[j]);
            d.onlyOne += !seen;
        }
    return d;
}

std::vector<FrameDisagreement> Disagreement::score(const std::vector<DisagreementSource> &sources)
{
    std::set<int> frames;
    for (const DisagreementSource &s : sources)
        for (const auto &[f, boxes] : s.boxes)
            frames.insert(f);
    std::vector<FrameDisagreement> out;
    std::vector<const std::vector<vision::ScoredBox> *> perSource(sources.size());
    for (int f : frames) {
        for (std::size_t i = 0; i < sources.size(); ++i) {
            const auto it = sources[i].boxes.find(f);
            perSource[i] = it != sources[i].boxes.end() ? &it->second : nullptr;
        }
        out.push_back(scoreFrame(f, sources, perSource));
    }
    return out;
}

std::vector<int> Disagreement::pick(const std::vector<FrameDisagreement> &scored,
                                    const DisagreementPick &pick)
{
    std::set<int> taken;
    for (int f : pick.keep)
        if (f >= 0 && f < pick.frames)
            taken.insert(f);
    int wanted = std::min(pick.count, pick.frames) - int(taken.size());

    std::vector<FrameDisagreement> ranked;
    for (const FrameDisagreement &d : scored)
        if (d.frame >= 0 && d.frame < pick.frames)
            ranked.push_back(d);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const FrameDisagreement &a, const FrameDisagreement &b) {
                         return a.score() != b.score() ? a.score() > b.score() : a.frame < b.frame;
                     });
    // Disagreeing frames at the full gap, then at smaller gaps, before any agreeing frame.
    for (const bool agreeing : {false, true})
        for (int gap = pick.gap(); wanted > 0; gap /= 2) {
            for (const FrameDisagreement &d : ranked) {
                if (wanted <= 0)
                    break;
                if ((d.score() == 0) != agreeing || taken.count(d.frame) ||
                    nearestDistance(taken, d.frame) < gap)
                    continue;
                taken.insert(d.frame);
                --wanted;
            }
            if (gap <= 1)
                break;
        }
    return {taken.begin(), taken.end()};
}

DisagreementSource Disagreement::trackerSource(const vision::LabelResult &labels,
                                               const std::set<int> &frames)
{
    DisagreementSource s;
    s.name = "tracker";
    for (int f : frames)
        if (f < labels.stats.frames)
            s.boxes[f]; // looked: nobody, unless a track is there
    for (const vision::Track &t : labels.tracks) {
        if (t.state != vision::Track::State::Accepted)
            continue;
        for (const vision::TrackBox &b : t.boxes)
            if (frames.count(b.frame) && b.frame < labels.stats.frames)
                s.boxes[b.frame].push_back({b.box, 1.0f});
    }
    return s;
}

std::vector<DisagreementSource> Disagreement::collect(const DisagreementRun &run,
                                                      const StepProgress &progress,
                                                      const std::atomic<bool> *stop)
{
    auto source = vision::FrameSource::open(run.source.toStdString());
    auto student = vision::StudentTeacher::fromSession(run.sessionDir);
    const float operating = student->threshold;
    const BaselineDetectors baselines(run.teacher, run.source, std::nullopt,
                                      run.labels && !run.labels->cuts.empty());

    std::vector<DisagreementSource> sources;
    std::vector<vision::Teacher *> detectors;
    for (const VerifiedDetector &d : baselines.list()) {
        sources.push_back({d.name, {}, d.threshold, 0.0f});
        detectors.push_back(d.detector);
    }
    // Below its threshold too, so the boxes just under it are seen.
    student->threshold = std::max(0.0f, operating - run.nearMargin);
    sources.push_back({"student", {}, operating, run.nearMargin});
    detectors.push_back(student.get());

    auto result = vision::DetectionRun::run(
        *source, detectors, run.frames,
        [&](int done, int total) {
            if (progress)
                progress(done, total,
                         QStringLiteral("where the detectors disagree: frame %1 of %2")
                             .arg(done)
                             .arg(total));
        },
        stop);
    for (std::size_t i = 0; i < detectors.size(); ++i)
        sources[i].boxes = std::move(result.detections[i]);
    if (run.labels)
        sources.push_back(trackerSource(*run.labels, run.frames));
    return sources;
}

} // namespace edgetrain::app

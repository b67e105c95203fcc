#include "labeling.h"

#include "core/error.h"
#include "trackfollower.h"
#include "tracking.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>

namespace edgetrain::vision {

double sceneChange(const cv::Mat &a, const cv::Mat &b)
{
    auto hist = [](const cv::Mat &img) {
        cv::Mat hsv, h;
        cv::cvtColor(img, hsv, cv::COLOR_BGR2HSV);
        const int channels[] = {0, 1};
        const int sizes[] = {16, 16};
        const float hr[] = {0, 180}, sr[] = {0, 256};
        const float *ranges[] = {hr, sr};
        cv::calcHist(&hsv, 1, channels, cv::Mat(), h, 2, sizes, ranges);
        cv::normalize(h, h, 1, 0, cv::NORM_L1);
        return h;
    };
    return cv::compareHist(hist(a), hist(b), cv::HISTCMP_BHATTACHARYYA);
}

cv::Mat appearance(const cv::Mat &bgr, const cv::Rect2d &box)
{
    const GuardedBox g = BoxGuard::check(box, bgr.size(), 2.0);
    if (!g.ok())
        return {};
    cv::Mat hsv, h;
    cv::cvtColor(bgr(g.pixels), hsv, cv::COLOR_BGR2HSV);
    const int channels[] = {0, 1};
    const int sizes[] = {18, 16};
    const float hr[] = {0, 180}, sr[] = {0, 256};
    const float *ranges[] = {hr, sr};
    cv::calcHist(&hsv, 1, channels, cv::Mat(), h, 2, sizes, ranges);
    cv::normalize(h, h, 1, 0, cv::NORM_L1);
    return h;
}

double similarity(const cv::Mat &a, const cv::Mat &b)
{
    if (a.empty() || b.empty())
        return 0.0;
    return 1.0 - cv::compareHist(a, b, cv::HISTCMP_BHATTACHARYYA);
}

namespace {

using Clock = std::chrono::steady_clock;

void sortBoxes(Track &t)
{
    std::sort(t.boxes.begin(), t.boxes.end(), [](const TrackBox &a, const TrackBox &b) {
        return a.frame != b.frame ? a.frame < b.frame : a.source < b.source; // teacher first
    });
    t.boxes.erase(
        std::unique(t.boxes.begin(), t.boxes.end(),
                    [](const TrackBox &a, const TrackBox &b) { return a.frame == b.frame; }),
        t.boxes.end());
}

/** A drifting tracker was already sliding before the check caught it: drop its last boxes. */
void dropTail(Track &t, int count)
{
    for (int i = 0; i < count && t.boxes.size() > 1 && t.boxes.back().source == BoxSource::Tracker;
         ++i)
        t.boxes.pop_back();
}

/** One labelling pass over a source: the state between frames and the steps of a frame. */
class LabelRun
{
public:
    LabelRun(Teacher &teacher, const LabelOptions &o, const FrameSource &source)
        : m_teacher(teacher), m_o(o), m_k(o.trackerScale(source.frameSize().width))
    {
        result.source = source.description();
        result.teacher = teacher.name() +
                         (teacher.verifier ? "?verify=" + teacher.verifier->name() : std::string());
        result.options = o;
        result.frame_size = source.frameSize();
        result.source_fps = source.fps();
        result.announced_frames = source.frameCount();
        result.stats.min_box_px = BoxGuard::kTrackerMinSide_px / m_k;
    }

    void frame(const Frame &frame);
    /** A copy of the labels as they stand, tracks judged, marked as a run still going (what a
     *  killed process leaves says so); `elapsed_s` is the run's time so far. */
    LabelResult checkpoint(double elapsed_s) const;
    /** Judges the tracks and sets the stats: the run's result. */
    void finish(double elapsed_s);

    LabelResult result;

private:
    bool sceneCut(const Frame &frame);
    void forward(const Frame &view);
    void teach(const Frame &frame, const Frame &view);
    void startTrack(const Detection &hit, const Frame &view, std::vector<TrackFollower> &started);
    /** Follows a new object back through the frames in memory, adding to `t`; the track it
     *  turned out to be (met where that one ended), or -1. */
    int followBack(Track &t, const Detection &hit, const Frame &view);
    void recordFailure(Track &t, int frame, bool backward, const std::string &why);
    void judge(std::vector<Track> &tracks) const;

    Teacher &m_teacher;
    const LabelOptions m_o;
    const double m_k;         // the trackers' image scale
    std::deque<Frame> m_ring; // recent frames at the trackers' scale
    std::vector<TrackFollower> m_active;
    std::vector<int> m_verifiedHits; // by track: teacher boxes the teacher's verifier found too
    cv::Mat m_previous;
    double m_usualChange = 0.0;
};

bool LabelRun::sceneCut(const Frame &frame)
{
    // 160 px wide; the height follows, within [1, 320] (a frame of a pixel's height or a tall
    // thin one would otherwise give an empty image or a huge one).
    cv::Mat small;
    const int rows = 160 * frame.image.rows / std::max(frame.image.cols, 1);
    cv::resize(frame.image, small, cv::Size(160, std::clamp(rows, 1, 320)));
    // A cut: a jump well above the threshold and above what the last frames changed by
    // (camera motion and people crossing change the histogram steadily, a cut at once).
    const double change = m_previous.empty() ? 0.0 : sceneChange(m_previous, small);
    const bool cut = change > m_o.cut_threshold && change > 4.0 * m_usualChange;
    m_usualChange = 0.8 * m_usualChange + 0.2 * change;
    m_previous = small;
    return cut;
}

void LabelRun::recordFailure(Track &t, int frame, bool backward, const std::string &why)
{
    ++result.stats.tracker_failures;
    if (!t.failure)
        t.failure = TrackFailure{frame, backward, "tracker " + m_o.tracker + ": " + why};
}

void LabelRun::forward(const Frame &view)
{
    // Every running tracker takes the new frame and is judged.
    for (auto it = m_active.begin(); it != m_active.end();) {
        float confidence = 0.0f;
        Track &t = result.tracks[std::size_t(it->track)];
        const auto verdict = it->step(view.image, view.index, m_o, &confidence);
        if (verdict == TrackFollower::Verdict::Ok) {
            t.boxes.push_back({view.index, it->box(), BoxSource::Tracker, confidence});
            ++it;
            continue;
        }
        if (verdict == TrackFollower::Verdict::Drift) {
            ++result.stats.drift_stops;
            dropTail(t, 3);
        } else if (verdict == TrackFollower::Verdict::Failed) {
            recordFailure(t, view.index, false, it->error());
        }
        it = m_active.erase(it);
    }
}

int LabelRun::followBack(Track &t, const Detection &hit, const Frame &view)
{
    TrackFollower back;
    if (!back.start(m_o.tracker, view.image, hit.box, view.index, m_k)) {
        recordFailure(t, view.index, true, back.error());
        return -1;
    }
    for (auto rit = m_ring.rbegin(); rit != m_ring.rend(); ++rit) {
        float confidence = 0.0f;
        const auto verdict = back.step(rit->image, rit->index, m_o, &confidence);
        if (verdict != TrackFollower::Verdict::Ok) {
            if (verdict == TrackFollower::Verdict::Drift) {
                ++result.stats.drift_stops;
                dropTail(t, 3); // backwards, the tail is the earliest frames
            } else if (verdict == TrackFollower::Verdict::Failed) {
                recordFailure(t, rit->index, true, back.error());
            }
            return -1;
        }
        // Met another track. Where that track ends right here, it lost this object earlier:
        // one object, one track. Where it goes on, two objects cross: whose is whose is
        // unclear, so the backward run stops.
        for (const Track &other : result.tracks) {
            const TrackBox *b = other.at(rit->index);
            if (!b || iou(b->box, back.box()) < m_o.match_iou)
                continue;
            return other.boxes.back().frame <= rit->index + 2 ? other.id : -1;
        }
        t.boxes.push_back({rit->index, back.box(), BoxSource::Tracker, confidence});
    }
    return -1;
}

void LabelRun::startTrack(const Detection &hit, const Frame &view,
                          std::vector<TrackFollower> &started)
{
    Track t;
    t.id = int(result.tracks.size());
    t.boxes.push_back({view.index, hit.box, BoxSource::Teacher, hit.score});
    const int mergeInto = m_ring.empty() ? -1 : followBack(t, hit, view);
    TrackFollower forward;
    const bool following = forward.start(m_o.tracker, view.image, hit.box, view.index, m_k);
    if (mergeInto >= 0 && std::none_of(m_active.begin(), m_active.end(),
                                       [&](const auto &a) { return a.track == mergeInto; })) {
        Track &target = result.tracks[std::size_t(mergeInto)];
        for (const TrackBox &b : t.boxes)
            if (!target.at(b.frame))
                target.boxes.push_back(b);
        sortBoxes(target);
        if (t.failure && !target.failure)
            target.failure = t.failure;
        forward.track = mergeInto;
        m_verifiedHits[std::size_t(mergeInto)] += hit.verified;
    } else {
        sortBoxes(t);
        forward.track = t.id;
        m_verifiedHits.push_back(hit.verified); // first: judge() indexes it by track
        result.tracks.push_back(std::move(t));
    }
    if (following)
        started.push_back(std::move(forward));
    else
        recordFailure(result.tracks[std::size_t(forward.track)], view.index, false,
                      forward.error());
}

void LabelRun::teach(const Frame &frame, const Frame &view)
{
    std::vector<Detection> raw = m_teacher.detect(frame.image);
    m_teacher.markVerified(frame.image, raw);
    ++result.stats.teacher_runs;
    result.stats.teacher_detections += int(raw.size());
    // Only what every tracker can follow becomes a label: the rest is counted, by reason.
    // Checked in the frame and again in the trackers' image, whose size was rounded.
    std::vector<Detection> hits;
    for (Detection &d : raw) {
        GuardedBox g = BoxGuard::check(d.box, frame.image.size(), result.stats.min_box_px);
        if (g.ok()) {
            const cv::Rect2d &b = g.box;
            const GuardedBox scaled =
                BoxGuard::check({b.x * m_k, b.y * m_k, b.width * m_k, b.height * m_k},
                                view.image.size(), BoxGuard::kTrackerMinSide_px);
            if (!scaled.ok())
                g.fault = scaled.fault;
        }
        if (!g.ok()) {
            result.stats.dropped.count(*g.fault);
            continue;
        }
        d.box = g.box;
        hits.push_back(d);
    }
    std::sort(hits.begin(), hits.end(),
              [](const Detection &a, const Detection &b) { return a.score > b.score; });
    std::vector<bool> confirmed(m_active.size(), false);
    std::vector<bool> ended(m_active.size(), false);
    std::vector<TrackFollower> started;
    for (const Detection &hit : hits) {
        // Continues a running track?
        int best = -1;
        double bestIou = m_o.match_iou;
        for (std::size_t i = 0; i < m_active.size(); ++i) {
            const double v = iou(m_active[i].box(), hit.box);
            if (!confirmed[i] && v >= bestIou) {
                best = int(i);
                bestIou = v;
            }
        }
        if (best < 0) {
            startTrack(hit, view, started);
            continue;
        }
        TrackFollower &fl = m_active[std::size_t(best)];
        Track &t = result.tracks[std::size_t(fl.track)];
        if (!t.boxes.empty() && t.boxes.back().frame == view.index)
            t.boxes.back() = {view.index, hit.box, BoxSource::Teacher, hit.score};
        else
            t.boxes.push_back({view.index, hit.box, BoxSource::Teacher, hit.score});
        m_verifiedHits[std::size_t(t.id)] += hit.verified;
        confirmed[std::size_t(best)] = true;
        if (!fl.start(m_o.tracker, view.image, hit.box, view.index, m_k)) {
            recordFailure(t, view.index, false, fl.error());
            ended[std::size_t(best)] = true;
        }
    }
    for (std::size_t i = m_active.size(); i-- > 0;)
        if (ended[i])
            m_active.erase(m_active.begin() + std::ptrdiff_t(i));
    for (auto &s : started)
        m_active.push_back(std::move(s));
}

void LabelRun::frame(const Frame &frame)
{
    if (sceneCut(frame)) {
        result.cuts.push_back(frame.index); // nothing is followed across a cut, either way
        m_active.clear();
        m_ring.clear();
    }
    Frame view; // this frame as the trackers see it
    view.index = frame.index;
    if (m_k < 1.0) // never a side of 0 px: a 1 px tall frame at half size would have one
        cv::resize(frame.image, view.image,
                   cv::Size(std::max(1, cvRound(frame.image.cols * m_k)),
                            std::max(1, cvRound(frame.image.rows * m_k))),
                   0, 0, cv::INTER_AREA);
    else
        view.image = frame.image;
    forward(view);
    if (frame.index % m_o.every == 0)
        teach(frame, view);
    else
        m_teacher.observe(frame.image); // a stateful teacher (motion) sees every frame
    m_ring.push_back(view);
    while (int(m_ring.size()) > m_o.backward_frames)
        m_ring.pop_front();
    ++result.stats.frames; // done: a frame that fails half-way is not counted as labelled
}

void LabelRun::judge(std::vector<Track> &tracks) const
{
    for (Track &t : tracks) {
        sortBoxes(t);
        if (int(t.boxes.size()) < m_o.min_track_boxes) {
            t.state = Track::State::Rejected;
            t.note = "too short (" + std::to_string(t.boxes.size()) + " boxes)";
            continue;
        }
        // The teacher ran on every `every`-th frame of the track's span: how often did it agree?
        const int first = t.boxes.front().frame, last = t.boxes.back().frame;
        const int runs = last / m_o.every - (first + m_o.every - 1) / m_o.every + 1;
        const int hits = t.teacherBoxes();
        if (runs > 0 && hits < m_o.min_teacher_share * runs) {
            t.state = Track::State::Rejected;
            t.note = "the teacher confirmed it in " + std::to_string(hits) + " of its " +
                     std::to_string(runs) + " runs over frames " + std::to_string(first) + "-" +
                     std::to_string(last);
        } else if (m_teacher.verifier && m_verifiedHits[std::size_t(t.id)] == 0) {
            t.state = Track::State::Rejected;
            t.note = "the verifier " + m_teacher.verifier->name() + " found none of its " +
                     std::to_string(hits) + " teacher boxes";
        }
    }
}

LabelResult LabelRun::checkpoint(double elapsed_s) const
{
    LabelResult r = result;
    judge(r.tracks);
    r.stats.seconds = elapsed_s;
    r.updateStats();
    r.stopped = "the run was still going after frame " + std::to_string(r.stats.frames - 1) +
                " (saved while labelling; the run's end writes over it)";
    return r;
}

void LabelRun::finish(double elapsed_s)
{
    judge(result.tracks);
    result.stats.seconds = elapsed_s;
    result.updateStats();
}

} // namespace

LabelResult Labeler::run(FrameSource &source, Teacher &teacher, const LabelOptions &o,
                         const Progress &progress, const std::atomic<bool> *stop,
                         const Checkpoint &checkpoint)
{
    if (o.every < 1 || o.backward_frames < 0 || o.max_tracker_run < 1 ||
        !(o.min_teacher_share >= 0.0 && o.min_teacher_share <= 1.0) || !(o.track_scale > 0.0) ||
        !std::isfinite(o.track_scale) || !(o.checkpoint_every_s >= 0.0))
        throw core::SpecError("labelling: every must be >= 1, backward frames >= 0, tracker run "
                              ">= 1, the teacher's share from 0 to 1, the trackers' scale above "
                              "0, the checkpoint interval 0 or more");
    (void)createTracker(o.tracker); // an unknown tracker is refused before any work
    LabelRun run(teacher, o, source);
    const int total = o.max_frames > 0 && source.frameCount() > 0
                          ? std::min(o.max_frames, source.frameCount())
                          : (o.max_frames > 0 ? o.max_frames : source.frameCount());
    const auto start = Clock::now();
    auto lastReport = start, lastCheckpoint = start;
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
    // Nothing labelled so far is lost to an error: the caller saves these labels and says why.
    try {
        Frame frame;
        for (;;) {
            const int next = run.result.stats.frames; // for the reason, if reading fails
            try {
                if (!source.read(frame))
                    break;
            } catch (const std::exception &e) {
                run.result.stopped = "frame " + std::to_string(next) + ": " + e.what();
                break;
            }
            if (stop && stop->load()) {
                run.result.cancelled = true;
                break;
            }
            if (o.max_frames > 0 && frame.index >= o.max_frames)
                break;
            try {
                run.frame(frame);
            } catch (const std::exception &e) {
                run.result.stopped = "frame " + std::to_string(frame.index) + ": " + e.what();
                break;
            }
            const auto now = Clock::now();
            if (progress && now - lastReport > std::chrono::milliseconds(250)) {
                lastReport = now;
                progress(frame.index + 1, total, run.result.stats);
            }
            if (checkpoint && std::chrono::duration<double>(now - lastCheckpoint).count() >=
                                  o.checkpoint_every_s) {
                try {
                    checkpoint(run.checkpoint(elapsed()));
                } catch (const std::exception &e) {
                    run.result.stopped =
                        "saving after frame " + std::to_string(frame.index) + ": " + e.what();
                    break;
                }
                lastCheckpoint = Clock::now();
            }
        }
    } catch (const std::exception &e) { // the progress report's own failure
        if (run.result.stopped.empty())
            run.result.stopped =
                "after frame " + std::to_string(run.result.stats.frames - 1) + ": " + e.what();
    }
    run.finish(elapsed());
    if (progress)
        progress(run.result.stats.frames, total, run.result.stats);
    return std::move(run.result);
}

} // namespace edgetrain::vision

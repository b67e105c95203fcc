#include "labeling.h"

#include "core/error.h"
#include "tracking.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>

namespace edgetrain::vision {

int Track::teacherBoxes() const
{
    return int(std::count_if(boxes.begin(), boxes.end(),
                             [](const TrackBox &b) { return b.source == BoxSource::Teacher; }));
}

int Track::trackerBoxes() const
{
    return int(boxes.size()) - teacherBoxes();
}

const TrackBox *Track::at(int frame) const
{
    const auto it = std::lower_bound(boxes.begin(), boxes.end(), frame,
                                     [](const TrackBox &b, int f) { return b.frame < f; });
    return it != boxes.end() && it->frame == frame ? &*it : nullptr;
}

void Track::trim(int first, int last)
{
    boxes.erase(
        std::remove_if(boxes.begin(), boxes.end(),
                       [&](const TrackBox &b) { return b.frame < first || b.frame > last; }),
        boxes.end());
}

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
    const cv::Rect r = cv::Rect(box) & cv::Rect(0, 0, bgr.cols, bgr.rows);
    if (r.area() < 4)
        return {};
    cv::Mat hsv, h;
    cv::cvtColor(bgr(r), hsv, cv::COLOR_BGR2HSV);
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

/** One tracker run: follows a box from an anchor frame, judging every step itself. */
struct Follower
{
    cv::Ptr<cv::Tracker> tracker;
    cv::Mat anchor; // appearance at the last teacher confirmation
    double anchorArea = 0.0;
    int lastTeacher = 0;
    cv::Rect2d box;
    int track = -1;

    // The tracker's image is the frame resized by `scale`; boxes are in frame pixels.
    double scale = 1.0;
    std::deque<cv::Point2d> centres; // of the last boxes, newest last

    static cv::Rect2d scaled(const cv::Rect2d &b, double k)
    {
        return {b.x * k, b.y * k, b.width * k, b.height * k};
    }

    void reset(const std::string &kind, const cv::Mat &image, const cv::Rect2d &b, int frame,
               double k)
    {
        scale = k;
        tracker = createTracker(kind);
        const cv::Rect r = cv::Rect(scaled(b, k)) & cv::Rect(0, 0, image.cols, image.rows);
        tracker->init(image, r);
        anchor = appearance(image, scaled(b, k));
        anchorArea = b.area();
        lastTeacher = frame;
        box = b;
        centres.push_back((b.tl() + b.br()) * 0.5);
    }

    /** A box that moved briskly and then freezes on the spot has slid onto the background
     *  (vtest.avi's lamp post): an object that stops does so gradually, a tracker at once. */
    bool froze() const
    {
        constexpr std::size_t kWindow = 12;
        if (centres.size() < 2 * kWindow)
            return false;
        const auto n = centres.size();
        const double before = cv::norm(centres[n - kWindow - 1] - centres[n - 2 * kWindow]);
        const double after = cv::norm(centres[n - 1] - centres[n - kWindow]);
        return before > 1.0 * double(kWindow) && after < 0.1 * before;
    }

    enum class Verdict { Ok, Lost, Left, Drift, Stale };
    /** Advances to `image` (frame `frame`); the confidence of the new box on success. */
    Verdict step(const cv::Mat &image, int frame, const LabelOptions &o, float *confidence)
    {
        cv::Rect r;
        bool ok = false;
        try {
            ok = tracker->update(image, r);
        } catch (const cv::Exception &) {
            ok = false;
        }
        if (!ok || r.area() <= 0)
            return Verdict::Lost;
        const cv::Rect2d inImage(r);
        if ((inImage & cv::Rect2d(0, 0, image.cols, image.rows)).area() < 0.6 * inImage.area())
            return Verdict::Left;
        const cv::Rect2d b = scaled(inImage, 1.0 / scale);
        if (std::abs(frame - lastTeacher) > o.max_tracker_run)
            return Verdict::Stale;
        const double ratio = b.area() / std::max(anchorArea, 1.0);
        if (ratio > o.max_scale_change || ratio < 1.0 / o.max_scale_change)
            return Verdict::Drift;
        const double sim = similarity(appearance(image, inImage), anchor);
        if (sim < o.min_appearance)
            return Verdict::Drift;
        box = b;
        centres.push_back((b.tl() + b.br()) * 0.5);
        while (centres.size() > 24)
            centres.pop_front();
        if (froze())
            return Verdict::Drift;
        *confidence = float(sim * std::pow(0.99, std::abs(frame - lastTeacher)));
        return Verdict::Ok;
    }
};

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
    for (int i = 0; i < count && !t.boxes.empty() && t.boxes.back().source == BoxSource::Tracker;
         ++i)
        t.boxes.pop_back();
}

} // namespace

LabelResult Labeler::run(FrameSource &source, Teacher &teacher, const LabelOptions &o,
                         const Progress &progress, const std::atomic<bool> *stop)
{
    if (o.every < 1 || o.backward_frames < 0 || o.max_tracker_run < 1 ||
        !(o.min_teacher_share >= 0.0 && o.min_teacher_share <= 1.0))
        throw core::SpecError("labelling: every must be >= 1, backward frames >= 0, tracker run "
                              ">= 1, the teacher's share from 0 to 1");
    (void)createTracker(o.tracker); // an unknown tracker is refused before any work
    LabelResult result;
    result.source = source.description();
    result.teacher =
        teacher.name() + (teacher.verifier ? "?verify=" + teacher.verifier->name() : std::string());
    result.options = o;
    result.frame_size = source.frameSize();
    result.source_fps = source.fps();
    const int total = o.max_frames > 0 && source.frameCount() > 0
                          ? std::min(o.max_frames, source.frameCount())
                          : (o.max_frames > 0 ? o.max_frames : source.frameCount());
    std::deque<Frame> ring; // recent frames at the trackers' scale
    const double k = std::clamp(o.track_scale, 0.1, 1.0);
    std::vector<Follower> active;
    std::vector<Track> &tracks = result.tracks;
    std::vector<int> verifiedHits; // by track: teacher boxes the teacher's verifier found too
    cv::Mat previous;
    double usualChange = 0.0;
    Frame frame;
    const auto start = Clock::now();
    auto lastReport = start;
    while (source.read(frame)) {
        if (stop && stop->load()) {
            result.cancelled = true;
            break;
        }
        if (o.max_frames > 0 && frame.index >= o.max_frames)
            break;
        const int f = frame.index;
        ++result.stats.frames;
        cv::Mat small;
        cv::resize(
            frame.image, small,
            cv::Size(160, std::max(1, 160 * frame.image.rows / std::max(frame.image.cols, 1))));
        // A cut: a jump well above the threshold and above what the last frames changed by
        // (camera motion and people crossing change the histogram steadily, a cut at once).
        const double change = previous.empty() ? 0.0 : sceneChange(previous, small);
        const bool cut = change > o.cut_threshold && change > 4.0 * usualChange;
        usualChange = 0.8 * usualChange + 0.2 * change;
        if (cut) {
            result.cuts.push_back(f); // nothing is followed across a cut, in either direction
            active.clear();
            ring.clear();
        }
        previous = small;
        Frame view; // this frame as the trackers see it
        view.index = f;
        if (k < 1.0)
            cv::resize(frame.image, view.image, cv::Size(), k, k, cv::INTER_AREA);
        else
            view.image = frame.image;

        // Forward: every running tracker takes the new frame and is judged.
        for (auto it = active.begin(); it != active.end();) {
            float confidence = 0.0f;
            const auto verdict = it->step(view.image, f, o, &confidence);
            if (verdict != Follower::Verdict::Ok) {
                if (verdict == Follower::Verdict::Drift) {
                    ++result.stats.drift_stops;
                    dropTail(tracks[std::size_t(it->track)], 3);
                }
                it = active.erase(it);
                continue;
            }
            tracks[std::size_t(it->track)].boxes.push_back(
                {f, it->box, BoxSource::Tracker, confidence});
            ++it;
        }

        if (f % o.every == 0) {
            std::vector<Detection> hits = teacher.detect(frame.image);
            teacher.markVerified(frame.image, hits);
            ++result.stats.teacher_runs;
            result.stats.teacher_detections += int(hits.size());
            std::sort(hits.begin(), hits.end(),
                      [](const Detection &a, const Detection &b) { return a.score > b.score; });
            std::vector<bool> confirmed(active.size(), false);
            std::vector<Follower> started;
            for (const Detection &hit : hits) {
                // Continues a running track?
                int best = -1;
                double bestIou = o.match_iou;
                for (std::size_t i = 0; i < active.size(); ++i) {
                    const double v = iou(active[i].box, hit.box);
                    if (!confirmed[i] && v >= bestIou) {
                        best = int(i);
                        bestIou = v;
                    }
                }
                if (best >= 0) {
                    Follower &fl = active[std::size_t(best)];
                    Track &t = tracks[std::size_t(fl.track)];
                    if (!t.boxes.empty() && t.boxes.back().frame == f)
                        t.boxes.back() = {f, hit.box, BoxSource::Teacher, hit.score};
                    else
                        t.boxes.push_back({f, hit.box, BoxSource::Teacher, hit.score});
                    fl.reset(o.tracker, view.image, hit.box, f, k);
                    fl.track = t.id;
                    verifiedHits[std::size_t(t.id)] += hit.verified;
                    confirmed[std::size_t(best)] = true;
                    continue;
                }
                // A new object: follow it back through the frames in memory first.
                Track t;
                t.id = int(tracks.size());
                t.boxes.push_back({f, hit.box, BoxSource::Teacher, hit.score});
                int mergeInto = -1;
                if (!ring.empty()) {
                    Follower back;
                    back.reset(o.tracker, view.image, hit.box, f, k);
                    for (auto rit = ring.rbegin(); rit != ring.rend(); ++rit) {
                        float confidence = 0.0f;
                        const auto verdict = back.step(rit->image, rit->index, o, &confidence);
                        if (verdict != Follower::Verdict::Ok) {
                            if (verdict == Follower::Verdict::Drift) {
                                ++result.stats.drift_stops;
                                // backwards, the tail is at the front
                                for (int dropped = 0; dropped < 3 && t.boxes.size() > 1 &&
                                                      t.boxes.back().source == BoxSource::Tracker;
                                     ++dropped)
                                    t.boxes.pop_back();
                            }
                            break;
                        }
                        // Met another track. Where that track ends right here, it lost this
                        // object earlier: one object, one track. Where it goes on, two objects
                        // cross: whose is whose is unclear, so the backward run stops.
                        bool crossing = false;
                        for (const Track &other : tracks) {
                            const TrackBox *b = other.at(rit->index);
                            if (!b || iou(b->box, back.box) < o.match_iou)
                                continue;
                            if (other.boxes.back().frame <= rit->index + 2)
                                mergeInto = other.id;
                            else
                                crossing = true;
                            break;
                        }
                        if (mergeInto >= 0 || crossing)
                            break;
                        t.boxes.push_back({rit->index, back.box, BoxSource::Tracker, confidence});
                    }
                }
                Follower forward;
                forward.reset(o.tracker, view.image, hit.box, f, k);
                if (mergeInto >= 0 &&
                    std::none_of(active.begin(), active.end(),
                                 [&](const Follower &a) { return a.track == mergeInto; })) {
                    Track &target = tracks[std::size_t(mergeInto)];
                    for (const TrackBox &b : t.boxes)
                        if (!target.at(b.frame))
                            target.boxes.push_back(b);
                    sortBoxes(target);
                    forward.track = mergeInto;
                    verifiedHits[std::size_t(mergeInto)] += hit.verified;
                } else {
                    sortBoxes(t);
                    forward.track = t.id;
                    tracks.push_back(std::move(t));
                    verifiedHits.push_back(hit.verified);
                }
                started.push_back(std::move(forward));
            }
            for (auto &s : started)
                active.push_back(std::move(s));
        } else {
            teacher.observe(frame.image); // a stateful teacher (motion) sees every frame
        }
        ring.push_back(view);
        while (int(ring.size()) > o.backward_frames)
            ring.pop_front();
        if (progress && Clock::now() - lastReport > std::chrono::milliseconds(250)) {
            lastReport = Clock::now();
            progress(f + 1, total, result.stats);
        }
    }
    for (Track &t : tracks) {
        sortBoxes(t);
        if (int(t.boxes.size()) < o.min_track_boxes) {
            t.state = Track::State::Rejected;
            t.note = "too short (" + std::to_string(t.boxes.size()) + " boxes)";
            continue;
        }
        // The teacher ran on every `every`-th frame of the track's span: how often did it agree?
        const int first = t.boxes.front().frame, last = t.boxes.back().frame;
        const int runs = last / o.every - (first + o.every - 1) / o.every + 1;
        const int hits = t.teacherBoxes();
        if (runs > 0 && hits < o.min_teacher_share * runs) {
            t.state = Track::State::Rejected;
            t.note = "the teacher confirmed it in " + std::to_string(hits) + " of its " +
                     std::to_string(runs) + " runs over frames " + std::to_string(first) + "-" +
                     std::to_string(last);
        } else if (teacher.verifier && verifiedHits[std::size_t(t.id)] == 0) {
            t.state = Track::State::Rejected;
            t.note = "the verifier " + teacher.verifier->name() + " found none of its " +
                     std::to_string(hits) + " teacher boxes";
        }
    }
    result.stats.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    result.updateStats();
    if (progress)
        progress(result.stats.frames, total, result.stats);
    return result;
}

const char *boxSourceName(BoxSource source)
{
    switch (source) {
    case BoxSource::Teacher:
        return "teacher";
    case BoxSource::Tracker:
        return "tracker";
    case BoxSource::Student:
        return "student";
    }
    return "";
}

void LabelResult::updateStats()
{
    stats.teacher_boxes = stats.tracker_only_boxes = stats.tracks = stats.rejected_tracks = 0;
    for (const Track &t : tracks) {
        if (t.state == Track::State::Rejected) {
            ++stats.rejected_tracks;
            continue;
        }
        ++stats.tracks;
        stats.teacher_boxes += t.teacherBoxes();
        stats.tracker_only_boxes += t.trackerBoxes();
    }
    stats.fps = stats.seconds > 0 ? stats.frames / stats.seconds : 0.0;
}

core::Json LabelResult::toJson() const
{
    core::Json j;
    j.set("format", "edgetrain-labels-1").set("source", source).set("teacher", teacher);
    j.set("tracker", options.tracker).set("every", options.every);
    j.set("max_frames", options.max_frames); // the frames the labels cover: the rest is held out
    j.set("frame_width", frame_size.width)
        .set("frame_height", frame_size.height)
        .set("fps", source_fps);
    j.set("frames", stats.frames).set("seconds", stats.seconds).set("cancelled", cancelled);
    j.set("round", round);
    core::Json c = core::Json::array();
    for (int x : cuts)
        c.push(x);
    j.set("cuts", std::move(c));
    core::Json list = core::Json::array();
    for (const Track &t : tracks) {
        core::Json jt;
        jt.set("id", t.id)
            .set("state", t.state == Track::State::Accepted ? "accepted" : "rejected");
        if (!t.note.empty())
            jt.set("note", t.note);
        core::Json boxes = core::Json::array();
        for (const TrackBox &b : t.boxes) {
            core::Json row = core::Json::array();
            row.push(b.frame).push(b.box.x).push(b.box.y).push(b.box.width).push(b.box.height);
            row.push(boxSourceName(b.source)).push(double(b.confidence));
            boxes.push(std::move(row));
        }
        jt.set("boxes", std::move(boxes));
        list.push(std::move(jt));
    }
    j.set("tracks", std::move(list));
    return j;
}

LabelResult LabelResult::fromJson(const core::Json &j, const std::string &where)
{
    auto fail = [&](const std::string &what) { throw core::FormatError(where + ": " + what); };
    const core::Json *format = j.find("format");
    if (!format || format->toString() != "edgetrain-labels-1")
        fail("not an EdgeTrain labels file (format edgetrain-labels-1)");
    LabelResult r;
    auto text = [&](const char *k) {
        const core::Json *v = j.find(k);
        return v && v->isString() ? v->toString() : std::string();
    };
    auto number = [&](const core::Json &o, const char *k) {
        const core::Json *v = o.find(k);
        if (!v || !v->isNumber())
            fail(std::string("field '") + k + "' missing or not a number");
        return v->toDouble();
    };
    // A whole number that fits an int (frame numbers, sizes): anything else is a bad file, not a
    // conversion with undefined behaviour.
    auto whole = [&](double v, const std::string &what) {
        if (!(v >= -2147483648.0 && v <= 2147483647.0) || v != std::floor(v))
            fail(what + " is not a whole number in range");
        return int(v);
    };
    auto integer = [&](const core::Json &o, const char *k) {
        return whole(number(o, k), std::string("field '") + k + "'");
    };
    r.source = text("source");
    r.teacher = text("teacher");
    r.options.tracker = text("tracker");
    r.options.every = integer(j, "every");
    if (j.find("max_frames")) // older files: the whole source
        r.options.max_frames = integer(j, "max_frames");
    r.frame_size = cv::Size(integer(j, "frame_width"), integer(j, "frame_height"));
    r.source_fps = number(j, "fps");
    r.stats.frames = integer(j, "frames");
    r.stats.seconds = number(j, "seconds");
    if (j.find("round")) // older files: the labeller's
        r.round = integer(j, "round");
    if (r.round < 1)
        fail("field 'round' must be 1 or more");
    if (const core::Json *c = j.find("cuts"); c && c->isArray())
        for (const core::Json &x : c->toArray())
            r.cuts.push_back(whole(x.toDouble(), "a scene cut"));
    const core::Json *list = j.find("tracks");
    if (!list || !list->isArray())
        fail("no 'tracks' array");
    for (const core::Json &jt : list->toArray()) {
        Track t;
        t.id = integer(jt, "id");
        const core::Json *state = jt.find("state");
        t.state = state && state->toString() == "rejected" ? Track::State::Rejected
                                                           : Track::State::Accepted;
        if (const core::Json *note = jt.find("note"))
            t.note = note->toString();
        const core::Json *boxes = jt.find("boxes");
        if (!boxes || !boxes->isArray())
            fail("track " + std::to_string(t.id) + " has no 'boxes' array");
        const auto &rows = boxes->toArray();
        for (std::size_t k = 0; k < rows.size(); ++k) {
            if (!rows[k].isArray() || rows[k].toArray().size() != 7)
                fail("track " + std::to_string(t.id) + ", box " + std::to_string(k) +
                     ": expected [frame, x, y, w, h, source, confidence]");
            const auto &row = rows[k].toArray();
            TrackBox b;
            b.frame = whole(row[0].toDouble(), "track " + std::to_string(t.id) + ", box " +
                                                   std::to_string(k) + ": the frame");
            b.box = cv::Rect2d(row[1].toDouble(), row[2].toDouble(), row[3].toDouble(),
                               row[4].toDouble());
            const std::string source = row[5].isString() ? row[5].toString() : std::string();
            if (source == "teacher")
                b.source = BoxSource::Teacher;
            else if (source == "tracker")
                b.source = BoxSource::Tracker;
            else if (source == "student")
                b.source = BoxSource::Student;
            else
                fail("track " + std::to_string(t.id) + ", box " + std::to_string(k) +
                     ": source must be teacher, tracker or student");
            b.confidence = float(row[6].toDouble());
            if (b.box.width <= 0 || b.box.height <= 0)
                fail("track " + std::to_string(t.id) + ", box " + std::to_string(k) +
                     " has no area");
            t.boxes.push_back(b);
        }
        r.tracks.push_back(std::move(t));
    }
    r.updateStats();
    return r;
}

void LabelResult::save(const std::string &dir) const
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw core::IoError("cannot create the session folder '" + dir + "': " + ec.message());
    const std::string path = dir + "/labels.json";
    const std::string tmp = path + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << toJson().dump(1) << '\n';
        if (!out)
            throw core::IoError("cannot write '" + tmp + "'");
    }
    std::filesystem::rename(tmp, path, ec);
    if (ec)
        throw core::IoError("cannot replace '" + path + "': " + ec.message());
}

LabelResult LabelResult::load(const std::string &dir)
{
    const std::string path = dir + "/labels.json";
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw core::IoError("cannot read '" + path + "' (run `edgetrain-cli label` first)");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return fromJson(core::Json::parse(text, path), path);
}

} // namespace edgetrain::vision

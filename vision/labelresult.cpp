#include "labelresult.h"

#include "core/error.h"
#include "core/fileio.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

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

double LabelOptions::trackerScale(int frameWidth) const
{
    const double wanted = std::clamp(track_scale, 0.1, 1.0);
    return frameWidth > 0 ? std::max(wanted, std::min(1.0, 320.0 / frameWidth)) : wanted;
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

bool LabelResult::endedEarly() const
{
    if (cancelled || !stopped.empty() || announced_frames <= 0)
        return false;
    const int wanted =
        options.max_frames > 0 ? std::min(options.max_frames, announced_frames) : announced_frames;
    return stats.frames < wanted;
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
    j.set("announced_frames", announced_frames);
    if (!stopped.empty())
        j.set("stopped", stopped);
    j.set("round", round);
    core::Json dropped;
    dropped.set("not_finite", stats.dropped.not_finite)
        .set("outside", stats.dropped.outside)
        .set("too_small", stats.dropped.too_small)
        .set("min_side_px", stats.min_box_px);
    j.set("dropped_boxes", std::move(dropped)).set("tracker_failures", stats.tracker_failures);
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
        if (t.failure) {
            core::Json f;
            f.set("frame", t.failure->frame)
                .set("backward", t.failure->backward)
                .set("reason", t.failure->reason);
            jt.set("failure", std::move(f));
        }
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

namespace {

/** Reads the fields of one labels file, each failure naming the file and the field. */
struct LabelReader
{
    const std::string &where;

    [[noreturn]] void fail(const std::string &what) const
    {
        throw core::FormatError(where + ": " + what);
    }
    double number(const core::Json &o, const char *k) const
    {
        const core::Json *v = o.find(k);
        if (!v || !v->isNumber())
            fail(std::string("field '") + k + "' missing or not a number");
        return v->toDouble();
    }
    // A whole number that fits an int (frame numbers, sizes): anything else is a bad file, not
    // a conversion with undefined behaviour.
    int whole(double v, const std::string &what) const
    {
        if (!(v >= -2147483648.0 && v <= 2147483647.0) || v != std::floor(v))
            fail(what + " is not a whole number in range");
        return int(v);
    }
    int integer(const core::Json &o, const char *k) const
    {
        return whole(number(o, k), std::string("field '") + k + "'");
    }
    std::string text(const core::Json &o, const char *k) const
    {
        const core::Json *v = o.find(k);
        return v && v->isString() ? v->toString() : std::string();
    }
    TrackBox box(const core::Json &row, int track, std::size_t k) const
    {
        const std::string at = "track " + std::to_string(track) + ", box " + std::to_string(k);
        if (!row.isArray() || row.toArray().size() != 7)
            fail(at + ": expected [frame, x, y, w, h, source, confidence]");
        const auto &r = row.toArray();
        for (std::size_t i = 0; i < 5; ++i)
            if (!r[i].isNumber() || !std::isfinite(r[i].toDouble()))
                fail(at + ": the frame and the box must be numbers");
        TrackBox b;
        b.frame = whole(r[0].toDouble(), at + ": the frame");
        b.box = cv::Rect2d(r[1].toDouble(), r[2].toDouble(), r[3].toDouble(), r[4].toDouble());
        const std::string source = r[5].isString() ? r[5].toString() : std::string();
        if (source == "teacher")
            b.source = BoxSource::Teacher;
        else if (source == "tracker")
            b.source = BoxSource::Tracker;
        else if (source == "student")
            b.source = BoxSource::Student;
        else
            fail(at + ": source must be teacher, tracker or student");
        b.confidence = r[6].isNumber() ? float(r[6].toDouble()) : 0.0f;
        if (!(b.box.width > 0 && b.box.height > 0))
            fail(at + " has no area");
        return b;
    }
    Track track(const core::Json &jt) const
    {
        Track t;
        t.id = integer(jt, "id");
        const core::Json *state = jt.find("state");
        t.state = state && state->isString() && state->toString() == "rejected"
                      ? Track::State::Rejected
                      : Track::State::Accepted;
        t.note = text(jt, "note");
        if (const core::Json *f = jt.find("failure"); f && f->isObject()) {
            TrackFailure failure;
            failure.frame = integer(*f, "frame");
            const core::Json *back = f->find("backward");
            failure.backward = back && back->isBool() && back->toBool();
            failure.reason = text(*f, "reason");
            t.failure = failure;
        }
        const core::Json *boxes = jt.find("boxes");
        if (!boxes || !boxes->isArray())
            fail("track " + std::to_string(t.id) + " has no 'boxes' array");
        const auto &rows = boxes->toArray();
        for (std::size_t k = 0; k < rows.size(); ++k)
            t.boxes.push_back(box(rows[k], t.id, k));
        return t;
    }
};

} // namespace

LabelResult LabelResult::fromJson(const core::Json &j, const std::string &where)
{
    const LabelReader read{where};
    const core::Json *format = j.find("format");
    if (!format || !format->isString() || format->toString() != "edgetrain-labels-1")
        read.fail("not an EdgeTrain labels file (format edgetrain-labels-1)");
    LabelResult r;
    r.source = read.text(j, "source");
    r.teacher = read.text(j, "teacher");
    r.options.tracker = read.text(j, "tracker");
    r.options.every = read.integer(j, "every");
    if (j.find("max_frames")) // older files: the whole source
        r.options.max_frames = read.integer(j, "max_frames");
    r.frame_size = cv::Size(read.integer(j, "frame_width"), read.integer(j, "frame_height"));
    r.source_fps = read.number(j, "fps");
    r.stats.frames = read.integer(j, "frames");
    r.stats.seconds = read.number(j, "seconds");
    if (j.find("announced_frames")) // older files: not recorded
        r.announced_frames = read.integer(j, "announced_frames");
    r.stopped = read.text(j, "stopped");
    if (j.find("round")) // older files: the labeller's
        r.round = read.integer(j, "round");
    if (r.round < 1)
        read.fail("field 'round' must be 1 or more");
    if (const core::Json *d = j.find("dropped_boxes"); d && d->isObject()) {
        r.stats.dropped.not_finite = read.integer(*d, "not_finite");
        r.stats.dropped.outside = read.integer(*d, "outside");
        r.stats.dropped.too_small = read.integer(*d, "too_small");
        r.stats.min_box_px = read.number(*d, "min_side_px");
    }
    if (j.find("tracker_failures"))
        r.stats.tracker_failures = read.integer(j, "tracker_failures");
    if (const core::Json *c = j.find("cuts"); c && c->isArray())
        for (const core::Json &x : c->toArray())
            r.cuts.push_back(read.whole(x.isNumber() ? x.toDouble() : 0.5, "a scene cut"));
    const core::Json *list = j.find("tracks");
    if (!list || !list->isArray())
        read.fail("no 'tracks' array");
    for (const core::Json &jt : list->toArray())
        r.tracks.push_back(read.track(jt));
    r.updateStats();
    return r;
}

void LabelResult::save(const std::string &dir) const
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
        throw core::IoError("cannot create the session folder '" + dir + "': " + ec.message());
    // writeFileAtomically gives each save its own temporary file: the labeller's checkpoints
    // and the window's saves of edits may overlap.
    core::writeFileAtomically(dir + "/labels.json", toJson().dump(1) + "\n");
}

LabelResult LabelResult::load(const std::string &dir)
{
    const std::string path = dir + "/labels.json";
    std::error_code error;
    const std::string text = core::readFile(path, error);
    if (error)
        throw core::IoError("cannot read '" + path + "': " + error.message() +
                            " (run `edgetrain-cli label` first)");
    return fromJson(core::Json::parse(text, path), path);
}

} // namespace edgetrain::vision

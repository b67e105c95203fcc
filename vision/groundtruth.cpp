#include "groundtruth.h"

#include "core/error.h"
#include "core/fileio.h"
#include "vision/annotations/annotationtext.h"

#include <algorithm>
#include <filesystem>

namespace edgetrain::vision {

using Internal::JsonReader;
namespace fs = std::filesystem;

TruthFrame *GroundTruth::frame(int index)
{
    const auto it = std::lower_bound(frames.begin(), frames.end(), index,
                                     [](const TruthFrame &f, int i) { return f.index < i; });
    return it != frames.end() && it->index == index ? &*it : nullptr;
}

const TruthFrame *GroundTruth::frame(int index) const
{
    return const_cast<GroundTruth *>(this)->frame(index);
}

TruthFrame &GroundTruth::ensureFrame(int index)
{
    const auto it = std::lower_bound(frames.begin(), frames.end(), index,
                                     [](const TruthFrame &f, int i) { return f.index < i; });
    if (it != frames.end() && it->index == index)
        return *it;
    TruthFrame f;
    f.index = index;
    return *frames.insert(it, std::move(f));
}

int GroundTruth::doneFrames() const
{
    return int(
        std::count_if(frames.begin(), frames.end(), [](const TruthFrame &f) { return f.done; }));
}

int GroundTruth::boxCount() const
{
    int n = 0;
    for (const TruthFrame &f : frames)
        n += int(f.boxes.size());
    return n;
}

void GroundTruth::merge(const GroundTruth &other)
{
    if (frame_size.area() > 0 && other.frame_size.area() > 0 && frame_size != other.frame_size)
        throw core::Error("the annotations are for " + std::to_string(other.frame_size.width) +
                          "x" + std::to_string(other.frame_size.height) +
                          " frames, the truth for " + std::to_string(frame_size.width) + "x" +
                          std::to_string(frame_size.height));
    if (frame_size.area() == 0)
        frame_size = other.frame_size;
    for (const TruthFrame &f : other.frames)
        ensureFrame(f.index) = f;
}

GroundTruth GroundTruth::doneOnly() const
{
    GroundTruth gt = *this;
    gt.frames.erase(std::remove_if(gt.frames.begin(), gt.frames.end(),
                                   [](const TruthFrame &f) { return !f.done; }),
                    gt.frames.end());
    return gt;
}

core::Json GroundTruth::toJson() const
{
    core::Json j;
    j.set("format", "edgetrain-truth-1").set("source", source).set("category", category);
    j.set("frame_width", frame_size.width).set("frame_height", frame_size.height);
    j.set("note", note);
    core::Json list = core::Json::array();
    for (const TruthFrame &f : frames) {
        core::Json jf;
        jf.set("index", f.index).set("done", f.done);
        core::Json boxes = core::Json::array();
        for (const TruthBox &b : f.boxes) {
            core::Json jb;
            jb.set("x", b.box.x).set("y", b.box.y).set("w", b.box.width).set("h", b.box.height);
            jb.set("ignore", b.ignore).set("id", b.id);
            boxes.push(std::move(jb));
        }
        jf.set("boxes", std::move(boxes));
        if (!f.pick.empty()) // older files have none: imported or drawn by hand
            jf.set("pick", f.pick);
        list.push(std::move(jf));
    }
    j.set("frames", std::move(list));
    return j;
}

GroundTruth GroundTruth::fromJson(const core::Json &j, const std::string &where)
{
    JsonReader r{where};
    const core::Json *format = j.isObject() ? j.find("format") : nullptr;
    if (!format || !format->isString() || format->toString() != "edgetrain-truth-1")
        r.fail("format", "not an EdgeTrain truth file (format edgetrain-truth-1)");
    GroundTruth gt;
    gt.source = r.text(r.field(j, "(top)", "source"), "source");
    gt.category = r.text(r.field(j, "(top)", "category"), "category");
    if (const core::Json *note = j.find("note"))
        gt.note = r.text(*note, "note");
    gt.frame_size = {int(r.integer(r.field(j, "(top)", "frame_width"), "frame_width")),
                     int(r.integer(r.field(j, "(top)", "frame_height"), "frame_height"))};
    const auto &list = r.array(j, "(top)", "frames");
    for (std::size_t i = 0; i < list.size(); ++i) {
        const std::string p = "frames[" + std::to_string(i) + "]";
        const int index = int(r.integer(r.field(list[i], p, "index"), p + ".index"));
        if (index < 0)
            r.fail(p + ".index", "negative");
        if (gt.frame(index))
            r.fail(p + ".index", "frame " + std::to_string(index) + " appears twice");
        TruthFrame &f = gt.ensureFrame(index);
        const core::Json &done = r.field(list[i], p, "done");
        if (!done.isBool())
            r.fail(p + ".done", "not true/false");
        f.done = done.toBool();
        if (const core::Json *pick = list[i].find("pick"))
            f.pick = r.text(*pick, p + ".pick");
        const auto &boxes = r.array(list[i], p, "boxes");
        for (std::size_t k = 0; k < boxes.size(); ++k) {
            const std::string q = p + ".boxes[" + std::to_string(k) + "]";
            TruthBox b;
            b.box.x = r.number(r.field(boxes[k], q, "x"), q + ".x");
            b.box.y = r.number(r.field(boxes[k], q, "y"), q + ".y");
            b.box.width = r.number(r.field(boxes[k], q, "w"), q + ".w");
            b.box.height = r.number(r.field(boxes[k], q, "h"), q + ".h");
            if (b.box.width <= 0 || b.box.height <= 0)
                r.fail(q, "the box has no area");
            const core::Json &ignore = r.field(boxes[k], q, "ignore");
            if (!ignore.isBool())
                r.fail(q + ".ignore", "not true/false");
            b.ignore = ignore.toBool();
            if (const core::Json *id = boxes[k].find("id"))
                b.id = int(r.integer(*id, q + ".id"));
            f.boxes.push_back(b);
        }
    }
    return gt;
}

void GroundTruth::save(const std::string &sessionDir) const
{
    Internal::writeTextFile(sessionDir + "/truth.json", toJson().dump(1) + "\n");
}

GroundTruth GroundTruth::load(const std::string &sessionDir)
{
    const std::string path = sessionDir + "/truth.json";
    return fromJson(core::Json::parse(core::readFile(path), path), path);
}

bool GroundTruth::exists(const std::string &sessionDir)
{
    return fs::exists(sessionDir + "/truth.json");
}

GroundTruth GroundTruth::importFile(const std::string &path, AnnotationFormat format,
                                    cv::Size frameSize, int frameCount, const std::string &category)
{
    if (frameSize.width <= 0 || frameSize.height <= 0)
        throw core::SpecError("importing annotations needs the frame size of the video");
    GroundTruth gt = annotationCodec(format).read(path, {frameSize, frameCount, category});
    gt.category = category;
    gt.frame_size = frameSize;
    return gt;
}

void GroundTruth::exportFile(const std::string &path, AnnotationFormat format) const
{
    annotationCodec(format).write(*this, path);
}

std::string GroundTruth::exportLosses(AnnotationFormat format) const
{
    return annotationCodec(format).losses(*this);
}

GroundTruth GroundTruth::fromLabels(const LabelResult &labels)
{
    GroundTruth gt;
    gt.source = labels.source;
    gt.frame_size = labels.frame_size;
    gt.note = "the session's accepted tracks (teacher " + labels.teacher + ", tracker " +
              labels.options.tracker + "), not verified";
    int frames = labels.stats.frames;
    for (const Track &t : labels.tracks)
        if (!t.boxes.empty())
            frames = std::max(frames, t.boxes.back().frame + 1);
    gt.frames.resize(std::size_t(std::max(frames, 0)));
    for (int i = 0; i < frames; ++i)
        gt.frames[std::size_t(i)].index = i;
    for (const Track &t : labels.tracks) {
        if (t.state != Track::State::Accepted)
            continue;
        for (const TrackBox &b : t.boxes)
            if (b.frame >= 0)
                gt.frames[std::size_t(b.frame)].boxes.push_back({b.box, false, t.id});
    }
    return gt;
}

} // namespace edgetrain::vision

#include "framedataset.h"

#include "boxguard.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/random.h"
#include "datasetfolder.h"
#include "framedatasetparts.h"
#include "scenepaste.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>

namespace edgetrain::vision {

namespace fs = std::filesystem;
using frameparts::frameFolder;
using frameparts::rectOf;

namespace {

int roundTo8(double v)
{
    return std::max(8, int(std::lround(v / 8.0)) * 8);
}

} // namespace

cv::Size FrameDataset::inputSize(cv::Size frame, int width)
{
    const int w = roundTo8(width);
    if (frame.width <= 0 || frame.height <= 0)
        return {w, roundTo8(w * 0.75)};
    return {w, roundTo8(double(w) * frame.height / frame.width)};
}

std::vector<core::LabelBox> FrameDataset::frameBoxes(const LabelResult &labels, int frame,
                                                     const FrameDatasetOptions &o, int *sameObject,
                                                     const GroundPlane *plane)
{
    struct Candidate
    {
        core::LabelBox box;
        const Track *track;
        int teacherDistance; // frames to the track's nearest teacher (or student) box; 0: this one
    };
    std::vector<Candidate> found;
    for (const Track &t : labels.tracks) {
        const TrackBox *b = t.at(frame);
        if (!b)
            continue;
        core::LabelBox box;
        box.x0 = float(b->box.x);
        box.y0 = float(b->box.y);
        box.x1 = float(b->box.x + b->box.width);
        box.y1 = float(b->box.y + b->box.height);
        box.ignore = t.state == Track::State::Rejected ||
                     (b->source == BoxSource::Tracker && b->confidence < o.min_tracker_confidence);
        int distance = std::numeric_limits<int>::max();
        for (const TrackBox &x : t.boxes)
            if (x.source != BoxSource::Tracker)
                distance = std::min(distance, std::abs(x.frame - frame));
        found.push_back({box, &t, distance});
    }
    if (o.same_object_iou > 0.0) {
        int same = 0;
        // Which of two boxes of one object stays: the teacher's own box in this frame (distance
        // 0), then the track whose nearest teacher box is nearer in time (a tracker box drifts
        // with every frame it is carried), then the track the teacher confirmed more often.
        std::vector<std::size_t> order(found.size());
        std::iota(order.begin(), order.end(), std::size_t(0));
        std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
            const Candidate &a = found[i], &b = found[j];
            if (a.teacherDistance != b.teacherDistance)
                return a.teacherDistance < b.teacherDistance;
            return a.track->teacherBoxes() > b.track->teacherBoxes();
        });
        // How far a box's height is from the ground plane's at its bottom row (log ratio).
        const bool byPlane = plane && plane->usable;
        const auto off = [&](const cv::Rect2d &x) {
            const double expected = plane->heightAt(x.y + x.height);
            return expected > 0.0 ? std::abs(std::log(x.height / expected))
                                  : std::numeric_limits<double>::infinity();
        };
        const double fits = std::log(1.5); // within 50 %
        std::vector<core::LabelBox *> kept;
        for (std::size_t i : order) {
            core::LabelBox &box = found[i].box;
            if (box.ignore)
                continue;
            const cv::Rect2d r = rectOf(box);
            // A kept box given up later in a disagreement still counts: its spot stays disputed.
            for (core::LabelBox *k : kept) {
                const cv::Rect2d q = rectOf(*k);
                const double inter = (r & q).area();
                const double uni = r.area() + q.area() - inter;
                const double smaller = std::min(r.area(), q.area());
                const double larger = std::max(r.area(), q.area());
                const bool nested = smaller > 0.0 && inter >= 0.8 * smaller;
                if ((uni > 0.0 && inter >= o.same_object_iou * uni) ||
                    (nested && smaller >= 0.25 * larger)) {
                    box.ignore = true; // one object boxed twice: the one sorted first stays
                    ++same;
                    break;
                }
                if (nested) {
                    // More than twice the size apart on one spot (a person and a fragment of
                    // them, or a face and its head and shoulders). A fixed camera's ground
                    // plane says how tall an object standing there is; without one neither box
                    // is trusted.
                    if (byPlane && !k->ignore && off(q) <= fits && off(q) <= off(r)) {
                        box.ignore = true; // the kept box stands on the floor, this one not
                        ++same;
                    } else if (byPlane && off(r) <= fits && off(r) < off(q)) {
                        same += k->ignore ? 0 : 1;
                        k->ignore = true;
                        continue; // this one may still meet another kept box
                    } else {
                        box.ignore = true;
                        same += k->ignore ? 1 : 2;
                        k->ignore = true;
                    }
                    break;
                }
            }
            if (!box.ignore)
                kept.push_back(&box);
        }
        if (sameObject)
            *sameObject += same;
    }
    std::vector<core::LabelBox> out;
    out.reserve(found.size());
    for (const Candidate &c : found)
        out.push_back(c.box);
    return out;
}

std::string FrameDataset::folder(const std::string &sessionDir)
{
    return frameFolder(sessionDir).current().string();
}

namespace {

/** The samples of an index.json; `header` (if any) gets its input, every, round and seconds. */
std::vector<FrameSample> readIndex(const std::string &path, FrameDatasetStats *header)
{
    std::error_code error;
    const std::string text = core::readFile(path, error);
    if (error)
        throw core::IoError("cannot read '" + path + "': " + error.message() +
                            " (build the frame dataset first)");
    const core::Json j = core::Json::parse(text, path);
    auto fail = [&](const std::string &what) { throw core::FormatError(path + ": " + what); };
    const core::Json *format = j.find("format");
    if (!format || !format->isString() || format->toString() != "edgetrain-frames-1")
        fail("not an EdgeTrain frame dataset (format edgetrain-frames-1)");
    auto integer = [&](const core::Json &o, const char *key) {
        const core::Json *v = o.find(key);
        if (!v || !v->isNumber())
            fail(std::string("field '") + key + "' missing or not a number");
        const double d = v->toDouble();
        if (!(d >= -2147483648.0 && d <= 2147483647.0) || d != std::floor(d))
            fail(std::string("field '") + key + "' is not a whole number in range");
        return int(d);
    };
    if (header) {
        header->input = cv::Size(integer(j, "input_width"), integer(j, "input_height"));
        header->every = integer(j, "every");
        header->round = j.find("round") ? integer(j, "round") : 1; // older indexes: none
        const core::Json *seconds = j.find("seconds");
        header->seconds = seconds && seconds->isNumber() ? seconds->toDouble() : 0.0;
        // Indexes from before ScenePaste have neither: nothing was pasted.
        header->cutouts = j.find("cutouts") ? integer(j, "cutouts") : 0;
        // Indexes from before the one-box-per-object rule: none made ignore.
        header->same_object = j.find("same_object") ? integer(j, "same_object") : 0;
        if (const core::Json *g = j.find("ground_plane"); g && g->isObject()) {
            auto number = [&](const char *key) {
                const core::Json *v = g->find(key);
                if (!v || !v->isNumber())
                    fail(std::string("ground_plane: field '") + key + "' missing or not a number");
                return v->toDouble();
            };
            header->ground.slope = number("slope");
            header->ground.offset = number("offset");
            header->ground.r2 = number("r2");
            header->ground.low = number("low");
            header->ground.high = number("high");
            header->ground.boxes = integer(*g, "boxes");
            const core::Json *usable = g->find("usable");
            header->ground.usable = usable && usable->isBool() && usable->toBool();
        }
    }
    const core::Json *list = j.find("samples");
    if (!list || !list->isArray())
        fail("no 'samples' array");
    std::vector<FrameSample> out;
    const auto &rows = list->toArray();
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const core::Json &row = rows[i];
        const std::string where = "sample " + std::to_string(i);
        const core::Json *file = row.find("file");
        const core::Json *split = row.find("split");
        const core::Json *boxes = row.find("boxes");
        if (!file || !file->isString() || !split || !split->isString() || !boxes ||
            !boxes->isArray())
            fail(where + ": needs 'file', 'split' and 'boxes'");
        FrameSample s;
        s.file = file->toString();
        s.frame = integer(row, "frame");
        s.pasted = row.find("pasted") ? integer(row, "pasted") : 0;
        if (split->toString() == "train")
            s.split = Split::Train;
        else if (split->toString() == "val")
            s.split = Split::Validation;
        else
            fail(where + ": split '" + split->toString() + "' is neither train nor val");
        for (const core::Json &b : boxes->toArray()) {
            if (!b.isArray() || b.toArray().size() != 5)
                fail(where + ": a box must be [x0, y0, x1, y1, ignore]");
            const auto &v = b.toArray();
            core::LabelBox box;
            box.x0 = float(v[0].toDouble());
            box.y0 = float(v[1].toDouble());
            box.x1 = float(v[2].toDouble());
            box.y1 = float(v[3].toDouble());
            box.ignore = v[4].toDouble() != 0;
            if (!(box.x1 > box.x0 && box.y1 > box.y0))
                fail(where + ": a box has no area");
            s.boxes.push_back(box);
        }
        if (s.pasted < 0 || s.pasted > int(s.boxes.size()))
            fail(where + ": 'pasted' counts more boxes than it has");
        out.push_back(std::move(s));
    }
    return out;
}

} // namespace

std::vector<FrameSample> FrameDataset::index(const std::string &sessionDir, cv::Size *input)
{
    FrameDatasetStats header;
    auto samples = readIndex((fs::path(folder(sessionDir)) / "index.json").string(), &header);
    if (input)
        *input = header.input;
    return samples;
}

std::optional<FrameDatasetStats> FrameDataset::stats(const std::string &sessionDir)
{
    const fs::path path = fs::path(folder(sessionDir)) / "index.json";
    if (!fs::exists(path))
        return std::nullopt;
    // Counted as build() counts them: a sampled frame gives one sample in its split, training
    // frames also their jittered copies; backgrounds are training samples of frame -1.
    FrameDatasetStats s;
    std::set<int> frames[2];
    for (const FrameSample &x : readIndex(path.string(), &s)) {
        const int k = x.split == Split::Train ? 0 : 1;
        ++s.samples[k];
        if (x.frame < 0)
            ++s.backgrounds;
        else
            frames[k].insert(x.frame);
        for (const core::LabelBox &b : x.boxes)
            ++(b.ignore ? s.ignores[k] : s.objects[k]);
        s.pasted += x.pasted;
    }
    for (int k = 0; k < 2; ++k)
        s.frames[k] = int(frames[k].size());
    return s;
}

core::TensorDataset FrameDataset::load(const std::string &sessionDir, Split split, int maxObjects)
{
    cv::Size input;
    const auto samples = index(sessionDir, &input);
    const fs::path root = folder(sessionDir);
    const int width = core::DetectionLoss::labelWidth(maxObjects);
    const std::size_t plane = std::size_t(3 * input.area());
    std::vector<float> images;
    std::vector<std::int32_t> labels;
    std::size_t n = 0;
    for (const FrameSample &s : samples)
        n += s.split == split;
    images.resize(n * plane);
    labels.resize(n * std::size_t(width));
    std::size_t at = 0;
    for (const FrameSample &s : samples) {
        if (s.split != split)
            continue;
        const std::string path = (root / s.file).string();
        const cv::Mat image = cv::imread(path, cv::IMREAD_COLOR);
        if (image.empty())
            throw core::FormatError(path + ": not a readable image");
        if (image.size() != input)
            throw core::FormatError(path + ": " + std::to_string(image.cols) + "x" +
                                    std::to_string(image.rows) + ", the index says " +
                                    std::to_string(input.width) + "x" +
                                    std::to_string(input.height));
        CropDataset::toTensor(image, images.data() + at * plane);
        core::DetectionLoss::encode(s.boxes, maxObjects, labels.data() + at * std::size_t(width));
        ++at;
    }
    if (n == 0)
        throw core::FormatError((root / "index.json").string() + ": the " +
                                std::string(splitName(split)) + " split is empty");
    return core::TensorDataset(root.string() + " (" + splitName(split) + ")",
                               core::Shape{3, input.height, input.width}, 1, std::move(images),
                               std::move(labels), width);
}

} // namespace edgetrain::vision

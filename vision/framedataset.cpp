#include "framedataset.h"

#include "boxguard.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"
#include "core/random.h"
#include "datasetfolder.h"
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

namespace {

int roundTo8(double v)
{
    return std::max(8, int(std::lround(v / 8.0)) * 8);
}

cv::Rect2d rectOf(const core::LabelBox &b)
{
    return {b.x0, b.y0, b.x1 - b.x0, b.y1 - b.y0};
}

/** Boxes scaled from source pixels to input pixels. */
std::vector<core::LabelBox> scaled(const std::vector<core::LabelBox> &boxes, double kx, double ky,
                                   double minHeight)
{
    std::vector<core::LabelBox> out;
    for (core::LabelBox b : boxes) {
        b.x0 = float(b.x0 * kx);
        b.x1 = float(b.x1 * kx);
        b.y0 = float(b.y0 * ky);
        b.y1 = float(b.y1 * ky);
        if (b.y1 - b.y0 < minHeight)
            b.ignore = true;
        out.push_back(b);
    }
    return out;
}

/** Clips boxes to the input; a box mostly cut becomes an ignore region, one nearly gone is
 *  dropped. */
std::vector<core::LabelBox> clipped(const std::vector<core::LabelBox> &boxes, cv::Size input)
{
    std::vector<core::LabelBox> out;
    for (core::LabelBox b : boxes) {
        const double area = double(b.x1 - b.x0) * double(b.y1 - b.y0);
        core::LabelBox c = b;
        c.x0 = std::clamp(b.x0, 0.0f, float(input.width));
        c.x1 = std::clamp(b.x1, 0.0f, float(input.width));
        c.y0 = std::clamp(b.y0, 0.0f, float(input.height));
        c.y1 = std::clamp(b.y1, 0.0f, float(input.height));
        const double visible = std::max(0.0f, c.x1 - c.x0) * double(std::max(0.0f, c.y1 - c.y0));
        if (area <= 0 || visible < 0.05 * area || c.x1 - c.x0 < 1 || c.y1 - c.y0 < 1)
            continue;
        if (visible < 0.6 * area)
            c.ignore = true;
        out.push_back(c);
    }
    return out;
}

/** Brightness, contrast and a gain per colour channel. */
cv::Mat photometric(const cv::Mat &image, core::Rng &rng)
{
    const double alpha = rng.uniform(0.7f, 1.3f), beta = rng.uniform(-30.0f, 30.0f);
    const cv::Scalar gain(alpha * rng.uniform(0.85f, 1.15f), alpha * rng.uniform(0.85f, 1.15f),
                          alpha * rng.uniform(0.85f, 1.15f));
    cv::Mat out;
    cv::multiply(image, gain, out);
    out.convertTo(out, -1, 1.0, beta);
    return out;
}

/** A jittered copy: flip, scale 0.7-2.4 (log-uniform) about a random centre, a shift of up to
 *  15 % of the frame, brightness, contrast and a gain per colour channel. */
cv::Mat augment(const cv::Mat &image, const std::vector<core::LabelBox> &boxes, core::Rng &rng,
                std::vector<core::LabelBox> *outBoxes)
{
    const double W = image.cols, H = image.rows;
    const bool flip = rng.uniform() < 0.5f;
    const double s = std::exp(rng.uniform(std::log(0.7f), std::log(2.4f)));
    const double cx = rng.uniform(0.1f, 0.9f) * W, cy = rng.uniform(0.1f, 0.9f) * H;
    const double tx = rng.uniform(-0.15f, 0.15f) * W, ty = rng.uniform(-0.15f, 0.15f) * H;
    // Continuous coordinates (pixel i spans [i, i+1]): x' = a x + b, y' = s y + d.
    const double a = flip ? -s : s;
    const double b = (flip ? W - cx * (1 - s) : cx * (1 - s)) + tx;
    const double d = cy * (1 - s) + ty;
    // warpAffine maps pixel centres: i' + 0.5 = a (i + 0.5) + b.
    const cv::Matx23d m(a, 0, b + 0.5 * a - 0.5, 0, s, d + 0.5 * s - 0.5);
    cv::Mat warped;
    cv::warpAffine(image, warped, m, image.size(), cv::INTER_LINEAR, cv::BORDER_REPLICATE);
    const cv::Mat out = photometric(warped, rng);
    std::vector<core::LabelBox> moved;
    for (core::LabelBox box : boxes) {
        float x0 = float(a * box.x0 + b), x1 = float(a * box.x1 + b);
        if (x0 > x1)
            std::swap(x0, x1);
        box.x0 = x0;
        box.x1 = x1;
        box.y0 = float(s * box.y0 + d);
        box.y1 = float(s * box.y1 + d);
        moved.push_back(box);
    }
    *outBoxes = clipped(moved, image.size());
    return out;
}

cv::Mat medianImage(const std::vector<cv::Mat> &images)
{
    cv::Mat out(images.front().size(), images.front().type());
    std::vector<uchar> values(images.size());
    const std::size_t mid = values.size() / 2;
    const int bytes = images.front().cols * images.front().channels();
    for (int y = 0; y < out.rows; ++y) {
        uchar *o = out.ptr<uchar>(y);
        for (int x = 0; x < bytes; ++x) {
            for (std::size_t i = 0; i < images.size(); ++i)
                values[i] = images[i].ptr<uchar>(y)[x];
            std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(mid), values.end());
            o[x] = values[mid];
        }
    }
    return out;
}

DatasetFolder frameFolder(const std::string &sessionDir)
{
    return {fs::path(sessionDir) / "frames", fs::path(sessionDir) / "frames.tmp"};
}

core::Json boxesJson(const std::vector<core::LabelBox> &boxes)
{
    core::Json list = core::Json::array();
    for (const core::LabelBox &b : boxes) {
        core::Json row = core::Json::array();
        row.push(double(b.x0)).push(double(b.y0)).push(double(b.x1)).push(double(b.y1));
        row.push(b.ignore ? 1 : 0);
        list.push(std::move(row));
    }
    return list;
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

FrameDatasetStats FrameDataset::build(const std::string &sessionDir, const LabelResult &labels,
                                      FrameSource &source, const FrameDatasetOptions &o,
                                      const Progress &progress, const std::atomic<bool> *stop)
{
    const auto start = std::chrono::steady_clock::now();
    FrameDatasetStats stats;
    stats.round = labels.round;
    const cv::Size frameSize = source.frameSize();
    stats.input = o.input.area() > 0 ? o.input : inputSize(frameSize, o.width);
    if (stats.input.width % 8 || stats.input.height % 8)
        throw core::SpecError("frame dataset: the input size must be multiples of 8, not " +
                              std::to_string(stats.input.width) + "x" +
                              std::to_string(stats.input.height));
    int total = source.frameCount() > 0 ? source.frameCount() : labels.stats.frames;
    if (labels.stats.frames > 0)
        total = std::min(total, labels.stats.frames); // frames past labelling have no labels
    if (o.max_frame > 0)
        total = std::min(total, o.max_frame);
    const std::int64_t sampleBytes = std::int64_t(3) * stats.input.area() * 4;
    if (o.every > 0) {
        stats.every = o.every;
    } else {
        const double perFrame = 1.0 + o.augmented * 0.8;
        const double room = std::max<double>(1.0, double(o.budget_bytes / sampleBytes) -
                                                      std::max(0, o.backgrounds));
        stats.every = std::max(1, int(std::ceil(total * perFrame / room)));
    }
    auto nearCut = [&](int f) {
        return std::any_of(labels.cuts.begin(), labels.cuts.end(),
                           [&](int c) { return std::abs(f - c) <= o.cut_margin; });
    };
    auto splitOf = [&](int f) {
        if (o.validation_period <= 0)
            return Split::Train;
        const int block = f / std::max(1, o.block_frames);
        return block % o.validation_period == o.validation_period / 2 ? Split::Validation
                                                                      : Split::Train;
    };

    const DatasetFolder target = frameFolder(sessionDir);
    const fs::path tmp = target.stage();
    core::Rng rng(o.seed ^ 0x4652414d45ull);
    core::Json samples = core::Json::array();
    int written = 0;
    auto write = [&](const cv::Mat &image, const std::vector<core::LabelBox> &boxes, Split split,
                     int frame, int pasted = 0) {
        char name[32];
        std::snprintf(name, sizeof name, "%06d.png", written++);
        if (!cv::imwrite((tmp / name).string(), image, {cv::IMWRITE_PNG_COMPRESSION, 1}))
            throw core::IoError("cannot write '" + (tmp / name).string() + "'");
        core::Json j;
        j.set("file", name).set("split", splitName(split)).set("frame", frame);
        j.set("boxes", boxesJson(boxes));
        if (pasted > 0) // the last `pasted` boxes are objects pasted on (ScenePaste)
            j.set("pasted", pasted);
        samples.push(std::move(j));
        const int s = split == Split::Train ? 0 : 1;
        ++stats.samples[s];
        for (const core::LabelBox &b : boxes)
            ++(b.ignore ? stats.ignores[s] : stats.objects[s]);
    };

    const int medianStep = std::max(stats.every, total / 25);
    // The median and the cut-outs at most 1280 px wide: a 1080p camera's median frames stay
    // under 80 MB (vtest.avi's 768 px: the source frames themselves).
    const double workScale = std::min(1.0, 1280.0 / std::max(1, frameSize.width));
    const cv::Size work(int(std::lround(frameSize.width * workScale)),
                        int(std::lround(frameSize.height * workScale)));
    auto atWork = [&](const cv::Mat &image) {
        cv::Mat out;
        if (workScale >= 1.0)
            out = image.clone();
        else
            cv::resize(image, out, work, 0, 0, cv::INTER_AREA);
        return out;
    };
    std::vector<cv::Mat> forMedian; // source frames at the working size
    // Every sampled frame is kept (input size) until the background is known: copies with
    // objects pasted need it, and so do the cut-outs (ScenePaste).
    struct Kept
    {
        cv::Mat base;
        std::vector<core::LabelBox> boxes;
        Split split;
        int frame;
    };
    std::vector<Kept> kept;
    struct Candidate // a labelled object of a training frame, as a crop of the frame
    {
        cv::Mat crop;
        cv::Rect rect;  // the crop, working-size pixels
        cv::Rect2d box; // the label box, working-size pixels
    };
    std::vector<Candidate> candidates;
    const cv::Rect frameRect(0, 0, frameSize.width, frameSize.height);
    // The ground plane first, from the labels alone (boxes wholly in the frame, training frames,
    // one fixed view only: across a scene cut no floor holds): it places pasted objects and
    // settles which of two nested boxes of very different sizes stands on the floor.
    {
        std::vector<cv::Rect2d> planeBoxes;
        for (int f = 0; labels.cuts.empty() && f < total; f += stats.every) {
            if (splitOf(f) != Split::Train)
                continue;
            for (const core::LabelBox &b : frameBoxes(labels, f, o)) {
                const cv::Rect2d r = rectOf(b);
                if (!b.ignore && BoxGuard::check(r, frameSize).ok() &&
                    (r & cv::Rect2d(frameRect)) == r)
                    planeBoxes.push_back(r);
            }
        }
        stats.ground = GroundPlane::fit(planeBoxes, frameSize);
    }
    const cv::Rect workRect(0, 0, work.width, work.height);
    if (!source.seek(0))
        throw SourceError("cannot seek to the start of '" + source.description() + "'");
    Frame frame;
    const double kx = double(stats.input.width) / std::max(1, frameSize.width);
    const double ky = double(stats.input.height) / std::max(1, frameSize.height);
    while (source.read(frame)) {
        if (stop && stop->load())
            break;
        const int f = frame.index;
        if (f >= total)
            break;
        if (progress && f % 25 == 0)
            progress(f, total);
        const bool sampled = f % stats.every == 0 && !nearCut(f);
        const bool median = f % medianStep == 0;
        if (!sampled && !median)
            continue;
        if (median)
            forMedian.push_back(atWork(frame.image));
        if (!sampled)
            continue;
        cv::Mat base;
        cv::resize(frame.image, base, stats.input, 0, 0, cv::INTER_AREA);
        const Split split = splitOf(f);
        const auto inSource = frameBoxes(labels, f, o, &stats.same_object, &stats.ground);
        ++stats.frames[split == Split::Train ? 0 : 1];
        kept.push_back(
            {base, clipped(scaled(inSource, kx, ky, o.min_height_px), stats.input), split, f});
        // One fixed view only: across a scene cut neither the background nor a floor holds.
        if (split != Split::Train || o.pasted <= 0 || !labels.cuts.empty())
            continue;
        int cut = 0;
        cv::Mat workImage; // made for the first object cut out of this frame
        for (const core::LabelBox &b : inSource) {
            const cv::Rect2d r = rectOf(b);
            if (b.ignore || !BoxGuard::check(r, frameSize).ok() || (r & cv::Rect2d(frameRect)) != r)
                continue;
            const bool alone = std::none_of(inSource.begin(), inSource.end(), [&](const auto &o2) {
                return &o2 != &b && (rectOf(o2) & r).area() > 0;
            });
            if (!alone || cut >= 2 || candidates.size() >= 400 || r.height < 24)
                continue;
            const cv::Rect2d w(r.x * workScale, r.y * workScale, r.width * workScale,
                               r.height * workScale);
            const double mx = 0.15 * w.width + 2, my = 0.15 * w.height + 2;
            const cv::Rect rect = cv::Rect(int(w.x - mx), int(w.y - my), int(w.width + 2 * mx),
                                           int(w.height + 2 * my)) &
                                  workRect;
            if (workImage.empty())
                workImage = workScale >= 1.0 ? frame.image : atWork(frame.image);
            candidates.push_back({workImage(rect).clone(), rect, w});
            ++cut;
        }
    }
    if (stop && stop->load()) {
        fs::remove_all(tmp);
        stats.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return stats;
    }
    cv::Mat background; // the scene without its moving objects, at the input size
    std::vector<Cutout> cutouts;
    if (forMedian.size() >= 3) {
        const cv::Mat full = medianImage(forMedian);
        cv::resize(full, background, stats.input, 0, 0, cv::INTER_AREA);
        for (const Candidate &c : candidates) {
            const cv::Rect2d inCrop(c.box.x - c.rect.x, c.box.y - c.rect.y, c.box.width,
                                    c.box.height);
            if (auto cutout = ScenePaste::cut(c.crop, full(c.rect), inCrop))
                cutouts.push_back(std::move(*cutout));
        }
    }
    forMedian.clear();
    candidates.clear();
    stats.cutouts = int(cutouts.size());
    for (const Kept &k : kept) {
        if (stop && stop->load())
            break;
        write(k.base, k.boxes, k.split, k.frame);
        if (k.split != Split::Train)
            continue;
        for (int c = 0; c < o.augmented; ++c) {
            std::vector<core::LabelBox> moved;
            if (c < o.pasted && stats.ground.usable && !cutouts.empty()) {
                cv::Mat composite = k.base.clone();
                const auto pasted = ScenePaste::paste(composite, cutouts, stats.ground, frameSize,
                                                      kx, ky, k.boxes, rng);
                moved = k.boxes;
                moved.insert(moved.end(), pasted.begin(), pasted.end());
                stats.pasted += int(pasted.size());
                write(photometric(composite, rng), moved, k.split, k.frame, int(pasted.size()));
                continue;
            }
            const cv::Mat jittered = augment(k.base, k.boxes, rng, &moved);
            write(jittered, moved, k.split, k.frame);
        }
    }
    kept.clear();
    if (stop && stop->load()) {
        fs::remove_all(tmp);
        stats.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        return stats;
    }
    if (!background.empty()) {
        for (int k = 0; k < o.backgrounds; ++k) {
            std::vector<core::LabelBox> none;
            write(k == 0 ? background : augment(background, {}, rng, &none), {}, Split::Train, -1);
            ++stats.backgrounds;
        }
    }
    core::Json index;
    index.set("format", "edgetrain-frames-1").set("source", labels.source);
    index.set("input_width", stats.input.width).set("input_height", stats.input.height);
    index.set("frame_width", frameSize.width).set("frame_height", frameSize.height);
    index.set("every", stats.every).set("max_frame", total);
    core::Json ground;
    ground.set("usable", stats.ground.usable).set("slope", stats.ground.slope);
    ground.set("offset", stats.ground.offset).set("r2", stats.ground.r2);
    ground.set("boxes", stats.ground.boxes);
    ground.set("low", stats.ground.low).set("high", stats.ground.high);
    index.set("ground_plane", std::move(ground)).set("cutouts", stats.cutouts);
    index.set("same_object", stats.same_object);
    stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    index.set("round", stats.round).set("seconds", stats.seconds); // for stats()
    index.set("samples", std::move(samples));
    {
        std::ofstream out(tmp / "index.json", std::ios::binary | std::ios::trunc);
        out << index.dump(1) << '\n';
        if (!out)
            throw core::IoError("cannot write '" + (tmp / "index.json").string() + "'");
    }
    target.replace();
    if (progress)
        progress(total, total);
    return stats;
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

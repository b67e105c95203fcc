// libFuzzer target for the labeller's box handling: whatever box a teacher returns (NaN,
// infinite, negative, huge, zero or sub-pixel sides, outside the frame) on whatever frame (1x1 up
// to 400x300, portrait, 3x200 slivers), BoxGuard either refuses it with a reason or clips it to a
// box and a pixel rectangle that are a valid ROI of the frame; a TrackFollower takes only what a
// tracker can take (a false start or Verdict::Failed is the designed answer, a crash, an OpenCV
// assertion escaping or a hang is a finding); Labeler::run with a teacher returning these boxes
// neither throws nor stops, and every box of its tracks passes the guard.
//
// The input: 10 bytes of header (frame width and height, little-endian 16-bit; the frame's
// content and its seed; the tracker, by its index in trackerNames(); the tracker's scale; a
// minimum side for the guard; the motion between frames and the tracker steps; the labeller's
// frames and track_scale), then up to 8 boxes, each a mode byte (its low bit: 0 = x, y, width,
// height as 4 raw doubles, 32 bytes; 1 = as 4 little-endian int16 quarter pixels, 8 bytes; the
// rest: the teacher's score) and its bytes (missing bytes are zeros). A broken contract prints
// what broke and aborts.
//
//   build/fuzz/bin/fuzz_boxes -max_total_time=300 -timeout=10 /tmp/corpus-boxes
//   tests/fuzz/corpus/boxes
//   build/fuzz/bin/fuzz_boxes <artifact>                       replays one input

#include "vision/boxguard.h"
#include "vision/framesource.h"
#include "vision/labeling.h"
#include "vision/labelresult.h"
#include "vision/teacher.h"
#include "vision/trackfollower.h"
#include "vision/tracking.h"

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace edgetrain;

namespace {

constexpr int kMaxBoxes = 8; // per input, each through the guard
constexpr int kMaxWidth_px = 400;
constexpr int kMaxHeight_px = 300;

/** What an input may ask of the trackers, so that it runs in milliseconds, not seconds (fuzz.sh's
 *  timeout is 10 s): under ASan an init or update of CSRT takes 0.05-0.4 s whatever the box, of
 *  the others mostly a few ms on these frames; the labeller re-starts a tracker on every teacher
 *  hit, and follows each new one back through the frames before. */
struct Budget
{
    int followers;  // boxes followed by a TrackFollower of their own
    int labelBoxes; // boxes the teacher returns on every labelled frame
    int maxFrames;  // of the labelled clip (3 or more)
};

Budget budget(const std::string &tracker)
{
    return tracker == "csrt" ? Budget{1, 1, 3} : Budget{3, 2, 6};
}

/** The input, read front to back; past its end every byte is 0. */
struct Reader
{
    const std::uint8_t *data;
    std::size_t size;

    std::uint8_t byte()
    {
        if (size == 0)
            return 0;
        --size;
        return *data++;
    }
    unsigned le16()
    {
        const unsigned lo = byte();
        return lo | unsigned(byte()) << 8;
    }
    double raw()
    {
        std::uint8_t b[sizeof(double)];
        for (auto &x : b)
            x = byte();
        double d;
        std::memcpy(&d, b, sizeof d);
        return d;
    }
    double quarters() { return double(std::int16_t(le16())) / 4.0; }
};

struct Box
{
    cv::Rect2d box;
    float score = 0.0f;
};

[[noreturn]] void broken(const std::string &what, const cv::Rect2d &box, cv::Size frame)
{
    std::fprintf(stderr, "fuzz_boxes: %s: box x=%.17g y=%.17g w=%.17g h=%.17g, frame %dx%d\n",
                 what.c_str(), box.x, box.y, box.width, box.height, frame.width, frame.height);
    std::abort();
}

[[noreturn]] void broken(const std::string &what)
{
    std::fprintf(stderr, "fuzz_boxes: %s\n", what.c_str());
    std::abort();
}

bool finite(const cv::Rect2d &b)
{
    return std::isfinite(b.x) && std::isfinite(b.y) && std::isfinite(b.width) &&
           std::isfinite(b.height);
}

/** BoxGuard::check's contract, and the ROI it promises, on `image`. */
vision::GuardedBox guarded(const cv::Rect2d &box, const cv::Mat &image, double minSide)
{
    const cv::Size frame = image.size();
    const vision::GuardedBox g = vision::BoxGuard::check(box, frame, minSide);
    const std::string with = " (minSide " + std::to_string(minSide) + ")";
    if (!finite(box) && g.ok())
        broken("a box not finite passed" + with, box, frame);
    if (!g.ok()) {
        if (!g.box.empty() || !g.pixels.empty())
            broken("a refused box left a box or pixels" + with, box, frame);
        return g;
    }
    const double side = std::max(minSide, 1.0);
    const cv::Rect2d &b = g.box;
    if (!finite(b) || b.x < 0 || b.y < 0 || b.x + b.width > frame.width ||
        b.y + b.height > frame.height)
        broken("a clipped box not inside the frame" + with, box, frame);
    if (b.width < side || b.height < side)
        broken("a clipped box under the minimum side" + with, box, frame);
    const cv::Rect &p = g.pixels;
    if (p.width <= 0 || p.height <= 0 || p.x < 0 || p.y < 0 || p.x + p.width > frame.width ||
        p.y + p.height > frame.height)
        broken("pixels not a non-empty rectangle inside the frame" + with, box, frame);
    if ((cv::Rect2d(p) & b).empty())
        broken("pixels that miss the box" + with, box, frame);
    const cv::Mat roi = image(p); // asserts on an ROI outside the image
    volatile std::uint8_t corners = roi.at<cv::Vec3b>(0, 0)[0];
    corners = corners ^ roi.at<cv::Vec3b>(roi.rows - 1, roi.cols - 1)[2];
    (void)corners;
    // A frame without area takes no box.
    if (vision::BoxGuard::check(box, {0, frame.height}, minSide).ok() ||
        vision::BoxGuard::check(box, {frame.width, 0}, minSide).ok())
        broken("a box passed on a frame without area" + with, box, frame);
    return g;
}

/** A BGR frame of `size`: flat, a gradient, noise, or a gradient with blobs, by `kind`. */
cv::Mat content(cv::Size size, std::uint8_t kind)
{
    cv::RNG rng(0x9e3779b9u + kind);
    cv::Mat image(size, CV_8UC3, cv::Scalar::all(kind));
    switch (kind & 3) {
    case 0:
        break;
    case 2:
        rng.fill(image, cv::RNG::UNIFORM, 0, 256);
        break;
    default:
        for (int y = 0; y < size.height; ++y)
            for (int x = 0; x < size.width; ++x)
                image.at<cv::Vec3b>(y, x) =
                    cv::Vec3b(std::uint8_t(x * 3 + kind), std::uint8_t(y * 5), std::uint8_t(x + y));
        if ((kind & 3) == 3)
            for (int i = 0; i < 6; ++i) {
                const cv::Point c(rng.uniform(0, size.width), rng.uniform(0, size.height));
                const int r =
                    1 + rng.uniform(0, std::max(1, std::min(size.width, size.height) / 4));
                cv::circle(image, c, r, cv::Scalar(rng.uniform(0, 256), rng.uniform(0, 256), 255),
                           cv::FILLED);
            }
        break;
    }
    return image;
}

cv::Mat shifted(const cv::Mat &image, double dx, double dy)
{
    const cv::Mat m = (cv::Mat_<double>(2, 3) << 1, 0, dx, 0, 1, dy);
    cv::Mat out;
    cv::warpAffine(image, out, m, image.size(), cv::INTER_NEAREST, cv::BORDER_REPLICATE);
    return out;
}

cv::Rect2d moved(const cv::Rect2d &b, double dx, double dy)
{
    return {b.x + dx, b.y + dy, b.width, b.height};
}

/** The frames of a clip: the first frame moving by (dx, dy) a frame. */
class ClipSource : public vision::FrameSource
{
public:
    ClipSource(const cv::Mat &first, int frames, int dx, int dy)
        : m_first(first), m_frames(frames), m_dx(dx), m_dy(dy)
    {
        m_size = first.size();
    }
    std::string description() const override { return "fuzz clip"; }
    bool read(vision::Frame &frame) override
    {
        if (m_next >= m_frames)
            return false;
        frame.index = m_next;
        frame.timestamp_ms = 40.0 * m_next;
        frame.image = shifted(m_first, m_next * m_dx, m_next * m_dy);
        ++m_next;
        return true;
    }
    bool seek(int index) override
    {
        if (index < 0 || index > m_frames)
            return false;
        m_next = index;
        return true;
    }
    int frameCount() const override { return m_frames; }
    double fps() const override { return 25.0; }

private:
    cv::Mat m_first;
    int m_frames, m_dx, m_dy, m_next = 0;
};

/** Returns the fuzzed boxes, moving with the clip, on every frame; counts what the labeller must
 *  drop (BoxGuard at its smallest side), by reason. */
class BoxTeacher : public vision::Teacher
{
public:
    BoxTeacher(std::vector<Box> boxes, int dx, int dy, double minSide)
        : m_boxes(std::move(boxes)), m_dx(dx), m_dy(dy), m_minSide(minSide)
    {}
    std::string name() const override { return "fuzz"; }
    std::vector<vision::Detection> detect(const cv::Mat &bgr) override
    {
        std::vector<vision::Detection> out;
        for (const Box &b : m_boxes) {
            vision::Detection d;
            d.box = moved(b.box, m_frame * m_dx, m_frame * m_dy);
            d.score = b.score;
            const vision::GuardedBox g = vision::BoxGuard::check(d.box, bgr.size(), m_minSide);
            if (!g.ok())
                dropped.count(*g.fault);
            out.push_back(d);
        }
        ++m_frame;
        return out;
    }
    void observe(const cv::Mat &) override { ++m_frame; }

    vision::DroppedBoxes dropped;

private:
    std::vector<Box> m_boxes;
    int m_dx, m_dy, m_frame = 0;
    double m_minSide;
};

void label(const cv::Mat &image, const std::vector<Box> &boxes, const std::string &tracker,
           int frames, int dx, int dy, double trackScale)
{
    vision::LabelOptions o;
    o.tracker = tracker;
    o.every = 1;
    o.track_scale = trackScale;
    o.min_track_boxes = 2;
    const double minSide = vision::BoxGuard::kTrackerMinSide_px / o.trackerScale(image.cols);
    ClipSource source(image, frames, dx, dy);
    const int given = std::min(budget(tracker).labelBoxes, int(boxes.size()));
    BoxTeacher teacher(std::vector<Box>(boxes.begin(), boxes.begin() + given), dx, dy, minSide);
    const vision::LabelResult r = vision::Labeler::run(source, teacher, o);
    const std::string run = "labelling with " + tracker + " on " + std::to_string(image.cols) +
                            "x" + std::to_string(image.rows) + ": ";
    const vision::LabelStats &s = r.stats;
    if (!r.stopped.empty())
        broken(run + "Labeler::run stopped: " + r.stopped);
    if (s.frames != frames || s.teacher_runs != frames || s.teacher_detections != frames * given)
        broken(run + "labelled " + std::to_string(s.frames) + " frames, " +
               std::to_string(s.teacher_runs) + " teacher runs, " +
               std::to_string(s.teacher_detections) + " detections; expected " +
               std::to_string(frames) + ", " + std::to_string(frames) + ", " +
               std::to_string(frames * given));
    const vision::DroppedBoxes &d = s.dropped, &e = teacher.dropped;
    if (d.not_finite != e.not_finite || d.outside != e.outside || d.too_small != e.too_small)
        broken(run + "dropped " + d.summary(minSide) + " (" + std::to_string(d.total()) +
               "); expected " + e.summary(minSide) + " (" + std::to_string(e.total()) + ")");
    int teacherBoxes = 0;
    for (const vision::Track &t : r.tracks) {
        if (t.boxes.empty())
            broken(run + "track " + std::to_string(t.id) + " without boxes");
        int last = -1;
        for (const vision::TrackBox &b : t.boxes) {
            if (b.frame <= last || b.frame >= frames)
                broken(run + "track " + std::to_string(t.id) + ": frame " +
                       std::to_string(b.frame) + " out of order or outside the clip");
            last = b.frame;
            if (!vision::BoxGuard::check(b.box, r.frame_size).ok())
                broken(run + "a track box the guard refuses", b.box, r.frame_size);
            if (!std::isfinite(b.confidence))
                broken(run + "a track box's confidence not finite", b.box, r.frame_size);
        }
        teacherBoxes += t.teacherBoxes();
    }
    // Every teacher box of a track is a detection that passed the guard (at most one a frame).
    if (teacherBoxes > s.teacher_detections - d.total() ||
        int(r.tracks.size()) > s.teacher_detections - d.total())
        broken(run + std::to_string(r.tracks.size()) + " tracks with " +
               std::to_string(teacherBoxes) + " teacher boxes from " +
               std::to_string(s.teacher_detections - d.total()) + " detections kept");
    if (s.tracks + s.rejected_tracks != int(r.tracks.size()))
        broken(run + "accepted and rejected tracks do not add up to the tracks");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***)
{
    cv::setNumThreads(0); // one thread: repeatable runs, and the machine's cores for the fuzzer
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    if (size == 0)
        return 0;
    Reader in{data, size};
    const int width = 1 + int(in.le16() % kMaxWidth_px);
    const int height = 1 + int(in.le16() % kMaxHeight_px);
    const cv::Mat image = content({width, height}, in.byte());
    const std::vector<std::string> names = vision::trackerNames();
    const std::string &tracker = names[in.byte() % names.size()];
    const double scale = 0.25 + 0.75 * in.byte() / 255.0;
    const double minSide = double(std::int8_t(in.byte())) / 4.0;
    const std::uint8_t motion = in.byte();
    const int dx = (motion & 7) - 4, dy = ((motion >> 3) & 7) - 4;
    const int steps = 1 + ((motion >> 6) & 1);
    const std::uint8_t labelling = in.byte();
    const int frames = std::min(3 + (labelling & 3), budget(tracker).maxFrames);
    const double trackScale = 0.1 + 0.9 * (labelling >> 2) / 63.0;

    std::vector<Box> boxes;
    while (in.size > 0 && int(boxes.size()) < kMaxBoxes) {
        const std::uint8_t mode = in.byte();
        Box b;
        if (mode & 1) {
            b.box.x = in.quarters();
            b.box.y = in.quarters();
            b.box.width = in.quarters();
            b.box.height = in.quarters();
        } else {
            b.box.x = in.raw();
            b.box.y = in.raw();
            b.box.width = in.raw();
            b.box.height = in.raw();
        }
        b.score = float(mode >> 1) / 127.0f;
        boxes.push_back(b);
    }

    // The trackers' image, made as the labeller makes it; none when the frame would vanish
    // (cv::resize rounds its size half to even, and asserts on an empty one).
    cv::Mat small;
    if (cvRound(width * scale) >= 1 && cvRound(height * scale) >= 1) {
        if (scale < 1.0)
            cv::resize(image, small, cv::Size(), scale, scale, cv::INTER_AREA);
        else
            small = image;
    }
    const vision::LabelOptions options;
    const std::string at = tracker + " at scale " + std::to_string(scale);
    int followers = budget(tracker).followers;
    for (const Box &b : boxes) {
        guarded(b.box, image, minSide);
        guarded(b.box, image, vision::BoxGuard::kTrackerMinSide_px);
        if (small.empty())
            continue;
        // start() guards the box at the trackers' scale itself: what it refuses reaches no
        // tracker (a false start, no OpenCV), the rest is followed for a step or two.
        const cv::Rect2d atScale(b.box.x * scale, b.box.y * scale, b.box.width * scale,
                                 b.box.height * scale);
        const bool fits = guarded(atScale, small, vision::BoxGuard::kTrackerMinSide_px).ok();
        if (fits && followers-- <= 0)
            continue;
        vision::TrackFollower follower;
        if (!follower.start(tracker, small, b.box, 0, scale)) {
            if (follower.error().empty())
                broken("a false start without an error, " + at, b.box, image.size());
            continue;
        }
        if (!fits)
            broken("started on a box refused at the trackers' scale, " + at, b.box, image.size());
        if (follower.box() != b.box)
            broken("a started follower moved the box, " + at, b.box, image.size());
        for (int s = 1; s <= steps; ++s) {
            float confidence = -1.0f;
            const auto verdict =
                follower.step(shifted(small, s * dx, s * dy), s, options, &confidence);
            if (verdict == vision::TrackFollower::Verdict::Failed && follower.error().empty())
                broken("Verdict::Failed without an error, " + at, b.box, image.size());
            if (verdict != vision::TrackFollower::Verdict::Ok)
                break;
            if (!vision::BoxGuard::check(follower.box(), image.size()).ok())
                broken("a tracked box the guard refuses, " + at, follower.box(), image.size());
            if (!(confidence >= 0.0f && confidence <= 1.001f))
                broken("a confidence of " + std::to_string(confidence) + ", " + at, b.box,
                       image.size());
        }
    }

    label(image, boxes, tracker, frames, dx, dy, trackScale);
    return 0;
}

// The full-frame student on a video the test draws itself, with known boxes: moving coloured
// rectangles on a fixed textured background. The frame dataset (boxes scaled, ignore regions,
// time-block split, the max_frame bound, augmentation that moves boxes with the pixels, a rebuild
// killed at each step reading as one dataset), a student trained for a few epochs that finds the
// rectangles on later frames, and boxes mapped back to source pixels.

#include "../support/killedrebuild.h"
#include "core/detectionloss.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/safetensors.h"
#include "vision/datasetfolder.h"
#include "vision/framedataset.h"
#include "vision/framesource.h"
#include "vision/framestudent.h"
#include "vision/framestudenttrainer.h"
#include "vision/labeling.h"
#include "vision/operatingpoint.h"
#include "vision/studentteacher.h"

#include <QDir>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

using namespace edgetrain;
using namespace edgetrain::vision;

namespace {

/** A rectangle crossing the frame: x = x0 + vx * f (wrapping), fixed y and size. */
struct Mover
{
    double x0, y, vx, w, h;
    cv::Scalar colour; // saturated red, green or blue: recognisable after colour jitter

    cv::Rect2d box(int f, cv::Size frame) const
    {
        const double span = frame.width + w;
        double x = std::fmod(x0 + vx * f, span);
        if (x < 0)
            x += span;
        return {x - w, y, w, h};
    }
};

struct Scene
{
    cv::Size size{160, 120};
    int frames = 160;
    std::vector<Mover> movers{{10, 20, 1.3, 18, 36, cv::Scalar(0, 0, 230)},
                              {90, 60, -1.1, 22, 44, cv::Scalar(0, 220, 0)},
                              {50, 8, 0.8, 16, 30, cv::Scalar(230, 0, 0)}};

    /** Boxes wholly inside the frame (the ones a test asks the student to find). */
    std::vector<cv::Rect2d> boxes(int f) const
    {
        std::vector<cv::Rect2d> out;
        for (const Mover &m : movers) {
            const cv::Rect2d b = m.box(f, size);
            if (b.x >= 0 && b.x + b.width <= size.width)
                out.push_back(b);
        }
        return out;
    }

    cv::Mat draw(int f) const
    {
        cv::Mat img(size, CV_8UC3);
        for (int y = 0; y < size.height; ++y)
            for (int x = 0; x < size.width; ++x) {
                const int v = 100 + int(35 * std::sin(x * 0.11) * std::cos(y * 0.07)) +
                              ((x * 7 + y * 13) % 11);
                img.at<cv::Vec3b>(y, x) = cv::Vec3b(uchar(v), uchar(v), uchar(v + 8));
            }
        for (const Mover &m : movers) {
            const cv::Rect2d b = m.box(f, size);
            cv::rectangle(img, cv::Rect(b), m.colour, cv::FILLED);
        }
        return img;
    }

    std::string write(const QString &dir) const
    {
        const std::string path = (dir + QStringLiteral("/scene")).toStdString();
        std::filesystem::create_directories(path);
        for (int f = 0; f < frames; ++f) {
            char name[64];
            std::snprintf(name, sizeof name, "/%05d.png", f);
            cv::imwrite(path + name, draw(f));
        }
        return path;
    }

    /** Labels as the Labeler would make them: one accepted track per mover (teacher boxes),
     *  so the dataset sees exactly the drawn boxes. */
    LabelResult labels(int upTo) const
    {
        LabelResult r;
        r.frame_size = size;
        r.stats.frames = upTo;
        for (std::size_t i = 0; i < movers.size(); ++i) {
            Track t;
            t.id = int(i);
            for (int f = 0; f < upTo; ++f) {
                const cv::Rect2d b = movers[i].box(f, size);
                const cv::Rect2d visible = b & cv::Rect2d(0, 0, size.width, size.height);
                if (visible.area() > 0)
                    t.boxes.push_back({f, visible, BoxSource::Teacher, 1.0f});
            }
            r.tracks.push_back(std::move(t));
        }
        return r;
    }
};

/** The figures of a frame dataset, all of them, as one line to compare. */
QString describe(const FrameDatasetStats &s)
{
    return QStringLiteral("%1x%2 every %3 round %4: frames %5/%6, samples %7/%8, objects %9/%10, "
                          "ignores %11/%12, %13 backgrounds, %14 s")
        .arg(s.input.width)
        .arg(s.input.height)
        .arg(s.every)
        .arg(s.round)
        .arg(s.frames[0])
        .arg(s.frames[1])
        .arg(s.samples[0])
        .arg(s.samples[1])
        .arg(s.objects[0])
        .arg(s.objects[1])
        .arg(s.ignores[0])
        .arg(s.ignores[1])
        .arg(s.backgrounds)
        .arg(s.seconds, 0, 'g', 17);
}

/** The names in a folder. */
std::set<std::string> entries(const std::filesystem::path &dir)
{
    std::set<std::string> out;
    for (const auto &e : std::filesystem::directory_iterator(dir))
        out.insert(e.path().filename().string());
    return out;
}

double bestIou(const cv::Rect2d &b, const std::vector<Detection> &found)
{
    double best = 0;
    for (const Detection &d : found)
        best = std::max(best, iou(b, d.box));
    return best;
}

/** A detector with known scores on the scene: each labelled box of the first two movers at 0.6,
 *  the third mover's at 0.25, a false box at 0.4 in an empty corner, and one at 0.9 on the rejected
 *  track's region (which must count neither way). Knows the frame by its pixels (PNG: exact). */
class ScriptedDetector : public Teacher
{
public:
    ScriptedDetector(const Scene &scene, const LabelResult &labels)
        : m_scene(scene), m_labels(labels)
    {}
    std::string name() const override { return "scripted"; }
    std::vector<Detection> detect(const cv::Mat &bgr) override
    {
        int frame = -1;
        for (int f = 0; f < m_scene.frames && frame < 0; ++f)
            if (cv::norm(bgr, m_scene.draw(f), cv::NORM_INF) == 0)
                frame = f;
        std::vector<Detection> out;
        if (frame < 0)
            return out;
        seen.push_back(frame);
        for (std::size_t i = 0; i < m_labels.tracks.size(); ++i)
            if (const TrackBox *b = m_labels.tracks[i].at(frame))
                out.push_back({b->box, i < 2 ? 0.6f : i == 2 ? 0.25f : 0.9f, 0});
        out.push_back({cv::Rect2d(140, 100, 12, 12), 0.4f, 0});
        std::erase_if(out, [&](const Detection &d) { return d.score < threshold; });
        return out;
    }
    std::vector<int> seen;

private:
    const Scene &m_scene;
    const LabelResult &m_labels;
};

} // namespace

class TestFrameStudent : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void datasetScalesBoxesAndSplitsByTime();
    void datasetIgnoresUncertainBoxes();
    void oneObjectIsOneTarget();
    void augmentationMovesBoxesWithPixels();
    void pastedObjectsFollowTheGroundPlane();
    void loadsAsDetectionTensors();
    void killedRebuildReadsAsOneDataset_data();
    void killedRebuildReadsAsOneDataset();
    void replaceStoppedBetweenRenamesKeepsTheOldDataset();
    void studentFindsRectanglesOnLaterFrames();
    void boxesMapBackToSourcePixels();
    void mirrorViewsAreFused();
    void labelsKeepStudentBoxes();
    void operatingPointWeighsPrecisionAgainstTheLabels();
    void operatingThresholdTravelsWithTheWeights();

private:
    QTemporaryDir m_dir;
    Scene m_scene;
    std::map<QString, FrameDatasetStats> m_rebuilt; // killedRebuild...: "A", "B", "C" by session
    std::string m_source;
    std::shared_ptr<core::Model> m_model; // trained by studentFindsRectanglesOnLaterFrames
};

void TestFrameStudent::initTestCase()
{
    core::setThreadCount(2);
    m_source = m_scene.write(m_dir.path());
}

void TestFrameStudent::datasetScalesBoxesAndSplitsByTime()
{
    auto source = FrameSource::open(m_source);
    const std::string session = (m_dir.path() + "/plain").toStdString();
    FrameDatasetOptions o;
    o.width = 128; // 160x120 -> 128x96: boxes scale by 0.8
    o.every = 1;
    o.augmented = 0;
    o.block_frames = 20;
    o.validation_period = 4;
    o.max_frame = 120;
    const FrameDatasetStats s = FrameDataset::build(session, m_scene.labels(140), *source, o);
    QCOMPARE(s.input, cv::Size(128, 96));
    QCOMPARE(s.frames[0] + s.frames[1], 120); // never past max_frame
    QVERIFY(s.backgrounds > 0);
    cv::Size input;
    const auto samples = FrameDataset::index(session, &input);
    QCOMPARE(input, cv::Size(128, 96));
    int validation = 0;
    for (const FrameSample &x : samples) {
        QVERIFY(x.frame < 120);
        if (x.frame < 0) {
            QVERIFY(x.boxes.empty()); // the background: a sample with no objects
            QCOMPARE(x.split, Split::Train);
            continue;
        }
        // blocks of 20 frames, the third of every four is validation: frames 40-59, 120-...
        const bool val = (x.frame / 20) % 4 == 2;
        QCOMPARE(x.split, val ? Split::Validation : Split::Train);
        validation += val;
        std::vector<cv::Rect2d> want;
        for (const Track &t : m_scene.labels(140).tracks)
            if (const TrackBox *b = t.at(x.frame); b && b->box.width * 0.8 >= 1.0)
                want.push_back(b->box); // a sliver under a pixel at the input is dropped
        QCOMPARE(x.boxes.size(), want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
            const core::LabelBox &b = x.boxes[i];
            QVERIFY(std::abs(b.x0 - 0.8 * want[i].x) < 1e-3);
            QVERIFY(std::abs(b.y1 - 0.8 * (want[i].y + want[i].height)) < 1e-3);
        }
        // the sample's pixels are the frame's, resized
        if (x.frame == 7) {
            const cv::Mat png = cv::imread((session + "/frames/" + x.file));
            cv::Mat expect;
            cv::resize(m_scene.draw(7), expect, input, 0, 0, cv::INTER_AREA);
            QCOMPARE(cv::norm(png, expect, cv::NORM_INF), 0.0);
        }
    }
    QCOMPARE(validation, 20);
}

void TestFrameStudent::datasetIgnoresUncertainBoxes()
{
    auto source = FrameSource::open(m_source);
    const std::string session = (m_dir.path() + "/ignore").toStdString();
    LabelResult labels = m_scene.labels(60);
    labels.tracks[1].state = Track::State::Rejected;
    for (TrackBox &b : labels.tracks[2].boxes)
        if (b.frame % 2)
            b = {b.frame, b.box, BoxSource::Tracker, 0.1f}; // an unsure tracker box
    labels.cuts = {30};
    FrameDatasetOptions o;
    o.width = 128;
    o.every = 1;
    o.augmented = 0;
    o.validation_period = 0;
    o.cut_margin = 2;
    FrameDataset::build(session, labels, *source, o);
    int checked = 0;
    for (const FrameSample &x : FrameDataset::index(session)) {
        if (x.frame < 0)
            continue;
        QVERIFY2(std::abs(x.frame - 30) > 2, "a frame next to a scene cut was used");
        for (std::size_t i = 0; i < labels.tracks.size(); ++i) {
            const TrackBox *b = labels.tracks[i].at(x.frame);
            if (!b)
                continue;
            const float x0 = float(0.8 * b->box.x);
            const auto it = std::find_if(x.boxes.begin(), x.boxes.end(), [&](const auto &l) {
                return std::abs(l.x0 - x0) < 1e-3 && std::abs(l.y0 - 0.8 * b->box.y) < 1e-3;
            });
            QVERIFY(it != x.boxes.end());
            const bool ignore = i == 1 || (i == 2 && x.frame % 2);
            QCOMPARE(it->ignore, ignore);
            ++checked;
        }
    }
    QVERIFY(checked > 100);
}

void TestFrameStudent::oneObjectIsOneTarget()
{
    // Two tracks on one face (the cascade fired at two scales): A confirmed by the teacher at
    // frames 10 and 12, B at 18 and 20; both carried by the tracker over frames 10-20. C is a
    // neighbour overlapping A a little, D a rejected track over A.
    const auto track = [](int id, std::vector<int> teacherAt, cv::Rect2d box, int from, int to) {
        Track t;
        t.id = id;
        for (int f = from; f <= to; ++f) {
            const bool teacher =
                std::find(teacherAt.begin(), teacherAt.end(), f) != teacherAt.end();
            t.boxes.push_back(
                {f, box, teacher ? BoxSource::Teacher : BoxSource::Tracker, teacher ? 4.0f : 0.9f});
        }
        return t;
    };
    LabelResult labels;
    labels.tracks.push_back(track(0, {10, 12}, {100, 100, 60, 80}, 10, 20));
    labels.tracks.push_back(track(1, {18, 20}, {110, 112, 40, 60}, 10, 20)); // inside A
    labels.tracks.push_back(track(2, {10, 20}, {145, 100, 60, 80}, 10, 20)); // IoU 0.14 with A
    labels.tracks.push_back(track(3, {}, {102, 98, 60, 80}, 10, 20));
    labels.tracks[3].state = Track::State::Rejected;
    const auto ignored = [&](int frame, const FrameDatasetOptions &o) {
        std::vector<bool> out;
        for (const core::LabelBox &b : FrameDataset::frameBoxes(labels, frame, o))
            out.push_back(b.ignore);
        return out;
    };
    using Flags = std::vector<bool>;
    FrameDatasetOptions o;
    // The teacher's own box wins; then the track whose teacher box is nearer in time.
    QCOMPARE(ignored(10, o), (Flags{false, true, false, true}));
    QCOMPARE(ignored(13, o), (Flags{false, true, false, true}));
    QCOMPARE(ignored(17, o), (Flags{true, false, false, true}));
    QCOMPARE(ignored(20, o), (Flags{true, false, false, true}));
    // Two overlapping tracks with IoU >= 0.5, neither 80 % inside the other: the same rule.
    labels.tracks[1] = track(1, {18, 20}, {114, 100, 60, 80}, 10, 20); // IoU 0.62, 77 % inside
    QCOMPARE(ignored(13, o), (Flags{false, true, false, true}));
    QCOMPARE(ignored(17, o), (Flags{true, false, false, true}));
    // Equally near (3 frames): the track the teacher confirmed more often, B, though A is first.
    labels.tracks[1] = track(1, {18, 19, 20}, {114, 100, 60, 80}, 10, 20);
    QCOMPARE(ignored(15, o), (Flags{true, false, false, true}));
    // A box more than twice smaller deep inside another (a fragment of a person, or a face
    // inside its head and shoulders): the labels disagree on what is there; neither is trusted.
    labels.tracks[1] = track(1, {18, 20}, {120, 130, 20, 30}, 10, 20); // 1/8 of A's area
    QCOMPARE(ignored(13, o), (Flags{true, true, false, true}));
    QCOMPARE(ignored(20, o), (Flags{true, true, false, true}));
    int same = 0;
    FrameDataset::frameBoxes(labels, 20, o, &same);
    QCOMPARE(same, 2);
    // A fixed camera's ground plane settles it: the box as tall as an object standing there.
    GroundPlane plane;
    plane.usable = true;
    plane.slope = 0.4; // A: bottom row 180, 80 px tall; B: bottom row 160, 30 px
    plane.offset = 8.0;
    const auto settled = [&](int frame) {
        std::vector<bool> out;
        same = 0;
        for (const core::LabelBox &b : FrameDataset::frameBoxes(labels, frame, o, &same, &plane))
            out.push_back(b.ignore);
        return out;
    };
    QCOMPARE(settled(13), (Flags{false, true, false, true}));
    QCOMPARE(settled(20), (Flags{false, true, false, true})); // the teacher's box or not
    QCOMPARE(same, 1);
    plane.slope = 0.15; // now B stands on the floor (30 px at row 160), A does not
    plane.offset = 6.0;
    QCOMPARE(settled(13), (Flags{true, false, false, true}));
    QCOMPARE(settled(20), (Flags{true, false, false, true}));
    plane.slope = 1.0; // neither within 50 % (A 200 px, B 180 px expected): neither trusted
    plane.offset = 20.0;
    QCOMPARE(settled(13), (Flags{true, true, false, true}));
    plane.usable = false;
    plane.slope = 0.4;
    QCOMPARE(settled(13), (Flags{true, true, false, true}));
    // The spot stays disputed: E, a third box of A's size on A's spot, is given up too; on the
    // floor by the plane, A and E are one object and the nested B goes.
    labels.tracks.push_back(track(4, {}, {102, 100, 60, 80}, 10, 20));
    QCOMPARE(settled(13), (Flags{true, true, false, true, true}));
    QCOMPARE(same, 3);
    plane.usable = true;
    QCOMPARE(settled(13), (Flags{false, true, false, true, true}));
    QCOMPARE(same, 2);
    o.same_object_iou = 0.0; // off: every accepted box is an object
    QCOMPARE(ignored(16, o), (Flags{false, false, false, true, false}));
}

void TestFrameStudent::augmentationMovesBoxesWithPixels()
{
    auto source = FrameSource::open(m_source);
    const std::string session = (m_dir.path() + "/augmented").toStdString();
    FrameDatasetOptions o;
    o.width = 128;
    o.every = 4;
    o.augmented = 3;
    o.validation_period = 0;
    const auto s = FrameDataset::build(session, m_scene.labels(80), *source, o);
    QCOMPARE(s.samples[0], 20 * 4 + s.backgrounds);
    int objects = 0;
    for (const FrameSample &x : FrameDataset::index(session)) {
        const cv::Mat image = cv::imread(session + "/frames/" + x.file);
        for (const core::LabelBox &b : x.boxes) {
            if (b.ignore)
                continue;
            // the box's centre shows a saturated rectangle: one channel far above the others
            // (at one of its 3x3 pixels: at scale 0.7 a pixel between two touching rectangles
            // is a blend of both)
            const int cx = int((b.x0 + b.x1) / 2), cy = int((b.y0 + b.y1) / 2);
            int hi = 0, lo = 0;
            cv::Vec3b p;
            for (int dy = -1; dy <= 1; ++dy)
                for (int dx = -1; dx <= 1; ++dx) {
                    const cv::Vec3b q = image.at<cv::Vec3b>(std::clamp(cy + dy, 0, image.rows - 1),
                                                            std::clamp(cx + dx, 0, image.cols - 1));
                    const int h = std::max({q[0], q[1], q[2]}), l = std::min({q[0], q[1], q[2]});
                    if (h - l > hi - lo || (dx == -1 && dy == -1)) {
                        hi = h;
                        lo = l;
                        p = q;
                    }
                }
            QVERIFY2(hi - lo > 100,
                     qPrintable(QStringLiteral("sample %1: box centre (%2, %3) "
                                               "is not on a rectangle (BGR %4 %5 %6)")
                                    .arg(QString::fromStdString(x.file))
                                    .arg(double(b.x0 + b.x1) / 2)
                                    .arg(double(b.y0 + b.y1) / 2)
                                    .arg(p[0])
                                    .arg(p[1])
                                    .arg(p[2])));
            ++objects;
        }
    }
    QVERIFY(objects > 100);
}

void TestFrameStudent::pastedObjectsFollowTheGroundPlane()
{
    // The scene's three rectangles stand on a ground plane: bottoms 38, 56 and 104 px, heights
    // 30, 36 and 44 (about 0.2 px taller per row lower). Copies with rectangles cut from other
    // frames pasted on them show rectangles at rows none of them reached (bottoms 104-120), at
    // the heights the plane gives there.
    auto source = FrameSource::open(m_source);
    const std::string session = (m_dir.path() + "/pasted").toStdString();
    FrameDatasetOptions o;
    o.width = 128; // x 0.8
    o.every = 2;
    o.augmented = 2;
    o.pasted = 1;
    o.validation_period = 0;
    const auto s = FrameDataset::build(session, m_scene.labels(120), *source, o);
    const GroundPlane &g = s.ground;
    QVERIFY(g.usable);
    for (const Mover &m : m_scene.movers)
        QVERIFY2(std::abs(g.heightAt(m.y + m.h) - m.h) < 3.0,
                 qPrintable(QStringLiteral("plane %1 x bottom + %2 gives %3 at row %4, not %5")
                                .arg(g.slope)
                                .arg(g.offset)
                                .arg(g.heightAt(m.y + m.h))
                                .arg(m.y + m.h)
                                .arg(m.h)));
    QVERIFY(s.cutouts > 10);
    QVERIFY(s.pasted >= 60);                           // 60 training frames, one to three each
    const auto counted = FrameDataset::stats(session); // what the index says: the same
    QVERIFY(counted);
    QCOMPARE(counted->pasted, s.pasted);
    QCOMPARE(counted->cutouts, s.cutouts);
    QCOMPARE(counted->ground.slope, g.slope);
    QCOMPARE(counted->ground.usable, true);

    const auto samples = FrameDataset::index(session);
    int pasted = 0, lower = 0;
    for (std::size_t i = 0; i + 1 < samples.size(); ++i) {
        const FrameSample &frame = samples[i], &copy = samples[i + 1];
        if (frame.frame < 0 || copy.frame != frame.frame || i % 3 != 0)
            continue; // the frame itself, then its pasted copy, then its jittered one
        QVERIFY(copy.pasted > 0);
        QCOMPARE(copy.boxes.size(), frame.boxes.size() + std::size_t(copy.pasted));
        QVERIFY(
            std::equal(frame.boxes.begin(), frame.boxes.end(), copy.boxes.begin(),
                       [](const auto &a, const auto &b) { return a.x0 == b.x0 && a.y1 == b.y1; }));
        const cv::Mat image = cv::imread(session + "/frames/" + copy.file);
        for (std::size_t k = frame.boxes.size(); k < copy.boxes.size(); ++k) {
            const core::LabelBox &b = copy.boxes[k];
            QVERIFY(!b.ignore);
            const double bottom = b.y1 / 0.8, height = (b.y1 - b.y0) / 0.8;
            QVERIFY2(height >= 0.89 * g.heightAt(bottom) && height <= 1.11 * g.heightAt(bottom),
                     qPrintable(QStringLiteral("%1 px tall at row %2").arg(height).arg(bottom)));
            // ... and a rectangle is really there: most of the box is one saturated colour
            const cv::Rect r(int(std::ceil(b.x0)), int(std::ceil(b.y0)),
                             int(std::floor(b.x1)) - int(std::ceil(b.x0)),
                             int(std::floor(b.y1)) - int(std::ceil(b.y0)));
            int saturated = 0;
            for (int y = r.y; y < r.y + r.height; ++y)
                for (int x = r.x; x < r.x + r.width; ++x) {
                    const cv::Vec3b q = image.at<cv::Vec3b>(y, x);
                    saturated += std::max({q[0], q[1], q[2]}) - std::min({q[0], q[1], q[2]}) > 100;
                }
            QVERIFY2(saturated > 0.6 * r.area(),
                     qPrintable(QStringLiteral("%1: pasted box at (%2, %3) shows %4 of %5 "
                                               "rectangle pixels")
                                    .arg(QString::fromStdString(copy.file))
                                    .arg(r.x)
                                    .arg(r.y)
                                    .arg(saturated)
                                    .arg(r.area())));
            ++pasted;
            lower += bottom > 104.0;
        }
    }
    QVERIFY(pasted >= 60);
    QVERIFY2(lower >= 10,
             qPrintable(QStringLiteral("%1 of %2 below every mover").arg(lower).arg(pasted)));

    // Without a ground plane (everything at one row) nothing is pasted, and the copies are
    // jittered as before.
    Scene flat = m_scene;
    for (Mover &m : flat.movers) {
        m.y = 40;
        m.h = 36;
    }
    QTemporaryDir flatDir;
    auto flatSource = FrameSource::open(flat.write(flatDir.path()));
    const auto f = FrameDataset::build((flatDir.path() + "/s").toStdString(), flat.labels(120),
                                       *flatSource, o);
    QVERIFY(!f.ground.usable);
    QCOMPARE(f.pasted, 0);
    QCOMPARE(f.samples[0], 60 * 3 + f.backgrounds);

    // A video with a scene cut has no one background or floor: nothing pasted either.
    LabelResult cut = m_scene.labels(120);
    cut.cuts = {60};
    const auto c =
        FrameDataset::build((m_dir.path() + "/pasted-cut").toStdString(), cut, *source, o);
    QCOMPARE(c.pasted, 0);
    QCOMPARE(c.ground.boxes, 0);

    // Heights that do not follow the rows (a line explaining little of them): no plane.
    std::vector<cv::Rect2d> scattered;
    for (int i = 0; i < 40; ++i) { // bottoms at rows 70-109, heights 25 or 60 in turn
        const double h = i % 2 ? 60.0 : 25.0;
        scattered.push_back({10.0, 70.0 + i - h, 10.0, h});
    }
    const GroundPlane loose = GroundPlane::fit(scattered, m_scene.size);
    QVERIFY2(!loose.usable && loose.r2 < 0.3, qPrintable(QString::number(loose.r2)));
}

void TestFrameStudent::loadsAsDetectionTensors()
{
    const std::string session = (m_dir.path() + "/plain").toStdString();
    const core::TensorDataset train = FrameDataset::load(session, Split::Train, 32);
    const core::TensorDataset val = FrameDataset::load(session, Split::Validation, 32);
    QCOMPARE(train.labelWidth(), core::DetectionLoss::labelWidth(32));
    QCOMPARE(val.size(), std::int64_t(20));
    QCOMPARE(train.sampleShape(), (core::Shape{3, 96, 128}));
    const auto samples = FrameDataset::index(session);
    std::int64_t i = 0;
    for (const FrameSample &x : samples) {
        if (x.split != Split::Train)
            continue;
        const auto boxes =
            core::DetectionLoss::decodeLabels(train.labels().data() + i * train.labelWidth(), 32);
        QCOMPARE(boxes.size(), x.boxes.size()); // (in the label, objects by size first)
        for (const core::LabelBox &b : boxes)
            QVERIFY(std::any_of(x.boxes.begin(), x.boxes.end(), [&](const core::LabelBox &s) {
                const float eps = 1.0f / core::DetectionLoss::kSubpixel;
                return std::abs(b.x0 - s.x0) <= eps && std::abs(b.x1 - s.x1) <= eps &&
                       std::abs(b.y0 - s.y0) <= eps && std::abs(b.y1 - s.y1) <= eps &&
                       b.ignore == s.ignore;
            }));
        ++i;
    }
    QCOMPARE(i, train.size());
    QVERIFY_THROWS_EXCEPTION(
        core::IoError,
        FrameDataset::load((m_dir.path() + "/none").toStdString(), Split::Train, 32));
}

void TestFrameStudent::killedRebuildReadsAsOneDataset_data()
{
    // What a rebuild of dataset A into B (DatasetFolder) leaves when killed at each step: the
    // folders frames, frames.old and frames.tmp, each holding A or B, whole or part written (or
    // part deleted: no index.json, half the images), and which dataset must be read.
    tests::addKilledRebuildRows();
}

void TestFrameStudent::killedRebuildReadsAsOneDataset()
{
    namespace fs = std::filesystem;
    QFETCH(QString, folder);
    QFETCH(QString, old);
    QFETCH(QString, staging);
    QFETCH(QString, read);
    auto source = FrameSource::open(m_source);
    // A (round 1), B (a self-training round's: round 2) and C differ in every count.
    auto build = [&](const QString &name, int upTo, int every, int augmented, int round,
                     const std::string &session) {
        LabelResult labels = m_scene.labels(upTo);
        labels.round = round;
        FrameDatasetOptions o;
        o.width = 128;
        o.every = every;
        o.augmented = augmented;
        m_rebuilt[name] = FrameDataset::build(session, labels, *source, o);
    };
    const fs::path built = (m_dir.path() + "/rebuilt").toStdString();
    if (m_rebuilt.empty()) {
        build("A", 60, 4, 1, 1, (built / "A").string());
        build("B", 100, 2, 0, 2, (built / "B").string());
    }
    const fs::path session = (m_dir.path() + "/killed " + QTest::currentDataTag()).toStdString();
    fs::create_directories(session);
    auto place = [&](const QString &what, const char *name) {
        if (what.isEmpty())
            return;
        const fs::path to = session / name;
        fs::copy(built / what.left(1).toStdString() / "frames", to, fs::copy_options::recursive);
        if (!what.endsWith(QLatin1String("part")))
            return;
        std::vector<fs::path> files;
        for (const auto &e : fs::directory_iterator(to))
            if (e.path().filename() != "index.json")
                files.push_back(e.path());
        std::sort(files.begin(), files.end());
        fs::remove(to / "index.json");
        for (std::size_t i = 0; i < files.size(); i += 2)
            fs::remove(files[i]);
    };
    place(folder, "frames");
    place(old, "frames.old");
    place(staging, "frames.tmp");

    const FrameDatasetStats &want = m_rebuilt.at(read);
    const auto stats = FrameDataset::stats(session.string());
    QVERIFY2(stats, "no dataset found");
    QCOMPARE(describe(*stats), describe(want)); // as build() said, counted from the index
    QCOMPARE(int(FrameDataset::index(session.string()).size()), want.samples[0] + want.samples[1]);
    QCOMPARE(FrameDataset::load(session.string(), Split::Train, 32).size(),
             std::int64_t(want.samples[0])); // every image is there

    // The next build replaces it and removes what the kill left.
    build("C", 40, 8, 0, 1, session.string());
    QCOMPARE(describe(*FrameDataset::stats(session.string())), describe(m_rebuilt.at("C")));
    QCOMPARE(entries(session), std::set<std::string>{"frames"});
}

void TestFrameStudent::replaceStoppedBetweenRenamesKeepsTheOldDataset()
{
    // The order of the renames: a replace that stops after its first step, as a kill would stop
    // it (here the staging folder is missing, so the rename that moves it in throws), still
    // leaves the old dataset to read.
    namespace fs = std::filesystem;
    auto source = FrameSource::open(m_source);
    const std::string session = (m_dir.path() + "/stopped").toStdString();
    FrameDatasetOptions o;
    o.width = 128;
    o.every = 8;
    o.augmented = 0;
    const FrameDatasetStats old = FrameDataset::build(session, m_scene.labels(40), *source, o);
    const DatasetFolder folder(fs::path(session) / "frames", fs::path(session) / "frames.tmp");
    QVERIFY_THROWS_EXCEPTION(fs::filesystem_error, folder.replace());
    const auto stats = FrameDataset::stats(session);
    QVERIFY2(stats, "no dataset found");
    QCOMPARE(describe(*stats), describe(old));
}

void TestFrameStudent::studentFindsRectanglesOnLaterFrames()
{
    auto source = FrameSource::open(m_source);
    const std::string session = (m_dir.path() + "/train").toStdString();
    FrameDatasetOptions o;
    o.width = 128;
    o.every = 2;
    o.augmented = 1;
    o.validation_period = 0;
    o.max_frame = 120;
    const auto s = FrameDataset::build(session, m_scene.labels(120), *source, o);
    m_model = std::make_shared<core::Model>(FrameStudentTrainer::spec(s.input), 7);
    FrameTrainOptions t;
    t.epochs = 6;
    t.batch = 8;
    t.lr = 0.03;
    const auto r = FrameStudentTrainer::train(*m_model, session, t);
    QCOMPARE(int(r.epochs.size()), 6);
    QVERIFY(r.epochs.back().train_loss < r.epochs.front().train_loss);

    FrameStudent student(*m_model);
    int truths = 0, found = 0, detections = 0, correct = 0;
    for (int f = 120; f < m_scene.frames; f += 2) {
        const auto dets = student.detect(m_scene.draw(f), 0.3f);
        const auto want = m_scene.boxes(f);
        truths += int(want.size());
        for (const cv::Rect2d &b : want)
            found += bestIou(b, dets) >= 0.5;
        const cv::Rect2d frame(0, 0, m_scene.size.width, m_scene.size.height);
        for (const Detection &d : dets) {
            ++detections;
            bool ok = false;
            for (const Mover &m : m_scene.movers) // a box cut by the border is fine too
                ok = ok || iou(d.box, m.box(f, m_scene.size) & frame) >= 0.5;
            correct += ok;
        }
    }
    const double recall = double(found) / truths, precision = double(correct) / detections;
    qInfo("student on frames 120-159: recall %.3f (%d/%d), precision %.3f (%d/%d)", recall, found,
          truths, precision, correct, detections);
    QVERIFY(recall >= 0.8);
    QVERIFY(precision >= 0.8);
}

void TestFrameStudent::mirrorViewsAreFused()
{
    using core::DecodedBox;
    // A person seen in both views (boxes a little apart), one seen only in the frame, and in the
    // mirror a weaker second box on the first person.
    const std::vector<DecodedBox> frame{{10, 10, 30, 60, 0.8f}, {100, 20, 120, 70, 0.5f}};
    const std::vector<DecodedBox> mirrored{{12, 10, 32, 60, 0.4f}, {11, 12, 31, 62, 0.2f}};
    const auto fused = FrameStudent::fuseViews(frame, mirrored, 0.55);
    QCOMPARE(int(fused.size()), 3);
    // The pair: the mean score, the box weighted 2:1 towards the stronger view.
    QCOMPARE(fused[0].score, 0.6f);
    QVERIFY(std::abs(fused[0].x0 - (10 * 2 + 12) / 3.0f) < 1e-4f);
    QVERIFY(std::abs(fused[0].x1 - (30 * 2 + 32) / 3.0f) < 1e-4f);
    // Alone in one view: half its score, its box unchanged.
    QCOMPARE(fused[1].score, 0.25f);
    QCOMPARE(fused[1].x0, 100.0f);
    // The mirror's second box on the first person has no partner left: half its score (the
    // non-maximum suppression after the fusion removes it).
    QCOMPARE(fused[2].score, 0.1f);
    // Nothing in the other view at all: every box keeps half its score.
    for (const DecodedBox &b : FrameStudent::fuseViews(frame, {}, 0.55))
        QVERIFY(b.score == 0.4f || b.score == 0.25f);
}

void TestFrameStudent::boxesMapBackToSourcePixels()
{
    QVERIFY(m_model);
    FrameStudent student(*m_model);
    const cv::Mat frame = m_scene.draw(131);
    cv::Mat big;
    cv::resize(frame, big, cv::Size(), 3.0, 3.0, cv::INTER_NEAREST);
    const auto small = student.detect(frame, 0.3f);
    const auto large = student.detect(big, 0.3f);
    QVERIFY(!small.empty());
    QCOMPARE(large.size(), small.size());
    for (std::size_t i = 0; i < small.size(); ++i) {
        const cv::Rect2d &a = small[i].box;
        const cv::Rect2d scaled(a.x * 3, a.y * 3, a.width * 3, a.height * 3);
        QVERIFY2(iou(scaled, large[i].box) > 0.9, "boxes do not scale with the source");
    }
    // the same student as a teacher (what `detect --detector session:DIR` runs)
    StudentTeacher teacher(m_model);
    teacher.threshold = 0.3f;
    QCOMPARE(teacher.detect(frame).size(), small.size());
    QVERIFY_THROWS_EXCEPTION(core::IoError,
                             StudentTeacher::fromSession((m_dir.path() + "/none").toStdString()));
}

void TestFrameStudent::labelsKeepStudentBoxes()
{
    LabelResult r = m_scene.labels(10);
    r.tracks[0].boxes[3].source = BoxSource::Student;
    const std::string dir = (m_dir.path() + "/labels").toStdString();
    r.save(dir);
    const LabelResult back = LabelResult::load(dir);
    QCOMPARE(back.tracks[0].boxes[3].source, BoxSource::Student);
    QCOMPARE(back.tracks[0].boxes[2].source, BoxSource::Teacher);
}

void TestFrameStudent::operatingPointWeighsPrecisionAgainstTheLabels()
{
    // The curve by hand (per frame: movers 0 and 1 at 0.6, mover 2 at 0.25, a false box at 0.4,
    // the rejected track's box at 0.9 neither way): >= 0.6 recall 2/3 at precision 1 (F1 0.8,
    // F0.5 0.909); >= 0.4 recall 2/3 at 2/3 (0.667, 0.667); >= 0.25 recall 1 at 3/4 (F1 0.857,
    // F0.5 0.789). The default F0.5 keeps 0.6, giving up the third mover for no false box;
    // the best F1 would take 0.25.
    LabelResult labels = m_scene.labels(100);
    Track rejected;
    rejected.id = 9;
    rejected.state = Track::State::Rejected;
    for (int f = 0; f < 100; ++f)
        rejected.boxes.push_back({f, cv::Rect2d(4, 96, 14, 20), BoxSource::Tracker, 0.9f});
    labels.tracks.push_back(rejected);
    // Only frames where every mover is wholly inside the frame count the same way; keep those.
    ScriptedDetector detector(m_scene, labels);
    detector.threshold = 0.5f;
    auto source = FrameSource::open(m_source);
    OperatingPointCalibration::Options o;
    o.frames = 8;
    o.last_frame = 79; // the frames the student "trained on"; 80-99 stay unseen
    const OperatingPoint p = OperatingPointCalibration::calibrate(*source, detector, labels, o);
    QCOMPARE(int(detector.seen.size()), 8);
    for (int f : detector.seen)
        QVERIFY2(f <= 79, "a frame after last_frame was used");
    QCOMPARE(detector.threshold, 0.5f); // restored
    QCOMPARE(p.frames, 8);
    QCOMPARE(p.boxes, 3 * 8);
    QCOMPARE(p.beta, 0.5);
    QCOMPARE(p.threshold, 0.6f);
    QVERIFY2(std::abs(p.recall - 2.0 / 3.0) < 1e-9, qPrintable(QString::number(p.recall)));
    QVERIFY2(std::abs(p.precision - 1.0) < 1e-9, qPrintable(QString::number(p.precision)));
    QVERIFY(std::abs(p.f1 - 0.8) < 1e-9); // the F1 there, reported beside the F0.5
    QVERIFY(std::abs(p.f_beta - 10.0 / 11.0) < 1e-9);
    // As the best F1: 0.25 (recall 1 at precision 3/4).
    o.beta = 1.0;
    ScriptedDetector plain(m_scene, labels);
    const OperatingPoint f1 = OperatingPointCalibration::calibrate(*source, plain, labels, o);
    QCOMPARE(f1.threshold, 0.25f);
    QVERIFY2(std::abs(f1.recall - 1.0) < 1e-9, qPrintable(QString::number(f1.recall)));
    QVERIFY2(std::abs(f1.precision - 0.75) < 1e-9, qPrintable(QString::number(f1.precision)));
    QVERIFY(std::abs(f1.f1 - 6.0 / 7.0) < 1e-9);
    QVERIFY(std::abs(f1.f_beta - f1.f1) < 1e-12);
    // Without the third mover's hits, 0.6 is the best F1 too (recall 2/3 at precision 1).
    for (Track &t : labels.tracks)
        if (t.id == 2)
            t.state = Track::State::Rejected;
    ScriptedDetector again(m_scene, labels);
    const OperatingPoint q = OperatingPointCalibration::calibrate(*source, again, labels, o);
    QCOMPARE(q.threshold, 0.6f);
    QVERIFY(std::abs(q.precision - 1.0) < 1e-9);
}

void TestFrameStudent::operatingThresholdTravelsWithTheWeights()
{
    QVERIFY(m_model);
    const QString dir = m_dir.path() + QStringLiteral("/threshold");
    QVERIFY(QDir().mkpath(dir));
    const std::string weights = StudentTeacher::weightsPath(dir.toStdString());
    core::Safetensors::saveModel(*m_model, weights);
    QCOMPARE(FrameStudent::savedThreshold(weights), -1.0f);
    QCOMPARE(StudentTeacher::fromSession(dir.toStdString())->threshold, 0.3f);
    FrameStudent::saveModel(*m_model, weights, 0.37f);
    QCOMPARE(FrameStudent::savedThreshold(weights), 0.37f);
    QCOMPARE(StudentTeacher::fromSession(dir.toStdString())->threshold, 0.37f);
    // The views the threshold was chosen with travel too: the mirror view by default, the frame
    // alone when asked, and the frame alone for weights calibrated before the mirror view (a
    // threshold without the key) — a box seen in one view has half its score with the mirror.
    QVERIFY(StudentTeacher::fromSession(dir.toStdString())->student().mirror);
    FrameStudent::saveModel(*m_model, weights, 0.37f, false);
    QVERIFY(!StudentTeacher::fromSession(dir.toStdString())->student().mirror);
    core::Safetensors::saveModel(*m_model, weights, {{FrameStudent::kThresholdKey, "0.37"}});
    QVERIFY(!FrameStudent::savedMirror(weights));
    core::Safetensors::saveModel(*m_model, weights);
    QVERIFY(FrameStudent::savedMirror(weights)); // no threshold saved: the default views
    // A damaged value is named, not taken.
    core::Safetensors::saveModel(*m_model, weights, {{FrameStudent::kThresholdKey, "0,37"}});
    QVERIFY_THROWS_EXCEPTION(core::FormatError, FrameStudent::savedThreshold(weights));
}

QTEST_GUILESS_MAIN(TestFrameStudent)
#include "tst_framestudent.moc"

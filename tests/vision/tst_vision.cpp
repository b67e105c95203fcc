// The viewpoint pipeline on videos the test draws itself, with known ground truth: figures that
// cross the frame and turn (narrow when seen from the side), a teacher that only recognises them
// face-on, a lamp post to drift onto. Plus the real ONNX loading code on tiny models, and the
// refusals of bad input.

#include "../support/killedrebuild.h"
#include "core/error.h"
#include "core/zoo.h"
#include "vision/cropdataset.h"
#include "vision/framesource.h"
#include "vision/labeling.h"
#include "vision/studentdetector.h"
#include "vision/teacher.h"
#include "vision/tracking.h"
#include "vision/viewpoint.h"

#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

using namespace edgetrain;
using namespace edgetrain::vision;

namespace {

/** A figure: walks from x0 at speed vx in [first, last], turning with the given period. */
struct Figure
{
    int first, last;
    double x0, y, vx;
    double phase;
    cv::Scalar colour;

    bool visible(int f) const { return f >= first && f <= last; }
    /** Face-on: 34 px wide; side-on: 18 px. Always 64 px tall. */
    double width(int f) const { return 26.0 + 8.0 * std::cos(phase + 0.12 * (f - first)); }
    cv::Rect2d box(int f) const
    {
        const double cx = x0 + vx * (f - first);
        const double w = width(f);
        return {cx - w / 2, y, w, 64.0};
    }
};

/** The scene: textured background, a lamp post, figures; ground truth by frame. */
struct Scene
{
    cv::Size size{320, 160};
    std::vector<Figure> figures;
    int frames = 0;
    int cutAt = -1; // from this frame on, another background

    cv::Mat draw(int f) const
    {
        cv::Mat img(size, CV_8UC3);
        // the same texture every frame: a fixed camera
        const bool other = cutAt >= 0 && f >= cutAt;
        for (int y = 0; y < size.height; ++y)
            for (int x = 0; x < size.width; ++x) {
                const int v = 90 + int(40 * std::sin(x * 0.07) * std::cos(y * 0.05)) +
                              ((x * 7 + y * 13) % 17);
                img.at<cv::Vec3b>(y, x) = other ? cv::Vec3b(uchar(v / 3), uchar(v), uchar(v / 2))
                                                : cv::Vec3b(uchar(v), uchar(v), uchar(v + 10));
            }
        cv::rectangle(img, cv::Rect(250, 10, 8, 140), cv::Scalar(60, 60, 60),
                      cv::FILLED); // lamp post
        for (const Figure &fig : figures) {
            if (!fig.visible(f))
                continue;
            const cv::Rect2d b = fig.box(f);
            cv::rectangle(img, cv::Rect(b), fig.colour, cv::FILLED);
            // a face and stripes: texture a tracker can hold on to
            cv::circle(img, cv::Point(int(b.x + b.width / 2), int(b.y + 10)), 6,
                       cv::Scalar(180, 200, 240), cv::FILLED);
            for (int k = 0; k < 3; ++k)
                cv::line(img, cv::Point(int(b.x), int(b.y + 25 + 12 * k)),
                         cv::Point(int(b.x + b.width), int(b.y + 25 + 12 * k)),
                         cv::Scalar(30, 30, 30), 2);
        }
        return img;
    }

    std::string writeFolder(const QString &dir) const
    {
        for (int f = 0; f < frames; ++f) {
            char name[32];
            std::snprintf(name, sizeof name, "/frame%04d.png", f);
            cv::imwrite(dir.toStdString() + name, draw(f));
        }
        return dir.toStdString();
    }
};

/** The teacher of the test: finds the figures' colour, but only face-on (wide enough) - the
 *  way a detector trained on frontal views misses the same object seen from the side. */
class FrontalTeacher : public Teacher
{
public:
    std::string name() const override { return "frontal-test-teacher"; }
    std::vector<Detection> detect(const cv::Mat &bgr) override
    {
        cv::Mat mask;
        cv::inRange(bgr, cv::Scalar(150, 0, 150), cv::Scalar(255, 90, 255),
                    mask); // magenta-ish bodies
        // the stripes and the face cut the body into pieces: close them up again
        cv::morphologyEx(mask, mask, cv::MORPH_CLOSE,
                         cv::getStructuringElement(cv::MORPH_RECT, cv::Size(3, 9)));
        std::vector<std::vector<cv::Point>> contours;
        cv::findContours(mask, contours, cv::RETR_EXTERNAL, cv::CHAIN_APPROX_SIMPLE);
        std::vector<Detection> out;
        for (const auto &c : contours) {
            const cv::Rect r = cv::boundingRect(c);
            if (r.height >= 40 && r.width >= 31) // face-on only
                out.push_back({cv::Rect2d(r), 1.0f, 0});
        }
        return out;
    }
};

/** The frontal teacher that once, on one frame, also "finds" a patch of the still background:
 *  a fluke the tracker would follow for as long as it is allowed to. */
class FlukeTeacher : public FrontalTeacher
{
public:
    explicit FlukeTeacher(int at) : m_at(at) {}
    std::vector<Detection> detect(const cv::Mat &bgr) override
    {
        std::vector<Detection> out = FrontalTeacher::detect(bgr);
        if (m_calls++ == m_at)
            out.push_back({kPatch, 1.0f, 0});
        return out;
    }
    static inline const cv::Rect2d kPatch{10, 92, 30, 60}; // no figure walks there

private:
    int m_at = 0, m_calls = 0;
};

/** The frontal teacher that also "finds" a patch of the still background on every run: a
 *  mistake it makes as steadily as it finds the figures. */
class SteadyMistakeTeacher : public FrontalTeacher
{
public:
    std::vector<Detection> detect(const cv::Mat &bgr) override
    {
        std::vector<Detection> out = FrontalTeacher::detect(bgr);
        out.push_back({FlukeTeacher::kPatch, 1.0f, 0});
        return out;
    }
};

Scene walkers()
{
    Scene s;
    s.frames = 200;
    // four figures, one after another (two walkways: they pass the lamp post, not each other),
    // so there are tracks for every split
    s.figures = {{0, 60, 30, 8, 3.0, 0.0, cv::Scalar(200, 40, 210)},
                 {45, 110, 290, 88, -3.2, 1.0, cv::Scalar(210, 50, 190)},
                 {95, 160, 20, 12, 2.8, 2.0, cv::Scalar(190, 30, 220)},
                 {140, 199, 280, 90, -3.0, 0.5, cv::Scalar(220, 60, 200)}};
    return s;
}

} // namespace

class TestVision : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void sourcesReadSeekAndRefuse();
    void teachersRefuseWhatTheyAreNot();
    void onnxHeadsAreDecoded();
    void propagationRecoversWhatTheTeacherMissed();
    void sceneCutsStopTracks();
    void rarelyConfirmedTracksAreRejected();
    void unverifiedTracksAreRejected();
    void labelsRoundTrip();
    void splitNeverSharesATrack();
    void killedRebuildReadsAsOneDataset_data();
    void killedRebuildReadsAsOneDataset();
    void studentBeatsTeacherOnTrackerOnlyBoxes();

private:
    QTemporaryDir m_dir;
    std::string m_frames;
    std::map<QString, CropStats> m_rebuilt; // killedRebuildReadsAsOneDataset: "A", "B", "C"
    Scene m_scene = walkers();
};

void TestVision::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QDir().mkpath(m_dir.path() + "/frames");
    m_frames = m_scene.writeFolder(m_dir.path() + "/frames");
}

void TestVision::sourcesReadSeekAndRefuse()
{
    auto folder = FrameSource::open(m_frames);
    QCOMPARE(folder->frameCount(), m_scene.frames);
    QCOMPARE(folder->frameSize(), m_scene.size);
    Frame f;
    QVERIFY(folder->seek(42));
    QVERIFY(folder->read(f));
    QCOMPARE(f.index, 42);
    QCOMPARE(cv::norm(f.image, m_scene.draw(42), cv::NORM_INF), 0.0);

    // a real video file (MJPG), read and sought
    const std::string video = m_dir.path().toStdString() + "/walkers.avi";
    {
        cv::VideoWriter w(video, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 25.0, m_scene.size);
        QVERIFY(w.isOpened());
        for (int i = 0; i < 30; ++i)
            w.write(m_scene.draw(i));
    }
    auto file = FrameSource::open(video);
    QCOMPARE(file->frameCount(), 30);
    QVERIFY(file->seek(20));
    QVERIFY(file->read(f));
    QCOMPARE(f.index, 20);
    QCOMPARE(f.timestamp_ms, 800.0);
    QVERIFY(cv::norm(f.image, m_scene.draw(20), cv::NORM_L1) / double(f.image.total() * 3) <
            6.0); // JPEG

    auto refused = [](const std::string &spec, const char *expect) {
        try {
            FrameSource::open(spec);
        } catch (const SourceError &e) {
            if (std::string(e.what()).find(expect) != std::string::npos)
                return true;
            qWarning() << e.what();
        }
        return false;
    };
    const std::string garbage = m_dir.path().toStdString() + "/garbage.avi";
    std::ofstream(garbage) << "this is not a video";
    QVERIFY(refused(garbage, "garbage.avi"));
    QVERIFY(refused("/nonexistent/video.avi", "does not exist"));
    QVERIFY(refused("camera:x", "camera:N"));
    QVERIFY(refused(m_dir.path().toStdString() + "/empty-nothing", "does not exist"));
    QDir().mkpath(m_dir.path() + "/empty");
    QVERIFY(refused(m_dir.path().toStdString() + "/empty", "no .png"));
}

void TestVision::teachersRefuseWhatTheyAreNot()
{
    const std::string notCascade = m_dir.path().toStdString() + "/not-a-cascade.xml";
    std::ofstream(notCascade) << "<?xml version=\"1.0\"?><opencv_storage><x>1</x></opencv_storage>";
    auto refused = [](const std::string &spec, const char *expect) {
        try {
            Teacher::create(spec);
        } catch (const core::Error &e) {
            if (std::string(e.what()).find(expect) != std::string::npos)
                return true;
            qWarning() << e.what();
        }
        return false;
    };
    QVERIFY(refused("cascade:" + notCascade, "is not a Haar or LBP cascade"));
    QVERIFY(refused("cascade:/nonexistent.xml", "does not exist"));
    QVERIFY(refused("onnx:" + notCascade, "is not an ONNX model"));
    QVERIFY(refused("onnx:" EDGETRAIN_SOURCE_DIR "/tests/vision/data/classifier.onnx",
                    "is not a detector: its output is 1x10"));
    QVERIFY(refused("yolo", "teacher must be hog, cascade:FILE, onnx:FILE, motion"));
    QVERIFY_THROWS_EXCEPTION(core::SpecError, createTracker("goturn"));
    for (const auto &name : trackerNames())
        QVERIFY(createTracker(name));

    // the real cascade from opencv-data loads and finds a face-like nothing in a blank image
    // (opencv-data is a dependency: scripts/install-deps.sh installs it; missing, this fails)
    const std::string face = "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml";
    QVERIFY2(std::ifstream(face).good(), "opencv-data's frontal-face cascade is not installed");
    auto cascade = Teacher::create("cascade:" + face);
    QVERIFY(cascade->detect(cv::Mat(240, 320, CV_8UC3, cv::Scalar::all(128))).empty());
    // a second opinion: another detector, never motion
    const std::string lbp = "/usr/share/opencv4/lbpcascades/lbpcascade_frontalface_improved.xml";
    // the Haar face cascade gets opencv-data's LBP face cascade unless its spec says otherwise;
    // the LBP cascade itself, and any other detector, none
    QVERIFY(cascade->verifier);
    QCOMPARE(cascade->verifier->name(), "cascade:" + lbp);
    QVERIFY(!cascade->verifier->verifier);
    QVERIFY(!Teacher::create("cascade:" + face + "?verify=none")->verifier);
    QVERIFY(!Teacher::create("cascade:" + lbp)->verifier);
    QVERIFY(!Teacher::create("hog")->verifier);
    QCOMPARE(Teacher::create("hog?verify=cascade:" + face)->verifier->name(), "cascade:" + face);
    QVERIFY(!Teacher::create("hog?verify=cascade:" + face)->verifier->verifier);
    auto seconded = Teacher::create("cascade:" + face + "?verify=cascade:" + lbp);
    QVERIFY(seconded->verifier);
    QCOMPARE(seconded->verifier->name(), "cascade:" + lbp);
    QVERIFY(refused("cascade:" + face + "?verify=motion", "the verifier must be a detector"));
    QVERIFY(refused("hog?verify=motion?history=100", "the verifier must be a detector"));
    QVERIFY(refused("hog?verify=cascade:/nonexistent.xml", "does not exist"));
    QVERIFY(refused("hog?check=hog", "unknown option 'check'"));
    // with motion the verifier judges the fused teacher's tracks
    auto fused = Teacher::create("cascade:" + face + "?verify=cascade:" + lbp + "+motion");
    QVERIFY(fused->verifier);
    QCOMPARE(fused->verifier->name(), "cascade:" + lbp);
}

void TestVision::onnxHeadsAreDecoded()
{
    const cv::Mat bright(100, 200, CV_8UC3, cv::Scalar::all(250)),
        dark(100, 200, CV_8UC3, cv::Scalar::all(5));
    OnnxTeacher ssd(EDGETRAIN_SOURCE_DIR "/tests/vision/data/tiny_ssd.onnx", cv::Size(64, 64));
    QCOMPARE(ssd.head(), OnnxTeacher::Head::Ssd);
    ssd.threshold = 0.5f;
    auto d = ssd.detect(bright);
    QCOMPARE(d.size(), std::size_t(1)); // the second box's confidence stays under 0.5
    QVERIFY(std::abs(d[0].box.x - 50) < 1e-3 &&
            std::abs(d[0].box.y - 12.5) < 1e-3); // 0.25 * 200, 0.125 * 100
    QVERIFY(std::abs(d[0].box.width - 100) < 1e-3 && std::abs(d[0].box.height - 75) < 1e-3);
    QCOMPARE(d[0].label, 1);
    QVERIFY(ssd.detect(dark).empty());

    OnnxTeacher yolo(EDGETRAIN_SOURCE_DIR "/tests/vision/data/tiny_yolo.onnx", cv::Size(64, 64));
    QCOMPARE(yolo.head(), OnnxTeacher::Head::Yolo);
    yolo.threshold = 0.5f;
    d = yolo.detect(bright);
    QCOMPARE(d.size(), std::size_t(1));
    QCOMPARE(d[0].label, 1);
    // (32, 32, 32, 48) in 64x64 input pixels -> frame pixels: x scale 200/64, y scale 100/64
    QVERIFY(std::abs(d[0].box.x - 16 * 200.0 / 64) < 1e-3 &&
            std::abs(d[0].box.height - 48 * 100.0 / 64) < 1e-3);
    QVERIFY(yolo.detect(dark).empty());
    yolo.keepLabel = 0;
    QVERIFY(yolo.detect(bright).empty());
}

void TestVision::propagationRecoversWhatTheTeacherMissed()
{
    auto source = FrameSource::open(m_frames);
    FrontalTeacher teacher;
    LabelOptions o;
    o.every = 1;
    o.tracker = "kcf";
    o.track_scale = 1.0;
    const LabelResult r = Labeler::run(*source, teacher, o);
    QVERIFY(!r.cancelled);
    // every ground-truth box the teacher missed, against the tracks
    int missed = 0, recovered = 0, teacherHits = 0;
    std::map<int, std::vector<Detection>> hitsByFrame;
    for (int f = 0; f < m_scene.frames; ++f) {
        const auto hits = hitsByFrame[f] = teacher.detect(m_scene.draw(f));
        for (const Figure &fig : m_scene.figures) {
            if (!fig.visible(f))
                continue;
            const cv::Rect2d gt = fig.box(f);
            if (gt.x < 0 || gt.x + gt.width > m_scene.size.width)
                continue; // partly outside the frame
            const bool found = std::any_of(hits.begin(), hits.end(), [&](const Detection &d) {
                return iou(d.box, gt) >= 0.5;
            });
            if (found) {
                ++teacherHits;
                continue;
            }
            ++missed;
            for (const Track &t : r.tracks)
                if (const TrackBox *b = t.at(f);
                    b && t.state == Track::State::Accepted && iou(b->box, gt) >= 0.5) {
                    ++recovered;
                    break;
                }
        }
    }
    qInfo("teacher found %d boxes, missed %d; propagation recovered %d (%.1f %%); %d tracks",
          teacherHits, missed, recovered, 100.0 * recovered / std::max(missed, 1), r.stats.tracks);
    QVERIFY(missed > 100); // the scene is what it claims: the teacher misses a lot
    QVERIFY(recovered >= 0.9 * missed);
    // one track per figure (merged, not fragmented), and no box on the lamp post
    QVERIFY2(r.stats.tracks <= 6, qPrintable(QString::number(r.stats.tracks)));
    for (const Track &t : r.tracks)
        for (const TrackBox &b : t.boxes)
            QVERIFY((b.box & cv::Rect2d(250, 10, 8, 140)).area() < 0.5 * b.box.area());
    // every box says where it came from, truly: a teacher box is one of the teacher's own
    // detections on its frame; a tracker box is where the teacher did not find that object; and
    // the counts are of those boxes
    int teacherBoxes = 0, trackerBoxes = 0;
    for (const Track &t : r.tracks) {
        if (t.state != Track::State::Accepted)
            continue;
        for (const TrackBox &b : t.boxes) {
            double best = 0;
            for (const Detection &d : hitsByFrame[b.frame])
                best = std::max(best, iou(d.box, b.box));
            if (b.source == BoxSource::Teacher) {
                ++teacherBoxes;
                QVERIFY2(
                    best > 0.99,
                    qPrintable(QStringLiteral("teacher box on frame %1 is no detection (IoU %2)")
                                   .arg(b.frame)
                                   .arg(best)));
            } else {
                ++trackerBoxes;
                QVERIFY2(
                    best < 0.7,
                    qPrintable(QStringLiteral(
                                   "tracker box on frame %1 where the teacher found it (IoU %2)")
                                   .arg(b.frame)
                                   .arg(best)));
            }
        }
    }
    QCOMPARE(r.stats.teacher_boxes, teacherBoxes);
    QCOMPARE(r.stats.tracker_only_boxes, trackerBoxes);
    QVERIFY(teacherBoxes > 0 && trackerBoxes > 0);
}

void TestVision::sceneCutsStopTracks()
{
    Scene s;
    s.frames = 60;
    s.cutAt = 30;
    s.figures = {{0, 59, 40, 40, 2.0, 0.0, cv::Scalar(200, 40, 210)}};
    QDir().mkpath(m_dir.path() + "/cut");
    auto source = FrameSource::open(s.writeFolder(m_dir.path() + "/cut"));
    FrontalTeacher teacher;
    LabelOptions o;
    o.every = 1;
    const LabelResult r = Labeler::run(*source, teacher, o);
    QCOMPARE(r.cuts, std::vector<int>{30});
    for (const Track &t : r.tracks)
        if (!t.boxes.empty())
            QVERIFY2(t.boxes.back().frame < 30 || t.boxes.front().frame >= 30,
                     "a track crosses the cut");
}

void TestVision::rarelyConfirmedTracksAreRejected()
{
    auto source = FrameSource::open(m_frames);
    FlukeTeacher teacher(40); // the teacher runs on every 2nd frame: its 40th run is frame 80
    LabelOptions o;
    o.every = 2;
    o.track_scale = 1.0;
    const LabelResult r = Labeler::run(*source, teacher, o);
    const Track *fluke = nullptr;
    for (const Track &t : r.tracks)
        if (const TrackBox *b = t.at(80); b && iou(b->box, FlukeTeacher::kPatch) > 0.9)
            fluke = &t;
    QVERIFY2(fluke, "the fluke was not followed at all: the test shows nothing");
    QVERIFY2(fluke->boxes.size() > 20, qPrintable(QString::number(fluke->boxes.size())));
    QCOMPARE(fluke->teacherBoxes(), 1);
    QCOMPARE(fluke->state, Track::State::Rejected);
    QVERIFY2(QString::fromStdString(fluke->note).startsWith("the teacher confirmed it in 1 of"),
             fluke->note.c_str());
    // the figures, confirmed face-on every few runs, stay
    int accepted = 0;
    for (const Track &t : r.tracks)
        accepted += t.state == Track::State::Accepted;
    QVERIFY2(accepted >= 4, qPrintable(QString::number(accepted)));
    // and with the share at 0 the fluke is kept: the rule is what rejected it
    o.min_teacher_share = 0.0;
    auto again = FrameSource::open(m_frames);
    FlukeTeacher same(40);
    const LabelResult all = Labeler::run(*again, same, o);
    bool kept = false;
    for (const Track &t : all.tracks)
        if (const TrackBox *b = t.at(80); b && iou(b->box, FlukeTeacher::kPatch) > 0.9)
            kept = t.state == Track::State::Accepted;
    QVERIFY2(kept, "with the share at 0 the fluke's track should be there, accepted");
    o.min_teacher_share = 1.5;
    auto third = FrameSource::open(m_frames);
    QVERIFY_THROWS_EXCEPTION(core::SpecError, Labeler::run(*third, same, o));
}

void TestVision::unverifiedTracksAreRejected()
{
    auto patchTrack = [](const LabelResult &r) -> const Track * {
        for (const Track &t : r.tracks)
            if (const TrackBox *b = t.at(100); b && iou(b->box, FlukeTeacher::kPatch) > 0.9)
                return &t;
        return nullptr;
    };
    LabelOptions o;
    o.every = 2;
    o.track_scale = 1.0;
    // without a verifier the steady mistake is a track like any other
    auto source = FrameSource::open(m_frames);
    SteadyMistakeTeacher alone;
    const LabelResult unchecked = Labeler::run(*source, alone, o);
    const Track *mistake = patchTrack(unchecked);
    QVERIFY(mistake);
    QCOMPARE(mistake->state, Track::State::Accepted);
    int figures = 0;
    for (const Track &t : unchecked.tracks)
        figures += t.state == Track::State::Accepted && t.id != mistake->id;
    QVERIFY2(figures >= 4, qPrintable(QString::number(figures)));

    // a verifier that knows the figures (and not the patch) rejects it, and only it
    SteadyMistakeTeacher checked;
    checked.verifier = std::make_unique<FrontalTeacher>();
    auto again = FrameSource::open(m_frames);
    const LabelResult r = Labeler::run(*again, checked, o);
    mistake = patchTrack(r);
    QVERIFY(mistake);
    QCOMPARE(mistake->state, Track::State::Rejected);
    QVERIFY2(QString::fromStdString(mistake->note)
                 .startsWith("the verifier frontal-test-teacher found none of its"),
             mistake->note.c_str());
    int kept = 0;
    for (const Track &t : r.tracks)
        kept += t.state == Track::State::Accepted;
    QCOMPARE(kept, figures);
    QCOMPARE(r.teacher, "frontal-test-teacher?verify=frontal-test-teacher");
}

void TestVision::labelsRoundTrip()
{
    LabelResult r;
    r.source = "x.avi";
    r.teacher = "hog";
    r.frame_size = {64, 48};
    Track t;
    t.id = 3;
    t.boxes = {{1, {1, 2, 3, 4}, BoxSource::Teacher, 0.9f},
               {2, {2, 2, 3, 4}, BoxSource::Tracker, 0.5f}};
    r.tracks.push_back(t);
    r.cuts = {7};
    const std::string dir = m_dir.path().toStdString() + "/roundtrip";
    r.save(dir);
    const LabelResult back = LabelResult::load(dir);
    QCOMPARE(back.tracks.size(), std::size_t(1));
    QCOMPARE(back.tracks[0].boxes.size(), std::size_t(2));
    QCOMPARE(back.tracks[0].boxes[1].source, BoxSource::Tracker);
    QCOMPARE(back.cuts, std::vector<int>{7});
    QCOMPARE(back.stats.teacher_boxes, 1);
    std::ofstream(dir + "/labels.json")
        << R"({"format": "edgetrain-labels-1", "every": 1, "frame_width": 1,
        "frame_height": 1, "fps": 25, "frames": 1, "seconds": 0, "tracks": [{"id": 0, "boxes": [[1, 2, 3]]}]})";
    try {
        LabelResult::load(dir);
        QFAIL("a malformed box was accepted");
    } catch (const core::FormatError &e) {
        QVERIFY2(std::string(e.what()).find("track 0, box 0") != std::string::npos, e.what());
    }
    // A frame number no int holds (found by fuzz_files: the conversion was undefined).
    std::ofstream(dir + "/labels.json")
        << R"({"format": "edgetrain-labels-1", "every": 1, "frame_width": 1,
        "frame_height": 1, "fps": 25, "frames": 1, "seconds": 0, "tracks": [{"id": 0, "boxes":
        [[11111111120, 2, 3, 4, 5, "teacher", 0.5]]}]})";
    try {
        LabelResult::load(dir);
        QFAIL("a frame number out of range was accepted");
    } catch (const core::FormatError &e) {
        QVERIFY2(std::string(e.what()).find("track 0, box 0: the frame") != std::string::npos,
                 e.what());
    }
}

void TestVision::splitNeverSharesATrack()
{
    auto source = FrameSource::open(m_frames);
    FrontalTeacher teacher;
    LabelOptions o;
    o.every = 2;
    const LabelResult r = Labeler::run(*source, teacher, o);
    const std::string session = m_dir.path().toStdString() + "/split";
    CropOptions c;
    const CropStats stats = CropDataset::build(session, r, *source, c);
    QVERIFY(stats.positives[0] > 0 && stats.positives[2] > 0 && stats.negatives[0] > 0);
    std::ifstream index(session + "/dataset/index.csv");
    std::string line;
    std::getline(index, line);
    std::map<std::string, std::set<std::string>> splitsOfTrack;
    while (std::getline(index, line)) {
        std::vector<std::string> cols;
        std::stringstream ss(line);
        for (std::string x; std::getline(ss, x, ',');)
            cols.push_back(x);
        QCOMPARE(cols.size(), std::size_t(6));
        if (cols[3] != "-1")
            splitsOfTrack[cols[3]].insert(cols[2]);
    }
    QVERIFY(splitsOfTrack.size() >= 3);
    for (const auto &[track, splits] : splitsOfTrack)
        QVERIFY2(splits.size() == 1, ("track " + track + " is in two splits").c_str());
    const core::TensorDataset train = CropDataset::load(session, Split::Train);
    QCOMPARE(train.sampleShape(), (core::Shape{3, 48, 24}));
    QCOMPARE(train.size(), std::int64_t(stats.positives[0] + stats.negatives[0]));
}

void TestVision::killedRebuildReadsAsOneDataset_data()
{
    // What a rebuild of crop dataset A into B (DatasetFolder) leaves when killed at each step: the
    // folders dataset, dataset.old and dataset.building, each holding A or B, whole or part
    // written (or part deleted: no index.csv, part of the crops), and which dataset must be read.
    tests::addKilledRebuildRows();
}

void TestVision::killedRebuildReadsAsOneDataset()
{
    namespace fs = std::filesystem;
    QFETCH(QString, folder);
    QFETCH(QString, old);
    QFETCH(QString, staging);
    QFETCH(QString, read);
    auto describe = [](const CropStats &s) {
        QString text;
        for (int k = 0; k < 3; ++k)
            text += QStringLiteral("%1: %2 tracks, %3 positives, %4 negatives; ")
                        .arg(splitName(Split(k)))
                        .arg(s.tracks[k])
                        .arg(s.positives[k])
                        .arg(s.negatives[k]);
        return text;
    };
    auto source = FrameSource::open(m_frames);
    FrontalTeacher teacher;
    LabelOptions lo;
    lo.every = 2;
    static const LabelResult labels = Labeler::run(*source, teacher, lo); // once, for every row
    auto build = [&](const QString &name, int every, bool nearMisses, const std::string &session) {
        CropOptions o;
        o.every = every;
        o.near_misses = nearMisses;
        m_rebuilt[name] = CropDataset::build(session, labels, *source, o);
    };
    const fs::path built = (m_dir.path() + "/rebuilt").toStdString();
    if (m_rebuilt.empty()) { // A, B and C differ in their counts
        build("A", 1, true, (built / "A").string());
        build("B", 3, false, (built / "B").string());
    }
    const fs::path session = (m_dir.path() + "/killed " + QTest::currentDataTag()).toStdString();
    fs::create_directories(session);
    auto place = [&](const QString &what, const char *name) {
        if (what.isEmpty())
            return;
        const fs::path to = session / name;
        fs::copy(built / what.left(1).toStdString() / "dataset", to, fs::copy_options::recursive);
        if (!what.endsWith(QLatin1String("part")))
            return;
        fs::remove(to / "index.csv");
        fs::remove_all(to / "train");
    };
    place(folder, "dataset");
    place(old, "dataset.old");
    place(staging, "dataset.building");

    const CropStats &want = m_rebuilt.at(read);
    const auto stats = CropDataset::stats(session.string());
    QVERIFY2(stats, "no dataset found");
    QCOMPARE(describe(*stats), describe(want)); // as build() said, counted from the index
    QCOMPARE(CropDataset::load(session.string(), Split::Train).size(),
             std::int64_t(want.positives[0] + want.negatives[0])); // every crop is there

    // The next build replaces it and removes what the kill left.
    build("C", 2, false, session.string());
    QCOMPARE(describe(*CropDataset::stats(session.string())), describe(m_rebuilt.at("C")));
    std::set<std::string> names;
    for (const auto &e : fs::directory_iterator(session))
        names.insert(e.path().filename().string());
    QCOMPARE(names, std::set<std::string>{"dataset"});
}

void TestVision::studentBeatsTeacherOnTrackerOnlyBoxes()
{
    auto source = FrameSource::open(m_frames);
    FrontalTeacher teacher;
    ViewpointOptions o;
    o.label.every = 1;
    o.epochs = 15;
    o.eval_frames = 40;
    const LabelResult labels = Labeler::run(*source, teacher, o.label);
    const std::string session = m_dir.path().toStdString() + "/student";
    CropDataset::build(session, labels, *source, o.crops);
    core::Model student(core::Zoo::spec("student"), 3);
    const auto trained = Viewpoint::trainStudent(student, session, o);
    QVERIFY(!trained.epochs.empty());
    StudentDetector detector(student);
    const auto splits = CropDataset::splitTracks(labels, o.crops);
    const ViewpointEvaluation e =
        Viewpoint::evaluate(*source, teacher, detector, labels, splits, o);
    qInfo("held out: %d teacher-found, %d tracker-only boxes; recall teacher-found teacher %.2f "
          "student %.2f; "
          "tracker-only teacher %.2f student %.2f; student precision %.2f (%d detections)",
          e.teacher_found_boxes, e.tracker_only_boxes, e.teacher_recall_teacher_found,
          e.student_recall_teacher_found, e.teacher_recall_tracker_only,
          e.student_recall_tracker_only, e.student_precision, e.student_detections);
    QVERIFY(e.tracker_only_boxes >= 10);
    QVERIFY(e.student_recall_tracker_only > e.teacher_recall_tracker_only + 0.5);
    QVERIFY(e.student_recall_teacher_found > 0.7);
    QVERIFY(e.student_precision > 0.6);
}

QTEST_APPLESS_MAIN(TestVision)
#include "tst_vision.moc"

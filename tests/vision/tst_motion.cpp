// Motion as a labeller: MotionTeacher and MotionFusionTeacher on videos the test draws (a still,
// textured background with coloured rectangles moving over it, boxes known), box conventions
// and their spec strings, HOG's corrected box on vtest.avi, and the knocked-camera tool.

#include "core/error.h"
#include "vision/framesource.h"
#include "vision/labeling.h"
#include "vision/motionfusionteacher.h"
#include "vision/motionteacher.h"
#include "vision/teacher.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <cmath>
#include <fstream>
#include <map>

using namespace edgetrain;
using namespace edgetrain::vision;

namespace {

/** A rectangle moving at constant speed, present in frames [first, last]. */
struct Mover
{
    cv::Rect2d start;
    double vx = 0, vy = 0;
    cv::Scalar colour;
    int first = 0, last = 1 << 30;

    bool visible(int f) const { return f >= first && f <= last; }
    cv::Rect2d box(int f) const
    {
        return {start.x + vx * (f - first), start.y + vy * (f - first), start.width, start.height};
    }
};

cv::Mat background(cv::Size size)
{
    cv::Mat img(size, CV_8UC3);
    for (int y = 0; y < size.height; ++y)
        for (int x = 0; x < size.width; ++x) {
            const int v =
                100 + int(35 * std::sin(x * 0.09) * std::cos(y * 0.07)) + ((x * 7 + y * 13) % 17);
            img.at<cv::Vec3b>(y, x) = cv::Vec3b(uchar(v), uchar(v + 5), uchar(v));
        }
    return img;
}

cv::Mat draw(const cv::Mat &bg, const std::vector<Mover> &movers, int f)
{
    cv::Mat img = bg.clone();
    // Textured like clothes: a random pattern that moves with the object, so a pixel inside it
    // changes as it passes (a flat or periodic one is learnt as background while it covers it).
    for (const Mover &m : movers)
        if (m.visible(f)) {
            const cv::Rect whole(m.box(f));
            const cv::Rect r = whole & cv::Rect(0, 0, img.cols, img.rows);
            if (r.area() <= 0)
                continue;
            cv::Mat texture(whole.size(), CV_8UC3);
            cv::RNG rng(uint64(m.colour[0] * 65536 + m.colour[1] * 256 + m.colour[2]));
            rng.fill(texture, cv::RNG::UNIFORM, cv::Scalar::all(0), cv::Scalar::all(70));
            cv::Mat patch = texture + m.colour * 0.7;
            const cv::Rect from(r.x - whole.x, r.y - whole.y, r.width, r.height);
            patch(from).copyTo(img(r));
        }
    return img;
}

/** The test double of a detector: returns the boxes it was given for the frame it is on. */
class GivenDetector : public Teacher
{
public:
    std::string name() const override { return "given"; }
    std::vector<Detection> detect(const cv::Mat &bgr) override
    {
        return corrected(next, bgr.size());
    }
    std::vector<Detection> next;
};

double bestIou(const std::vector<Detection> &dets, const cv::Rect2d &truth)
{
    double best = 0;
    for (const Detection &d : dets)
        best = std::max(best, iou(d.box, truth));
    return best;
}

const std::string kVtest = "/usr/share/doc/opencv-doc/examples/data/vtest.avi";

} // namespace

class TestMotion : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void conventionsAndSpecs();
    void motionFindsMoversWithTightBoxes();
    void labelerFeedsEveryFrame();
    void fusionSplitsKeepsAndDrops();
    void fusionCutsPeopleWalkingTogether();
    void hogCorrectedBoxIsTighterOnVtest();
    void knockVideoMovesPixelsAndBoxes();
};

void TestMotion::conventionsAndSpecs()
{
    const BoxConvention c{0.25, 0.1, -0.25, -0.2};
    const cv::Rect2d r = c.apply({100, 200, 64, 128});
    QCOMPARE(r.x, 116.0);
    QCOMPARE(r.y, 212.8);
    QCOMPARE(r.width, 32.0);
    QCOMPARE(r.height, 89.6);
    QVERIFY(BoxConvention{}.isIdentity());

    auto hog = Teacher::create("hog");
    QVERIFY(!hog->convention.isIdentity());
    QCOMPARE(hog->convention.dx0, HogTeacher::defaultConvention().dx0);
    auto custom = Teacher::create("hog?box=0.2,0.1,-0.2,-0.08");
    QCOMPARE(custom->convention.dx0, 0.2);
    QCOMPARE(custom->convention.dy1, -0.08);
    const std::string face = "/usr/share/opencv4/haarcascades/haarcascade_frontalface_default.xml";
    if (std::ifstream(face)) {
        QCOMPARE(Teacher::create("cascade:" + face)->convention.dy0, -0.15);
        QCOMPARE(Teacher::create("cascade:" + face + "?box=0,0,0,0")->convention.dy0, 0.0);
    }
    auto motion = Teacher::create("motion?history=300&min_area=100&model=knn");
    QVERIFY(motion->needsEveryFrame());
    const auto *m = dynamic_cast<MotionTeacher *>(motion.get());
    QVERIFY(m);
    QCOMPARE(m->options().history, 300);
    QCOMPARE(m->options().min_area_px, 100.0);
    QVERIFY(m->options().model == MotionOptions::Model::Knn);
    auto fused = Teacher::create("hog+motion?warmup=5");
    QCOMPARE(fused->name(), std::string("hog+motion"));
    QVERIFY(fused->needsEveryFrame());
    QCOMPARE(dynamic_cast<MotionFusionTeacher *>(fused.get())->motion().options().warmup_frames, 5);

    auto refused = [](const std::string &spec, const char *expect) {
        try {
            Teacher::create(spec);
        } catch (const core::SpecError &e) {
            if (std::string(e.what()).find(expect) != std::string::npos)
                return true;
            qWarning() << e.what();
        }
        return false;
    };
    QVERIFY(refused("hog?box=0.1,0.2", "four fractions"));
    QVERIFY(refused("hog?box=0.6,0,-0.6,0", "without area"));
    QVERIFY(refused("hog?size=3", "unknown option 'size'"));
    QVERIFY(refused("motion?speed=3", "unknown option 'speed'"));
    QVERIFY(refused("motion?history=-4", "history must be a number"));
    QVERIFY(refused("motion?history", "is not key=value"));
    QVERIFY(refused("motion+motion", "the detector before +motion"));
}

void TestMotion::motionFindsMoversWithTightBoxes()
{
    const cv::Mat bg = background({320, 240});
    // The movers come in at frame 60, after the model has seen the empty scene for a while
    // (early on it learns fast: an object that covers a pixel for a few frames joins the
    // background; vtest's people take thirty frames to pass a pixel at history 500).
    const std::vector<Mover> movers{{{10, 40, 20, 50}, 3.0, 0.0, cv::Scalar(40, 40, 220), 60},
                                    {{280, 150, 24, 56}, -2.5, 0.5, cv::Scalar(200, 60, 40), 60}};
    MotionTeacher motion; // warm-up 20 frames
    int checked = 0;
    for (int f = 0; f < 100; ++f) {
        const auto boxes = motion.detect(draw(bg, movers, f));
        if (f < 60) { // the warm-up, then a still scene: nothing
            QVERIFY2(boxes.empty(),
                     qPrintable(QString("%1 boxes on frame %2").arg(boxes.size()).arg(f)));
            continue;
        }
        QCOMPARE(int(boxes.size()), 2);
        for (const Mover &m : movers) {
            const double v = bestIou(boxes, m.box(f));
            QVERIFY2(v > 0.8, qPrintable(QString("frame %1: best IoU %2").arg(f).arg(v)));
            ++checked;
        }
        for (const Detection &d : boxes)
            QVERIFY(d.score > 0.8f && d.score <= 1.0f); // rectangles fill their boxes
    }
    QCOMPARE(checked, 80); // frames 60..99, two movers
    // The movers leave; on the still background nothing is found.
    for (int f = 0; f < 40; ++f)
        motion.observe(bg);
    QVERIFY(motion.detect(bg).empty());
}

void TestMotion::labelerFeedsEveryFrame()
{
    QTemporaryDir dir;
    const cv::Mat bg = background({320, 240});
    const std::vector<Mover> movers{{{10, 60, 22, 60}, 3.0, 0.0, cv::Scalar(40, 40, 220), 60}};
    for (int f = 0; f < 120; ++f) {
        char name[32];
        std::snprintf(name, sizeof name, "/frame%04d.png", f);
        cv::imwrite(dir.path().toStdString() + name, draw(bg, movers, f));
    }
    auto source = FrameSource::open(dir.path().toStdString());
    auto teacher = Teacher::create("motion");
    LabelOptions o;
    o.every = 5;
    o.track_scale = 1.0;
    const LabelResult r = Labeler::run(*source, *teacher, o);
    // every frame reached the model, 14 of them through detect()
    QCOMPARE(dynamic_cast<MotionTeacher &>(*teacher).framesSeen(), 120);
    QCOMPARE(r.stats.teacher_runs, 24);
    QCOMPARE(r.stats.tracks, 1);
    const Track &t = r.tracks[0];
    int good = 0;
    for (const TrackBox &b : t.boxes)
        good += b.source == BoxSource::Teacher && iou(b.box, movers[0].box(b.frame)) > 0.8;
    QVERIFY2(good >= 11, qPrintable(QString("%1 tight teacher boxes").arg(good))); // 60..115
}

void TestMotion::fusionSplitsKeepsAndDrops()
{
    const cv::Mat bg = background({400, 300});
    // A and B walk side by side, touching: one blob. C stands still all along: never motion.
    // D is flat (a cart, a shadow): moving, no detector hit, no person's shape. E moves, shaped
    // like a person, the detector misses it.
    const std::vector<Mover> movers{
        {{40, 100, 20, 60}, 3.0, 0.0, cv::Scalar(40, 40, 220), 100},
        {{60, 100, 20, 60}, 3.0, 0.0, cv::Scalar(40, 200, 220), 100},
        {{250, 30, 20, 60}, 0.0, 0.0, cv::Scalar(220, 40, 200), 0},
        {{310, 220, 80, 14}, -3.0, 0.0, cv::Scalar(30, 220, 30), 100},
        {{150, 20, 18, 54}, 2.0, 0.0, cv::Scalar(240, 240, 60), 100},
    };
    MotionFusionTeacher fusion(std::make_unique<GivenDetector>(),
                               std::make_unique<MotionTeacher>());
    auto &given = dynamic_cast<GivenDetector &>(fusion.detector());
    for (int f = 0; f < 140; ++f) {
        // the detector's boxes are looser than the objects (a window with a margin)
        given.next.clear();
        for (int i : {0, 1, 2}) {
            if (!movers[std::size_t(i)].visible(f))
                continue;
            const cv::Rect2d b = movers[std::size_t(i)].box(f);
            given.next.push_back(
                {cv::Rect2d(b.x - 4, b.y - 8, b.width + 8, b.height + 16), 1.f, 0});
        }
        const auto boxes = fusion.detect(draw(bg, movers, f));
        if (f < 102)
            continue;
        const auto &c = fusion.lastCounts();
        QCOMPARE(c.split_parts, 2);
        QCOMPARE(c.detector_only, 1);
        QCOMPARE(c.motion_only, 1);
        QCOMPARE(c.dropped_blobs, 1);
        QCOMPARE(int(boxes.size()), 4);
        for (int i : {0, 1, 4}) {
            const double v = bestIou(boxes, movers[std::size_t(i)].box(f));
            QVERIFY2(v > 0.8,
                     qPrintable(QString("frame %1 object %2: IoU %3").arg(f).arg(i).arg(v)));
        }
        QVERIFY(bestIou(boxes, given.next[2].box) > 0.99); // the still one: the detector's box
        QCOMPARE(bestIou(boxes, movers[3].box(f)), 0.0);   // the flat blob is gone
    }
    QCOMPARE(fusion.lowestConfirmed_px(), 60.0);
}

void TestMotion::fusionCutsPeopleWalkingTogether()
{
    const cv::Mat bg = background({400, 300});
    // S walks alone and the detector sees it: the scene's typical width (24 of 60 px). P and Q
    // walk together, an arm between them (one blob whose columns dip between the two), and the
    // detector sees neither. L walks alone with its legs apart, wider than S below its body but
    // full in the middle columns: one object, never cut.
    const std::vector<Mover> movers{
        {{20, 30, 24, 60}, 2.0, 0.0, cv::Scalar(40, 40, 220)},
        {{40, 200, 24, 60}, 2.0, 0.0, cv::Scalar(40, 200, 220)},
        {{64, 215, 8, 10}, 2.0, 0.0, cv::Scalar(40, 200, 220)},
        {{72, 200, 24, 60}, 2.0, 0.0, cv::Scalar(220, 40, 200)},
        {{250, 120, 24, 40}, -2.0, 0.0, cv::Scalar(240, 240, 60)},
        {{244, 160, 6, 20}, -2.0, 0.0, cv::Scalar(240, 240, 60)},
        {{274, 160, 6, 20}, -2.0, 0.0, cv::Scalar(240, 240, 60)},
    };
    MotionFusionTeacher fusion(std::make_unique<GivenDetector>(),
                               std::make_unique<MotionTeacher>());
    auto &given = dynamic_cast<GivenDetector &>(fusion.detector());
    const cv::Rect2d legs(244, 120, 36, 60); // L's whole extent at frame 0
    int cut = 0;
    for (int f = 0; f < 100; ++f) {
        const cv::Rect2d s = movers[0].box(f);
        given.next = {{cv::Rect2d(s.x - 4, s.y - 8, s.width + 8, s.height + 16), 1.f, 0}};
        const auto boxes = fusion.detect(draw(bg, movers, f));
        if (fusion.typicalWidthShare() == 0.0)
            continue;
        QVERIFY2(std::abs(fusion.typicalWidthShare() - 0.4) < 0.05,
                 qPrintable(QString::number(fusion.typicalWidthShare())));
        if (f < 50)
            continue;
        const auto &c = fusion.lastCounts();
        QCOMPARE(c.confirmed, 1);
        QCOMPARE(c.merged_parts, 2);
        QCOMPARE(c.motion_only, 2);
        QCOMPARE(int(boxes.size()), 4);
        for (int i : {0, 1, 3}) {
            const double v = bestIou(boxes, movers[std::size_t(i)].box(f));
            QVERIFY2(v > 0.8,
                     qPrintable(QString("frame %1 object %2: IoU %3").arg(f).arg(i).arg(v)));
        }
        const cv::Rect2d l(legs.x - 2.0 * f, legs.y, legs.width, legs.height);
        QVERIFY2(bestIou(boxes, l) > 0.8, qPrintable(QString("frame %1: L").arg(f)));
        ++cut;
    }
    QCOMPARE(cut, 50);
}

void TestMotion::hogCorrectedBoxIsTighterOnVtest()
{
    if (!std::ifstream(kVtest))
        QFAIL("vtest.avi (opencv-doc) is missing: scripts/install-deps.sh installs it");
    cv::VideoCapture video(kVtest);
    MotionTeacher motion;
    HogTeacher raw, tight;
    raw.convention = {};
    cv::Mat frame;
    double rawSum = 0, tightSum = 0;
    int matched = 0;
    for (int f = 0; f <= 120 && video.read(frame); ++f) {
        if (f < 60 || f % 20 != 0) {
            motion.observe(frame);
            continue;
        }
        (void)motion.detect(frame);
        const auto windows = raw.detect(frame);
        const auto corrected = tight.detect(frame);
        QCOMPARE(corrected.size(), windows.size());
        for (std::size_t i = 0; i < windows.size(); ++i) {
            // a person the motion model sees as one blob, alone
            int touching = 0;
            const MotionTeacher::Blob *only = nullptr;
            for (const auto &b : motion.blobs())
                if ((b.box & windows[i].box).area() > 0) {
                    ++touching;
                    only = &b;
                }
            if (touching != 1 || only->box.height < 50 || iou(only->box, corrected[i].box) < 0.3)
                continue;
            rawSum += iou(only->box, windows[i].box);
            tightSum += iou(only->box, corrected[i].box);
            ++matched;
        }
    }
    QVERIFY2(matched >= 3, qPrintable(QString("%1 people matched").arg(matched)));
    qInfo("HOG on vtest frames 60-120: mean IoU with the person's motion blob %.2f raw, %.2f "
          "corrected (%d people)",
          rawSum / matched, tightSum / matched, matched);
    QVERIFY(tightSum / matched > rawSum / matched + 0.15);
    QVERIFY(tightSum / matched > 0.6);
}

void TestMotion::knockVideoMovesPixelsAndBoxes()
{
    QTemporaryDir dir;
    const std::string in = dir.path().toStdString() + "/in.avi";
    const cv::Size size(320, 240);
    const cv::Rect box(100, 80, 40, 60);
    {
        cv::VideoWriter w(in, cv::CAP_FFMPEG, cv::VideoWriter::fourcc('F', 'F', 'V', '1'), 25,
                          size);
        QVERIFY(w.isOpened());
        for (int f = 0; f < 10; ++f) {
            cv::Mat img(size, CV_8UC3, cv::Scalar(90, 90, 90));
            cv::rectangle(img, box, cv::Scalar(20, 20, 240), cv::FILLED);
            w.write(img);
        }
    }
    const std::string gt = dir.path().toStdString() + "/gt.txt";
    std::ofstream(gt)
        << "3,1,100,80,40,60,1,1,1\n8,1,100,80,40,60,1,1,1\n8,2,300,220,30,30,1,1,1\n";
    QProcess p;
    p.start(KNOCK_VIDEO, {"--in", QString::fromStdString(in), "--out", dir.path() + "/out.avi",
                          "--from", "5", "--scale", "1.1", "--shift", "40,24", "--map-mot",
                          QString::fromStdString(gt), "--map-out", dir.path() + "/out_gt.txt"});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());

    // Where the transform says: edge e -> 1.1 (e - size / 2) + size / 2 + shift.
    const cv::Rect2d expect(1.1 * (100 - 160) + 160 + 40, 1.1 * (80 - 120) + 120 + 24, 44, 66);
    cv::VideoCapture out(dir.path().toStdString() + "/out.avi");
    QVERIFY(out.isOpened());
    cv::Mat frame;
    for (int f = 0; f < 10; ++f) {
        QVERIFY(out.read(frame));
        cv::Mat red;
        cv::inRange(frame, cv::Scalar(0, 0, 160), cv::Scalar(90, 90, 255), red);
        const cv::Rect found = cv::boundingRect(red);
        const cv::Rect2d want = f < 5 ? cv::Rect2d(box) : expect;
        QVERIFY2(std::abs(found.x - want.x) <= 1.0 && std::abs(found.y - want.y) <= 1.0 &&
                     std::abs(found.br().x - want.br().x) <= 1.0 &&
                     std::abs(found.br().y - want.br().y) <= 1.0,
                 qPrintable(QString("frame %1: found %2,%3 %4x%5")
                                .arg(f)
                                .arg(found.x)
                                .arg(found.y)
                                .arg(found.width)
                                .arg(found.height)));
        // border replicated: the corner is the background's grey, not black
        QVERIFY(frame.at<cv::Vec3b>(0, 0)[0] > 60);
    }
    QVERIFY(!out.read(frame));

    std::ifstream mapped(dir.path().toStdString() + "/out_gt.txt");
    std::string l1, l2, l3;
    QVERIFY(std::getline(mapped, l1) && std::getline(mapped, l2));
    QCOMPARE(l1, std::string("3,1,100,80,40,60,1,1,1")); // before the knock: as it was
    QCOMPARE(l2, std::string("8,1,134.00,100.00,44.00,66.00,1,1,1"));
    // (300, 220, 30, 30) -> (334, 232, 33, 33), clipped to the 320x240 frame: gone
    QVERIFY(!std::getline(mapped, l3));

    std::ofstream(gt) << "8,1,100,eighty,40,60,1,1,1\n";
    p.start(KNOCK_VIDEO,
            {"--in", QString::fromStdString(in), "--out", dir.path() + "/o2.avi", "--from", "5",
             "--map-mot", QString::fromStdString(gt), "--map-out", dir.path() + "/o2.txt"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(p.readAllStandardError().contains("gt.txt:1 field y: 'eighty' is not a number"));
}

QTEST_GUILESS_MAIN(TestMotion)
#include "tst_motion.moc"

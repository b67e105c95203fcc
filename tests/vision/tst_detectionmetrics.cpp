// Detection figures against verified frames, as COCO computes them: greedy matching by score,
// ignore boxes that absorb detections, 101-point interpolated AP. One case computed by hand.

#include "vision/detectionmetrics.h"

#include <QTest>

using namespace edgetrain::vision;

namespace {

TruthFrame doneFrame(int index, std::vector<TruthBox> boxes)
{
    TruthFrame f;
    f.index = index;
    f.boxes = std::move(boxes);
    f.done = true;
    return f;
}

bool near(double a, double b)
{
    return std::abs(a - b) < 1e-9;
}

} // namespace

class TestDetectionMetrics : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void handComputed()
    {
        // Frame 0: truths A (0,0,10,10), B (20,0,10,10).
        //   d1 (0,0,10,10) 0.9 -> A, IoU 1: TP.  d2 (21,0,10,10) 0.8 -> B, IoU 90/110 = 0.818: TP.
        //   d3 (50,50,10,10) 0.3: nothing there: FP.
        // Frame 1: truth C (0,0,10,10), ignore box I (40,0,20,20).
        //   d4 (45,5,8,8) 0.7: inside I: neither.  d5 (100,100,10,10) 0.6: FP.  C is missed.
        // Frame 2: truth D (0,0,10,10), no detections: missed.
        // Frame 3 (not done) and frame 9 (after last_frame): not scored, though detected.
        // Truths 4 (A, B, C, D). By score: 0.9 TP, 0.8 TP, 0.7 -, 0.6 FP, 0.3 FP.
        // Threshold 0: TP 2, FP 2: recall 0.5, precision 0.5, F1 0.5.
        // Curve (recall, precision): (.25, 1) (.5, 1) (.5, .667) (.5, .5); the envelope is the
        // same. AP50: recall levels 0..0.25 -> 1 (26 levels), 0.26..0.50 -> 1 (25 levels),
        // 0.51..1 -> 0: 51/101 = 0.50495.
        // IoU 0.85..0.95: d2 (0.818) is FP: recall levels 0..0.25 -> 1: 26/101. AP@[.5:.95] =
        // (7 * 51/101 + 3 * 26/101) / 10 = 435/1010 = 0.43069.
        // Threshold 0.65 (d5 and d3 dropped): TP 2, FP 0: recall .5, precision 1, F1 2/3.
        GroundTruth gt;
        gt.frames.push_back(
            doneFrame(0, {{cv::Rect2d(0, 0, 10, 10)}, {cv::Rect2d(20, 0, 10, 10)}}));
        gt.frames.push_back(
            doneFrame(1, {{cv::Rect2d(0, 0, 10, 10)}, {cv::Rect2d(40, 0, 20, 20), true}}));
        gt.frames.push_back(doneFrame(2, {{cv::Rect2d(0, 0, 10, 10)}}));
        gt.ensureFrame(3).boxes.push_back({cv::Rect2d(0, 0, 10, 10)}); // not done
        gt.frames.push_back(doneFrame(9, {{cv::Rect2d(0, 0, 10, 10)}}));
        FrameDetections d;
        d[0] = {{cv::Rect2d(50, 50, 10, 10), 0.3f},
                {cv::Rect2d(21, 0, 10, 10), 0.8f},
                {cv::Rect2d(0, 0, 10, 10), 0.9f}};
        d[1] = {{cv::Rect2d(45, 5, 8, 8), 0.7f}, {cv::Rect2d(100, 100, 10, 10), 0.6f}};
        d[3] = {{cv::Rect2d(0, 0, 10, 10), 0.9f}, {cv::Rect2d(70, 0, 10, 10), 0.9f}};
        d[9] = {{cv::Rect2d(70, 0, 10, 10), 0.9f}};
        MetricsOptions o;
        o.last_frame = 8;
        const DetectorScore s = DetectionMetrics::evaluate("hand", d, gt, o);
        QCOMPARE(s.frames, 3);
        QCOMPARE(s.truths, 4);
        QCOMPARE(s.true_positives, 2);
        QCOMPARE(s.false_positives, 2);
        QCOMPARE(s.detections, 4);
        QVERIFY(near(s.recall, 0.5));
        QVERIFY(near(s.precision, 0.5));
        QVERIFY(near(s.f1, 0.5));
        QVERIFY2(near(s.ap50, 51.0 / 101.0), qPrintable(QString::number(s.ap50)));
        QVERIFY2(near(s.ap50_95, 435.0 / 1010.0), qPrintable(QString::number(s.ap50_95)));
        QCOMPARE(int(s.curve.size()), 4);
        QVERIFY(near(s.curve[0].recall, 0.25) && near(s.curve[0].precision, 1.0));
        QCOMPARE(s.curve[0].threshold, 0.9f);
        QVERIFY(near(s.curve[2].recall, 0.5) && near(s.curve[2].precision, 2.0 / 3.0));
        QVERIFY(near(s.curve[3].precision, 0.5));

        o.threshold = 0.65f;
        const DetectorScore at = DetectionMetrics::evaluate("hand", d, gt, o);
        QCOMPARE(at.true_positives, 2);
        QCOMPARE(at.false_positives, 0);
        QVERIFY(near(at.recall, 0.5));
        QVERIFY(near(at.precision, 1.0));
        QVERIFY(near(at.f1, 2.0 / 3.0));
        QVERIFY(near(at.ap50, s.ap50)); // AP does not depend on the operating point

        // The not-done frame counts once only_done_frames is off: its truth is found, and the
        // second detection there is false.
        o.threshold = 0.0f;
        o.only_done_frames = false;
        const DetectorScore all = DetectionMetrics::evaluate("hand", d, gt, o);
        QCOMPARE(all.frames, 4);
        QCOMPARE(all.true_positives, 3);
        QCOMPARE(all.false_positives, 3);
    }

    void ignoreBoxAbsorbsDetections()
    {
        GroundTruth gt;
        gt.frames.push_back(
            doneFrame(0, {{cv::Rect2d(0, 0, 40, 80)}, {cv::Rect2d(100, 0, 30, 30), true}}));
        FrameDetections d;
        d[0] = {{cv::Rect2d(0, 0, 40, 80), 0.9f},
                {cv::Rect2d(102, 2, 26, 26), 0.8f},  // IoU 0.75 with the ignore box
                {cv::Rect2d(110, 10, 40, 10), 0.7f}, // half inside it: still absorbed
                {cv::Rect2d(125, 0, 40, 40), 0.6f}}; // mostly outside: false
        const DetectorScore s = DetectionMetrics::evaluate("d", d, gt, MetricsOptions());
        QCOMPARE(s.truths, 1);
        QCOMPARE(s.true_positives, 1);
        QCOMPARE(s.false_positives, 1);
        QCOMPARE(s.detections, 2);
        QVERIFY(near(s.precision, 0.5));
    }

    void perfectDetector()
    {
        GroundTruth gt;
        FrameDetections d;
        for (int f = 0; f < 5; ++f) {
            std::vector<TruthBox> boxes;
            for (int k = 0; k <= f % 3; ++k) {
                boxes.push_back({cv::Rect2d(50.0 * k, 10, 30, 60)});
                d[f].push_back({boxes.back().box, 0.5f + 0.1f * float(k)});
            }
            gt.frames.push_back(doneFrame(f, boxes));
        }
        gt.frames.push_back(doneFrame(7, {})); // nobody there, nothing found
        const DetectorScore s = DetectionMetrics::evaluate("perfect", d, gt, MetricsOptions());
        QCOMPARE(s.frames, 6);
        QVERIFY(near(s.recall, 1.0));
        QVERIFY(near(s.precision, 1.0));
        QVERIFY(near(s.f1, 1.0));
        QVERIFY(near(s.ap50, 1.0));
        QVERIFY(near(s.ap50_95, 1.0));
    }

    void duplicatesAreFalse()
    {
        GroundTruth gt;
        gt.frames.push_back(doneFrame(0, {{cv::Rect2d(10, 10, 30, 60)}}));
        FrameDetections d;
        d[0] = {{cv::Rect2d(10, 10, 30, 60), 0.9f}, {cv::Rect2d(11, 10, 30, 60), 0.8f}};
        const DetectorScore s = DetectionMetrics::evaluate("dup", d, gt, MetricsOptions());
        QCOMPARE(s.true_positives, 1);
        QCOMPARE(s.false_positives, 1);
        QVERIFY(near(s.precision, 0.5));
        QVERIFY(near(s.ap50, 1.0)); // the best-scored one came first
    }

    void missedFrameCountsItsTruths()
    {
        GroundTruth gt;
        gt.frames.push_back(doneFrame(0, {{cv::Rect2d(10, 10, 30, 60)}}));
        gt.frames.push_back(doneFrame(1, {{cv::Rect2d(10, 10, 30, 60)}}));
        FrameDetections d;
        d[0] = {{cv::Rect2d(10, 10, 30, 60), 0.9f}};
        const DetectorScore s = DetectionMetrics::evaluate("half", d, gt, MetricsOptions());
        QVERIFY(near(s.recall, 0.5));
        QVERIFY(near(s.precision, 1.0));
    }

    void looseBoxesLoseAtStrictIou()
    {
        // Every detection is its truth scaled 1.2x about the centre: IoU 1/1.44 = 0.694, a hit at
        // IoU 0.50..0.65 (4 of the 10 thresholds) and a miss from 0.70 on.
        GroundTruth gt;
        FrameDetections d;
        for (int f = 0; f < 3; ++f) {
            const cv::Rect2d t(40.0 * f + 20, 20, 20, 50);
            gt.frames.push_back(doneFrame(f, {{t}}));
            d[f] = {{cv::Rect2d(t.x - 2, t.y - 5, 24, 60), 0.9f - 0.1f * float(f)}};
        }
        const DetectorScore s = DetectionMetrics::evaluate("loose", d, gt, MetricsOptions());
        QVERIFY(near(s.ap50, 1.0));
        QVERIFY(s.ap50_95 < s.ap50);
        QVERIFY2(near(s.ap50_95, 0.4), qPrintable(QString::number(s.ap50_95)));
        QVERIFY(near(s.recall, 1.0));
    }

    void severalDetectorsInOrder()
    {
        GroundTruth gt;
        gt.frames.push_back(doneFrame(0, {{cv::Rect2d(10, 10, 30, 60)}}));
        FrameDetections hit, miss;
        hit[0] = {{cv::Rect2d(10, 10, 30, 60), 1.0f}};
        miss[0] = {{cv::Rect2d(200, 10, 30, 60), 1.0f}};
        const auto scores =
            DetectionMetrics::evaluate({{"teacher", miss}, {"student", hit}}, gt, MetricsOptions());
        QCOMPARE(int(scores.size()), 2);
        QCOMPARE(scores[0].name, std::string("teacher"));
        QVERIFY(near(scores[0].recall, 0.0));
        QVERIFY(near(scores[1].recall, 1.0));
    }
};

QTEST_GUILESS_MAIN(TestDetectionMetrics)
#include "tst_detectionmetrics.moc"

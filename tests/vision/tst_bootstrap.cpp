// Bootstrap intervals for detection figures over verified frames: frame matches that reproduce
// evaluate(), intervals that cover a known recall as often as they claim, paired differences,
// the same bounds for the same seed, and how many more frames a difference needs.

#include "core/error.h"
#include "vision/bootstrap.h"

#include <QElapsedTimer>
#include <QTest>

#include <cmath>
#include <ctime>
#include <random>

using namespace edgetrain::vision;

namespace {

/** A realistic verified clip with its detections: ignore boxes, frames without detections or
 *  without truths, frames not done, detections outside the span, scores in 0.05 steps (ties
 *  across and within frames), jittered boxes (some miss IoU 0.5), duplicates and strays. */
struct Clip
{
    GroundTruth truth;
    FrameDetections detections;
};

Clip realisticClip(unsigned seed)
{
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    const auto score = [&] { return float(std::round(u(rng) * 20) / 20); };
    Clip c;
    for (int index = 0; index < 24; ++index) {
        TruthFrame &f = c.truth.ensureFrame(index);
        f.done = index % 7 != 3;
        const int people = index % 5 == 0 ? 0 : 1 + int(u(rng) * 5);
        for (int p = 0; p < people; ++p)
            f.boxes.push_back({cv::Rect2d(40.0 * p + u(rng) * 10, 20 + u(rng) * 50, 30, 60)});
        if (index % 3 == 0)
            f.boxes.push_back({cv::Rect2d(300, 0, 80, 80), true});
        if (index % 4 == 1)
            continue; // nothing detected on this frame
        std::vector<ScoredBox> &d = c.detections[index];
        for (const TruthBox &t : f.boxes) {
            if (t.ignore) {
                d.push_back({cv::Rect2d(310, 10, 20, 20), score()});
                continue;
            }
            if (u(rng) < 0.8) {
                const double dx = (u(rng) - 0.5) * 24, dy = (u(rng) - 0.5) * 40;
                d.push_back({t.box + cv::Point2d(dx, dy), score()});
            }
            if (u(rng) < 0.15)
                d.push_back({t.box + cv::Point2d(2, 2), score()});
        }
        for (int stray = int(u(rng) * 3); stray > 0; --stray)
            d.push_back({cv::Rect2d(200 + u(rng) * 60, 150, 25, 50), score()});
    }
    return c;
}

bool sameFigures(const DetectionMetrics::Figures &a, const DetectionMetrics::Figures &b)
{
    return a.recall == b.recall && a.precision == b.precision && a.f1 == b.f1 && a.ap50 == b.ap50 &&
           a.truths == b.truths && a.detections == b.detections &&
           a.true_positives == b.true_positives;
}

QString describe(const DetectionMetrics::Figures &f)
{
    return QStringLiteral("r %1 p %2 f1 %3 ap %4 truths %5 det %6 tp %7")
        .arg(f.recall, 0, 'g', 17)
        .arg(f.precision, 0, 'g', 17)
        .arg(f.f1, 0, 'g', 17)
        .arg(f.ap50, 0, 'g', 17)
        .arg(f.truths)
        .arg(f.detections)
        .arg(f.true_positives);
}

/** Frames where each truth is found with probability 0.8 overall, but frame by frame either
 *  always (half the frames) or with 0.6: a frame's boxes are not independent of each other. */
std::vector<FrameMatch> clusteredFrames(std::uint64_t seed, int count)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<FrameMatch> frames;
    for (int i = 0; i < count; ++i) {
        FrameMatch f;
        f.frame = i;
        f.truths = 3 + int(u(rng) * 6);
        const double found = u(rng) < 0.5 ? 1.0 : 0.6;
        for (int t = 0; t < f.truths; ++t)
            if (u(rng) < found)
                f.detections.push_back({float(0.3 + 0.7 * u(rng)), true});
        while (u(rng) < 0.5)
            f.detections.push_back({float(u(rng)), false});
        std::sort(
            f.detections.begin(), f.detections.end(),
            [](const MatchedDetection &a, const MatchedDetection &b) { return a.score > b.score; });
        frames.push_back(f);
    }
    return frames;
}

/** The same truths, each its own "frame": what resampling boxes instead of frames would do. */
std::vector<FrameMatch> boxesAsFrames(const std::vector<FrameMatch> &frames)
{
    std::vector<FrameMatch> out;
    for (const FrameMatch &f : frames) {
        int found = 0;
        for (const MatchedDetection &d : f.detections)
            found += d.true_positive ? 1 : 0;
        for (int t = 0; t < f.truths; ++t) {
            FrameMatch one;
            one.frame = int(out.size());
            one.truths = 1;
            if (t < found)
                one.detections.push_back({1.0f, true});
            out.push_back(one);
        }
    }
    return out;
}

struct Coverage
{
    double covered = 0, meanWidth = 0;
};

Coverage recallCoverage(const std::vector<std::vector<FrameMatch>> &repeats, double level,
                        double truth)
{
    Coverage c;
    BootstrapOptions o;
    o.resamples = 500;
    o.level = level;
    for (std::size_t i = 0; i < repeats.size(); ++i) {
        o.seed = 1000 + i;
        const BootstrapResult r = Bootstrap::run({{"d", 0.0f, repeats[i]}}, {}, o);
        const Interval &ci = r.intervals[0].recall;
        c.covered += ci.contains(truth) ? 1 : 0;
        c.meanWidth += ci.hi - ci.lo;
    }
    c.covered /= double(repeats.size());
    c.meanWidth /= double(repeats.size());
    return c;
}

/** Detector b finds a subset of what a finds on every frame, and at least one truth fewer. */
std::pair<BootstrapDetector, BootstrapDetector> betterAndWorse()
{
    BootstrapDetector a{"a", 0.5f, {}}, b{"b", 0.5f, {}};
    for (int i = 0; i < 12; ++i) {
        FrameMatch f;
        f.frame = 2 * i;
        f.truths = 3 + i % 4;
        f.detections.push_back({0.9f, false});
        for (int t = 0; t < f.truths; ++t)
            f.detections.push_back({0.8f - 0.05f * float(t), true});
        a.frames.push_back(f);
        const int missed = 1 + i % 2;
        f.detections.resize(f.detections.size() - std::size_t(missed));
        b.frames.push_back(f);
    }
    return {a, b};
}

bool sameIntervals(const FigureIntervals &a, const FigureIntervals &b)
{
    const auto same = [](const Interval &x, const Interval &y) {
        return x.lo == y.lo && x.hi == y.hi && x.draws == y.draws;
    };
    return same(a.recall, b.recall) && same(a.precision, b.precision) && same(a.f1, b.f1) &&
           same(a.ap50, b.ap50);
}

} // namespace

class TestBootstrap : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void matchesEvaluate_data()
    {
        QTest::addColumn<float>("threshold");
        QTest::addColumn<bool>("onlyDone");
        QTest::addColumn<unsigned>("seed");
        for (const unsigned seed : {1u, 2u, 3u})
            for (const float t : {0.0f, 0.25f, 0.5f, 0.7f, 0.95f}) {
                const QByteArray name = QByteArray::number(seed) + " at " + QByteArray::number(t);
                QTest::newRow(name + " done") << t << true << seed;
                QTest::newRow(name + " all") << t << false << seed;
            }
    }

    void matchesEvaluate()
    {
        QFETCH(float, threshold);
        QFETCH(bool, onlyDone);
        QFETCH(unsigned, seed);
        const Clip clip = realisticClip(seed);
        MetricsOptions o;
        o.threshold = threshold;
        o.only_done_frames = onlyDone;
        o.first_frame = 2;
        o.last_frame = 21;
        const DetectorScore s = DetectionMetrics::evaluate("d", clip.detections, clip.truth, o);
        const std::vector<FrameMatch> frames =
            DetectionMetrics::frameMatches(clip.detections, clip.truth, o);
        QCOMPARE(int(frames.size()), s.frames);
        QVERIFY(std::is_sorted(
            frames.begin(), frames.end(),
            [](const FrameMatch &a, const FrameMatch &b) { return a.frame < b.frame; }));
        QVERIFY(frames.front().frame >= 2 && frames.back().frame <= 21);
        const DetectionMetrics::Figures f = DetectionMetrics::figures(frames, threshold);
        QVERIFY(threshold > 0.9f || (s.true_positives > 0 && s.false_positives > 0));
        QCOMPARE(f.truths, s.truths);
        QCOMPARE(f.true_positives, s.true_positives);
        QCOMPARE(f.detections - f.true_positives, s.false_positives);
        QVERIFY2(
            f.recall == s.recall && f.precision == s.precision && f.f1 == s.f1 && f.ap50 == s.ap50,
            qPrintable(describe(f) + QStringLiteral(" / evaluate: ap %1").arg(s.ap50, 0, 'g', 17)));
    }

    void weightsRepeatFrames()
    {
        // Counting a frame w times is listing it w times in a row, tied scores included.
        const Clip clip = realisticClip(7);
        const std::vector<FrameMatch> frames =
            DetectionMetrics::frameMatches(clip.detections, clip.truth, MetricsOptions{});
        std::mt19937 rng(11);
        for (int trial = 0; trial < 20; ++trial) {
            std::vector<int> weight;
            std::vector<FrameMatch> listed;
            for (const FrameMatch &f : frames) {
                weight.push_back(int(rng() % 4));
                for (int k = 0; k < weight.back(); ++k)
                    listed.push_back(f);
            }
            for (const float t : {0.0f, 0.5f}) {
                const auto weighted = DetectionMetrics::figures(frames, t, weight);
                const auto plain = DetectionMetrics::figures(listed, t);
                QVERIFY2(sameFigures(weighted, plain),
                         qPrintable(describe(weighted) + " vs " + describe(plain)));
            }
        }
        const std::vector<int> ones(frames.size(), 1);
        QVERIFY(sameFigures(DetectionMetrics::figures(frames, 0.3f, ones),
                            DetectionMetrics::figures(frames, 0.3f)));
        QVERIFY_THROWS_EXCEPTION(edgetrain::core::Error,
                                 DetectionMetrics::figures(frames, 0.3f, {1, 2}));
    }

    void recallCoverage()
    {
        std::vector<std::vector<FrameMatch>> repeats, boxes;
        double mean = 0, square = 0;
        for (std::uint64_t seed = 1; seed <= 400; ++seed) {
            repeats.push_back(clusteredFrames(seed, 20));
            boxes.push_back(boxesAsFrames(repeats.back()));
            const double r = DetectionMetrics::figures(repeats.back(), 0.0f).recall;
            mean += r;
            square += r * r;
        }
        const double n = double(repeats.size());
        const double spread = std::sqrt(square / n - (mean / n) * (mean / n));
        // What a 95 % interval's width should be if the recall estimate were normal.
        const double expectedWidth = 2 * 1.96 * spread;

        const Coverage frames = ::recallCoverage(repeats, 0.95, 0.8);
        const Coverage byBox = ::recallCoverage(boxes, 0.95, 0.8);
        const Coverage half = ::recallCoverage(repeats, 0.5, 0.8);
        const QString report = QStringLiteral("frames %1 (width %2), boxes %3 (width %4), 50 %: %5 "
                                              "(width %6); expected width %7")
                                   .arg(frames.covered)
                                   .arg(frames.meanWidth)
                                   .arg(byBox.covered)
                                   .arg(byBox.meanWidth)
                                   .arg(half.covered)
                                   .arg(half.meanWidth)
                                   .arg(expectedWidth);
        qInfo("%s", qPrintable(report));
        QVERIFY2(frames.covered >= 0.88 && frames.covered <= 0.99, qPrintable(report));
        QVERIFY2(frames.meanWidth > 0.8 * expectedWidth && frames.meanWidth < 1.2 * expectedWidth,
                 qPrintable(report));
        // The same check rejects intervals that ignore how a frame's boxes go together, and
        // intervals at a lower level than claimed.
        QVERIFY2(byBox.covered < 0.88 && byBox.meanWidth < 0.8 * expectedWidth, qPrintable(report));
        QVERIFY2(half.covered < 0.88 && half.meanWidth < 0.8 * expectedWidth, qPrintable(report));
    }

    void pairedDifferences()
    {
        const auto [better, worse] = betterAndWorse();
        const BootstrapResult same = Bootstrap::run({better, better}, {{0, 1}});
        const BootstrapDifference &none = same.differences[0];
        for (const Interval *ci :
             {&none.ci.recall, &none.ci.precision, &none.ci.f1, &none.ci.ap50}) {
            QCOMPARE(ci->lo, 0.0);
            QCOMPARE(ci->hi, 0.0);
            QCOMPARE(ci->draws, 2000);
            QVERIFY(!ci->clearOfZero());
        }
        QVERIFY(sameIntervals(same.intervals[0], same.intervals[1]));

        const BootstrapResult r = Bootstrap::run({better, worse}, {{0, 1}, {1, 0}});
        const BootstrapDifference &up = r.differences[0], &down = r.differences[1];
        QCOMPARE(up.a, std::string("a"));
        QCOMPARE(up.b, std::string("b"));
        QCOMPARE(up.a_minus_b.recall, r.figures[0].recall - r.figures[1].recall);
        QCOMPARE(up.a_minus_b.ap50, r.figures[0].ap50 - r.figures[1].ap50);
        QVERIFY(up.a_minus_b.recall > 0 && up.a_minus_b.precision > 0);
        const std::pair<const Interval *, double> figures[] = {
            {&up.ci.recall, up.a_minus_b.recall},
            {&up.ci.precision, up.a_minus_b.precision},
            {&up.ci.f1, up.a_minus_b.f1},
            {&up.ci.ap50, up.a_minus_b.ap50}};
        for (const auto &[ci, point] : figures)
            QVERIFY2(
                ci->clearOfZero() && ci->lo > 0 && ci->contains(point),
                qPrintable(QStringLiteral("%1 in [%2, %3]").arg(point).arg(ci->lo).arg(ci->hi)));
        QCOMPARE(down.ci.recall.hi, -up.ci.recall.lo);
        QVERIFY(down.ci.f1.hi < 0);
        for (const FigureIntervals &fi : r.intervals)
            QVERIFY(fi.recall.contains(r.figures[&fi - r.intervals.data()].recall));
    }

    void undefinedFigures()
    {
        auto [better, worse] = betterAndWorse();
        BootstrapDetector silent{"silent", 0.5f, better.frames};
        for (FrameMatch &f : silent.frames)
            f.detections.clear();
        const BootstrapResult r = Bootstrap::run({better, silent}, {{0, 1}});
        const Interval &p = r.intervals[1].precision;
        QVERIFY(p.lo == 0.0 && p.hi == 1.0 && p.draws == 0);
        QCOMPARE(r.intervals[1].f1.hi, 0.0); // it found nothing: f1 is 0, not unknown
        QVERIFY(r.differences[0].ci.precision.lo == -1.0 &&
                r.differences[0].ci.precision.hi == 1.0);
        QVERIFY(r.differences[0].ci.recall.clearOfZero());

        BootstrapDetector blind = better;
        for (FrameMatch &f : blind.frames)
            f.truths = 0, f.detections.resize(1);
        const BootstrapResult none = Bootstrap::run({blind}, {});
        QVERIFY(none.intervals[0].recall.lo == 0.0 && none.intervals[0].recall.hi == 1.0);
        QVERIFY(none.intervals[0].ap50.lo == 0.0 && none.intervals[0].ap50.hi == 1.0);
        QVERIFY(none.intervals[0].precision.lo == 0.0 && none.intervals[0].precision.hi == 0.0);

        for (const int count : {0, 1}) {
            BootstrapDetector few = better;
            few.frames.resize(std::size_t(count));
            const BootstrapResult one = Bootstrap::run({few, few}, {{0, 1}});
            QCOMPARE(one.frames, count);
            QVERIFY(one.intervals[0].recall.lo == 0.0 && one.intervals[0].recall.hi == 1.0);
            QVERIFY(one.differences[0].ci.f1.lo == -1.0 && one.differences[0].ci.f1.hi == 1.0);
        }

        BootstrapDetector shifted = worse;
        shifted.frames.back().frame += 1;
        QVERIFY_THROWS_EXCEPTION(edgetrain::core::Error, Bootstrap::run({better, shifted}, {}));
        QVERIFY_THROWS_EXCEPTION(edgetrain::core::Error, Bootstrap::run({better, worse}, {{0, 2}}));
    }

    void sameSeedSameBounds()
    {
        const auto [better, worse] = betterAndWorse();
        std::vector<BootstrapDetector> detectors{{"c", 0.0f, clusteredFrames(5, 20)}};
        detectors.push_back({"d", 0.4f, detectors[0].frames});
        for (FrameMatch &f : detectors[1].frames)
            f.detections.resize(f.detections.size() / 2);
        BootstrapOptions o;
        o.resamples = 300;
        const BootstrapResult a = Bootstrap::run(detectors, {{0, 1}}, o);
        const BootstrapResult b = Bootstrap::run(detectors, {{0, 1}}, o);
        QVERIFY(sameIntervals(a.intervals[0], b.intervals[0]));
        QVERIFY(sameIntervals(a.intervals[1], b.intervals[1]));
        QVERIFY(sameIntervals(a.differences[0].ci, b.differences[0].ci));
        o.seed += 1;
        const BootstrapResult c = Bootstrap::run(detectors, {{0, 1}}, o);
        QVERIFY(!sameIntervals(a.intervals[0], c.intervals[0]));

        // Bounds every platform must reproduce: mt19937_64 and the index rule are fixed.
        o.seed = 20261128;
        o.resamples = 200;
        const BootstrapResult pinned = Bootstrap::run({better, worse}, {{0, 1}}, o);
        const QString got = QStringLiteral("%1 %2 %3 %4")
                                .arg(pinned.intervals[1].recall.lo, 0, 'g', 17)
                                .arg(pinned.intervals[1].recall.hi, 0, 'g', 17)
                                .arg(pinned.differences[0].ci.ap50.lo, 0, 'g', 17)
                                .arg(pinned.differences[0].ci.ap50.hi, 0, 'g', 17);
        QCOMPARE(got, QStringLiteral("0.59999999999999998 0.72727272727272729 "
                                     "0.26491684759750267 0.37712390164847659"));
    }

    void framesToSettle()
    {
        QCOMPARE(Bootstrap::framesToSettle(30, 0.1, {0.02, 0.18}), std::optional<int>(0));
        QCOMPARE(Bootstrap::framesToSettle(30, -0.1, {-0.18, -0.01}), std::optional<int>(0));
        QCOMPARE(Bootstrap::framesToSettle(30, 0.001, {-0.1, 0.1}), std::nullopt);
        QCOMPARE(Bootstrap::framesToSettle(30, 0.0, {-0.1, 0.1}), std::nullopt);
        // Reach towards zero 0.06 against delta 0.05: 30 * (0.06 / 0.05)^2 = 43.2 frames, so 44
        // in all (44: 0.06 * sqrt(30 / 44) = 0.0495 < 0.05; 43: 0.0501), 14 more.
        QCOMPARE(Bootstrap::framesToSettle(30, 0.05, {-0.01, 0.11}), std::optional<int>(14));
        QCOMPARE(Bootstrap::framesToSettle(30, -0.05, {-0.11, 0.01}), std::optional<int>(14));
        // Only the side towards zero counts: a long reach away from zero changes nothing.
        QCOMPARE(Bootstrap::framesToSettle(30, 0.05, {-0.01, 0.5}), std::optional<int>(14));
        QCOMPARE(Bootstrap::framesToSettle(30, 0.05, {-0.01, 0.11}, 13), std::nullopt);
        // Halving the reach needs a quarter of the frames: from 10, a reach of twice delta
        // needs 40 frames, and 41 to be strictly inside.
        QCOMPARE(Bootstrap::framesToSettle(10, 0.05, {-0.05, 0.15}), std::optional<int>(31));
    }

    void speed()
    {
        std::vector<BootstrapDetector> detectors;
        const char *names[] = {"teacher", "motion", "tracker", "student"};
        const std::vector<FrameMatch> frames = clusteredFrames(40, 30);
        for (std::size_t d = 0; d < 4; ++d) {
            detectors.push_back({names[d], 0.5f, frames});
            for (FrameMatch &f : detectors.back().frames)
                for (std::size_t k = d; k < f.detections.size(); k += 4)
                    f.detections.erase(f.detections.begin() + std::ptrdiff_t(k));
        }
        const std::vector<std::pair<int, int>> pairs{{0, 1}, {0, 2}, {0, 3},
                                                     {1, 2}, {1, 3}, {2, 3}};
        QElapsedTimer timer;
        timer.start();
        const std::clock_t cpu = std::clock();
        const BootstrapResult r = Bootstrap::run(detectors, pairs);
        const double cpu_ms = 1000.0 * double(std::clock() - cpu) / CLOCKS_PER_SEC;
        qInfo("2000 resamples x 30 frames x 4 detectors, 6 pairs: %.1f ms (%.1f ms of CPU)",
              double(timer.nsecsElapsed()) / 1e6, cpu_ms);
        QCOMPARE(int(r.intervals.size()), 4);
        QCOMPARE(int(r.differences.size()), 6);
        QCOMPARE(r.intervals[3].recall.draws, 2000);
    }
};

QTEST_GUILESS_MAIN(TestBootstrap)
#include "tst_bootstrap.moc"

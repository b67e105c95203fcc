// Where the detectors disagree: the parts of a frame's score on boxes drawn by hand, the pick's
// spread over time, kept frames, determinism, and the truth.json field that says which pick
// chose a frame.

#include "app/session/disagreement.h"
#include "vision/groundtruth.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <climits>

using namespace edgetrain;
using namespace edgetrain::app;

namespace {

DisagreementSource source(const std::string &name, float threshold = 0.0f, float margin = 0.0f)
{
    DisagreementSource s;
    s.name = name;
    s.threshold = threshold;
    s.nearMargin = margin;
    return s;
}

const cv::Rect2d kA(10, 10, 40, 100), kA2(12, 12, 40, 100), kB(200, 20, 40, 100),
    kC(400, 30, 40, 100), kD(600, 40, 40, 100);

/** Scores over frames 0 .. frames-1 that rise and fall, so neighbours often beat each other. */
std::vector<FrameDisagreement> wavyScores(int frames)
{
    std::vector<FrameDisagreement> scored;
    for (int f = 0; f < frames; ++f) {
        FrameDisagreement d;
        d.frame = f;
        d.sources = 3;
        d.unmatched = (f * 7919) % 13;
        d.onlyOne = f % 5 == 0;
        scored.push_back(d);
    }
    return scored;
}

int smallestGap(const std::vector<int> &frames)
{
    int gap = INT_MAX;
    for (std::size_t i = 1; i < frames.size(); ++i)
        gap = std::min(gap, frames[i] - frames[i - 1]);
    return gap;
}

} // namespace

class TestDisagreement : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void partsOnHandMadeBoxes()
    {
        // teacher: A, B. motion: A (shifted), C. student (threshold 0.4, margin 0.1): A sure,
        // B just above its threshold, D just below it (not found). The tracker did not look.
        auto teacher = source("teacher");
        teacher.boxes[5] = {{kA, 1.0f}, {kB, 1.0f}};
        auto motion = source("motion");
        motion.boxes[5] = {{kA2, 1.0f}, {kC, 1.0f}};
        auto student = source("student", 0.4f, 0.1f);
        student.boxes[5] = {{kA, 0.9f}, {kB, 0.45f}, {kD, 0.35f}};
        auto tracker = source("tracker");
        tracker.boxes[9] = {};
        const auto scored = Disagreement::score({teacher, motion, student, tracker});
        QCOMPARE(int(scored.size()), 2); // frame 5, and frame 9 where only the tracker looked
        const FrameDisagreement &d = scored[0];
        QCOMPARE(d.frame, 5);
        QCOMPARE(d.sources, 3);
        // teacher-motion: B and C unmatched; teacher-student: none; motion-student: C and B.
        QCOMPARE(d.unmatched, 4);
        QCOMPARE(d.nearThreshold, 2);         // B at 0.45 and D at 0.35
        QCOMPARE(d.onlyOne, 1);               // C: motion's alone
        QCOMPARE(d.score(), 4.0 / 3 + 2 + 1); // unmatched per pair: three pairs
        // Looked and found nobody, alone: nothing to disagree with.
        QCOMPARE(scored[1].frame, 9);
        QCOMPARE(scored[1].sources, 1);
        QCOMPARE(scored[1].score(), 0.0);
    }

    void anEmptyFrameDisagreesWithOneThatSeesSomeone()
    {
        auto teacher = source("teacher");
        teacher.boxes[0] = {};
        auto tracker = source("tracker");
        tracker.boxes[0] = {{kA, 1.0f}, {kB, 1.0f}};
        const auto d = Disagreement::score({teacher, tracker}).front();
        QCOMPARE(d.unmatched, 2);
        QCOMPARE(d.onlyOne, 2);
        // Matched one to one: two boxes on one person leave one unmatched.
        tracker.boxes[0] = {{kA, 1.0f}};
        teacher.boxes[0] = {{kA, 1.0f}, {kA2, 1.0f}};
        const auto e = Disagreement::score({teacher, tracker}).front();
        QCOMPARE(e.unmatched, 1);
        QCOMPARE(e.onlyOne, 0);
    }

    void trackerLooksOnlyWhereTheLabellingReached()
    {
        vision::LabelResult labels;
        labels.stats.frames = 10;
        vision::Track t;
        t.id = 1;
        t.boxes = {{4, kA, vision::BoxSource::Teacher, 0.9f}, {8, kB, vision::BoxSource::Tracker}};
        labels.tracks.push_back(t);
        vision::Track rejected = t;
        rejected.id = 2;
        rejected.state = vision::Track::State::Rejected;
        labels.tracks.push_back(rejected);
        const auto s = Disagreement::trackerSource(labels, {0, 4, 12});
        QCOMPARE(int(s.boxes.size()), 2); // 0 and 4; 12 is past the labelled frames
        QVERIFY(s.boxes.at(0).empty());
        QCOMPARE(int(s.boxes.at(4).size()), 1);
        QVERIFY(!s.boxes.count(12));
    }

    void candidatesAreEveryKthFrame()
    {
        QCOMPARE(Disagreement::candidateStep(795), 4);
        QCOMPARE(Disagreement::candidateStep(150), 1);
        const auto c = Disagreement::candidates(795, {490, 2000, -1});
        QVERIFY(c.count(0) && c.count(4) && c.count(792));
        QVERIFY(c.count(490));
        QVERIFY(!c.count(2000) && !c.count(-1) && !c.count(1));
        QCOMPARE(int(c.size()), 199 + 1);
        QVERIFY(int(Disagreement::candidates(100000).size()) <= Disagreement::kCandidates);
    }

    void pickSpreadsOverTime_data()
    {
        QTest::addColumn<int>("frames");
        QTest::addColumn<int>("count");
        QTest::newRow("vtest") << 795 << 20;
        QTest::newRow("short") << 120 << 8;
        QTest::newRow("long") << 5000 << 30;
    }

    void pickSpreadsOverTime()
    {
        QFETCH(int, frames);
        QFETCH(int, count);
        DisagreementPick pick;
        pick.frames = frames;
        pick.count = count;
        const auto picked = Disagreement::pick(wavyScores(frames), pick);
        QCOMPARE(int(picked.size()), count);
        QVERIFY(std::is_sorted(picked.begin(), picked.end()));
        QVERIFY2(smallestGap(picked) >= pick.gap(),
                 qPrintable(QString("gap %1 < %2").arg(smallestGap(picked)).arg(pick.gap())));
        // The best frame is always picked.
        const auto scored = wavyScores(frames);
        const auto best =
            std::max_element(scored.begin(), scored.end(),
                             [](const auto &a, const auto &b) { return a.score() < b.score(); });
        QVERIFY(std::count(picked.begin(), picked.end(), best->frame));
    }

    void pickKeepsVerifiedFramesAndAvoidsThem()
    {
        DisagreementPick pick;
        pick.frames = 795;
        pick.count = 12;
        pick.keep = {3, 400, 401, 794, 900}; // 900 is not in the video
        auto scored = wavyScores(795);
        for (FrameDisagreement &d : scored)
            if (d.frame == 402) // the best, but right next to a kept frame
                d.unmatched = 100;
        const auto picked = Disagreement::pick(scored, pick);
        QCOMPARE(int(picked.size()), 12);
        for (int f : {3, 400, 401, 794})
            QVERIFY(std::count(picked.begin(), picked.end(), f));
        QVERIFY(!std::count(picked.begin(), picked.end(), 900));
        QVERIFY(!std::count(picked.begin(), picked.end(), 402));
        for (int f : picked)
            if (!std::count(pick.keep.begin(), pick.keep.end(), f))
                for (int k : {3, 400, 401, 794})
                    QVERIFY(std::abs(f - k) >= pick.gap());
    }

    void pickPrefersDisagreementAndFillsWithTheRest()
    {
        std::vector<FrameDisagreement> scored(100);
        for (int f = 0; f < 100; ++f)
            scored[std::size_t(f)].frame = f;
        scored[50].onlyOne = 1;
        scored[51].onlyOne = 2; // a neighbour: picked too once the gap is halved to 1
        DisagreementPick pick;
        pick.frames = 100;
        pick.count = 5;
        pick.minGap = 20;
        const auto picked = Disagreement::pick(scored, pick);
        QCOMPARE(int(picked.size()), 5);
        QVERIFY(std::count(picked.begin(), picked.end(), 50));
        QVERIFY(std::count(picked.begin(), picked.end(), 51));
        // Fewer candidates than the count: all of them.
        pick.count = 200;
        QCOMPARE(int(Disagreement::pick(scored, pick).size()), 100);
    }

    void pickIsDeterministic()
    {
        auto scored = wavyScores(795);
        DisagreementPick pick;
        pick.frames = 795;
        pick.count = 20;
        pick.keep = {100, 600};
        const auto first = Disagreement::pick(scored, pick);
        std::reverse(scored.begin(), scored.end());
        QCOMPARE(Disagreement::pick(scored, pick), first);
        QCOMPARE(Disagreement::pick(scored, pick), first);
    }

    void truthJsonCarriesThePick()
    {
        vision::GroundTruth gt;
        gt.source = "/videos/street.avi";
        gt.frame_size = {320, 240};
        gt.ensureFrame(4).pick = "disagreement";
        gt.ensureFrame(9).done = true; // imported: no pick
        gt.ensureFrame(20).pick = "spread";
        QTemporaryDir dir;
        gt.save(dir.path().toStdString());
        QFile file(dir.filePath("truth.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll().count("\"pick\""), 2); // omitted when empty
        const auto back = vision::GroundTruth::load(dir.path().toStdString());
        QCOMPARE(back.frame(4)->pick, std::string("disagreement"));
        QCOMPARE(back.frame(9)->pick, std::string());
        QCOMPARE(back.frame(20)->pick, std::string("spread"));
        QVERIFY(!back.frame(4)->done);
    }
};

QTEST_GUILESS_MAIN(TestDisagreement)
#include "tst_disagreement.moc"

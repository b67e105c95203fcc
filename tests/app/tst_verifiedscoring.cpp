// The verified figures as a user meets them: the student's threshold chosen on the frames it
// trained on only, the held-out figures from the right frames with intervals and leads, the stored
// boxes and the session read back as written, the Verify step's sentences, and files that do not
// change with the locale.
#include "app/session/session.h"
#include "app/session/verifiedscoring.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <QTemporaryDir>
#include <QTest>

#include <clocale>
#include <cmath>
#include <string>

using namespace edgetrain;

namespace {

vision::TruthFrame frame(int index, int people, bool done = true, const char *pick = "spread")
{
    vision::TruthFrame f;
    f.index = index;
    f.done = done;
    f.pick = pick;
    for (int i = 0; i < people; ++i)
        f.boxes.push_back({cv::Rect2d(10 + 60 * i, 20, 40, 80)});
    return f;
}

/** A detection on person `i` of a frame made by frame() (exactly its box). */
vision::ScoredBox onPerson(int i, float score)
{
    return {cv::Rect2d(10 + 60 * i, 20, 40, 80), score};
}

/** A detection where no person is. */
vision::ScoredBox nowhere(float score)
{
    return {cv::Rect2d(600, 400, 30, 30), score};
}

vision::GroundTruth truthOf(std::vector<vision::TruthFrame> frames)
{
    vision::GroundTruth t;
    t.source = "camera.mp4";
    t.frame_size = cv::Size(640, 480);
    t.frames = std::move(frames);
    return t;
}

/**
 * Held-out frames from 10 on (5 before), three detectors: the student finds nearly everyone, the
 * teacher about half, motion about half with a false alarm. Frame 60 is done but the detectors did
 * not run on it; 70 is not done; 80 and 90 come from the disagreement pick, where every detector
 * misses everyone, so counting them would pull every figure down.
 */
struct Held
{
    vision::GroundTruth truth;
    app::VerifiedDetections detections;
};

Held heldOut()
{
    Held h;
    h.truth = truthOf({frame(5, 2), frame(10, 2), frame(20, 3), frame(30, 2), frame(40, 3),
                       frame(50, 2, true, ""), frame(60, 2), frame(70, 2, false),
                       frame(80, 3, true, "disagreement"), frame(90, 3, true, "disagreement")});
    app::VerifiedDetections &d = h.detections;
    d.round = 2;
    d.first_frame = 10;
    d.frames = {5, 10, 20, 30, 40, 50, 70, 80, 90};
    app::VerifiedDetections::Detector teacher{"teacher", 0.5f, {}};
    app::VerifiedDetections::Detector motion{"motion", 0.5f, {}};
    app::VerifiedDetections::Detector student{"student", 0.3f, {}};
    // Frame 5 is before the held-out span: misses there must not count either.
    for (int f : {5, 70, 80, 90}) {
        teacher.frames[f] = {nowhere(0.9f)};
        motion.frames[f] = {nowhere(0.9f)};
        student.frames[f] = {nowhere(0.9f)};
    }
    teacher.frames[10] = {onPerson(0, 0.8f)};
    teacher.frames[20] = {onPerson(0, 0.7f), onPerson(1, 0.6f)};
    teacher.frames[30] = {onPerson(1, 0.9f)};
    teacher.frames[40] = {onPerson(2, 0.8f)};
    teacher.frames[50] = {onPerson(0, 0.8f), onPerson(1, 0.4f)};
    motion.frames[10] = {onPerson(0, 1.0f), nowhere(1.0f)};
    motion.frames[20] = {onPerson(1, 1.0f)};
    motion.frames[30] = {onPerson(0, 1.0f), onPerson(1, 1.0f)};
    motion.frames[40] = {nowhere(1.0f)};
    motion.frames[50] = {onPerson(0, 1.0f)};
    student.frames[10] = {onPerson(0, 0.9f), onPerson(1, 0.8f)};
    student.frames[20] = {onPerson(0, 0.9f), onPerson(1, 0.7f), onPerson(2, 0.6f)};
    student.frames[30] = {onPerson(0, 0.9f), onPerson(1, 0.8f), nowhere(0.35f)};
    student.frames[40] = {onPerson(0, 0.9f), onPerson(2, 0.5f)};
    student.frames[50] = {onPerson(0, 0.9f), onPerson(1, 0.8f)};
    d.detectors = {teacher, motion, student};
    return h;
}

bool near(double a, double b)
{
    return std::abs(a - b) < 1e-12;
}

bool contains(const vision::FigureIntervals &ci, const vision::DetectorScore &s)
{
    return ci.recall.contains(s.recall) && ci.precision.contains(s.precision) &&
           ci.f1.contains(s.f1) && ci.ap50.contains(s.ap50);
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

/** A session holding `held`'s verified round (its real intervals and leads), a student's
 *  threshold chosen on verified frames, and a training row with fractions for the CSV. */
app::Session sessionWithRound(const Held &held)
{
    app::Session s;
    s.created = QDateTime(QDate(2026, 3, 1), QTime(9, 30, 15, 250), Qt::UTC);
    s.evaluation.done = false;
    s.evaluation.verified.push_back(app::scoreVerified(held.truth, held.detections));
    vision::OperatingPoint p;
    p.threshold = 0.4375f;
    p.recall = 0.8125;
    p.precision = 0.9285714285714286;
    p.f1 = 0.8666666666666667;
    p.frames = 4;
    p.boxes = 16;
    s.evaluation.operatingPoint = p;
    s.evaluation.operatingPointAgainst = QStringLiteral("verified");
    s.evaluation.student_fps = 61.5;
    app::MetricRow m;
    m.seconds = 1.5;
    m.node = QStringLiteral("pi-1");
    m.cpuPercent = 97.5;
    m.phase = QStringLiteral("training");
    m.epoch = 1;
    m.loss = 0.5625;
    s.training.metrics.push_back(m);
    s.training.progress.push_back({0.75, QStringLiteral("pi-1"), 1, 17, 0.625, 0.5, 88.5});
    return s;
}

} // namespace

class TestVerifiedScoring : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void operatingPointNeedsEnoughFramesBeforeHeldOut();
    void operatingPointIgnoresHeldOutFrames();
    void scoresHeldOutFramesTheDetectorsRanOn();
    void disagreementFramesAloneAreBiased();
    void nothingHeldOutVerifiedYet();
    void detectionsRoundTrip();
    void detectionsDamagedOrMissing();
    void sessionRoundTrip();
    void sessionBeforeIntervals();
    void sameBytesInAnyLocale();
    void enoughSentences();
};

void TestVerifiedScoring::operatingPointNeedsEnoughFramesBeforeHeldOut()
{
    vision::FrameDetections student;
    for (int f : {0, 10, 20, 30})
        student[f] = {onPerson(0, 0.9f), onPerson(1, 0.9f), onPerson(2, 0.9f)};

    // Nothing held out: the same frames would choose the threshold and judge it.
    const auto plenty = truthOf({frame(0, 3), frame(10, 3), frame(20, 3), frame(30, 3)});
    QVERIFY(!app::verifiedOperatingPoint(plenty, student, 0));
    QVERIFY(app::verifiedOperatingPoint(plenty, student, 100));

    // Two frames, however many people on them (a third, not done, does not count).
    QVERIFY(!app::verifiedOperatingPoint(truthOf({frame(0, 3), frame(10, 3), frame(20, 3, false)}),
                                         student, 100));

    // Three frames but four people: an ignore box is not a person to find.
    auto four = truthOf({frame(0, 2), frame(10, 1), frame(20, 1)});
    four.frames[2].boxes.push_back({cv::Rect2d(300, 300, 20, 20), true});
    QVERIFY(!app::verifiedOperatingPoint(four, student, 100));
    four.frames[1].boxes.push_back({cv::Rect2d(70, 20, 40, 80)});
    const auto five = app::verifiedOperatingPoint(four, student, 100);
    QVERIFY(five);
    QCOMPARE(five->frames, 3);
    QCOMPARE(five->boxes, 5);
}

void TestVerifiedScoring::operatingPointIgnoresHeldOutFrames()
{
    // Before frame 50 the student is right at 0.8 and wrong at 0.5: threshold 0.8, F1 1. On the
    // held-out frames it finds many people only at 0.4: were they used, 0.4 would win.
    auto truth = truthOf({frame(0, 2), frame(10, 2), frame(20, 2), frame(25, 3, false),
                          frame(60, 4), frame(70, 4), frame(80, 4)});
    truth.frames[1].boxes.push_back({cv::Rect2d(500, 20, 40, 80), true});
    vision::FrameDetections student;
    for (int f : {0, 10, 20})
        student[f] = {onPerson(0, 0.8f), onPerson(1, 0.8f), nowhere(0.5f)};
    for (int f : {60, 70, 80})
        student[f] = {onPerson(0, 0.4f), onPerson(1, 0.4f), onPerson(2, 0.4f), onPerson(3, 0.4f)};

    const auto point = app::verifiedOperatingPoint(truth, student, 50);
    QVERIFY(point);
    QCOMPARE(point->threshold, 0.8f);
    QCOMPARE(point->recall, 1.0);
    QCOMPARE(point->precision, 1.0);
    QCOMPARE(point->f1, 1.0);
    QCOMPARE(point->frames, 3); // frame 25 is not done
    QCOMPARE(point->boxes, 6);  // the ignore box on frame 10 is not counted

    // The decoy is real: with every frame before the held-out start, 0.4 is the choice.
    const auto all = app::verifiedOperatingPoint(truth, student, 100);
    QVERIFY(all);
    QCOMPARE(all->threshold, 0.4f);
}

void TestVerifiedScoring::scoresHeldOutFramesTheDetectorsRanOn()
{
    const Held h = heldOut();
    const app::VerifiedRound r = app::scoreVerified(h.truth, h.detections);

    QCOMPARE(r.round, 2);
    QCOMPARE(r.first_frame, 10);
    QCOMPARE(r.frames, 5); // 10, 20, 30, 40 (spread) and 50 (by hand)
    QCOMPARE(r.disagreement_frames, 2);
    QVERIFY(!r.biased);
    QCOMPARE(app::pendingVerifiedFrames(h.truth, h.detections), 1); // frame 60

    // The same figures as scoring those five frames alone.
    const auto alone =
        truthOf({frame(10, 2), frame(20, 3), frame(30, 2), frame(40, 3), frame(50, 2, true, "")});
    QCOMPARE(int(r.scores.size()), 3);
    for (std::size_t i = 0; i < r.scores.size(); ++i) {
        const app::VerifiedDetections::Detector &d = h.detections.detectors[i];
        vision::MetricsOptions m;
        m.threshold = d.threshold;
        const vision::DetectorScore want =
            vision::DetectionMetrics::evaluate(d.name, d.frames, alone, m);
        const vision::DetectorScore &got = r.scores[i];
        QCOMPARE(got.name, d.name);
        QCOMPARE(got.frames, 5);
        QCOMPARE(got.truths, 12);
        QCOMPARE(got.true_positives, want.true_positives);
        QCOMPARE(got.false_positives, want.false_positives);
        QCOMPARE(got.recall, want.recall);
        QCOMPARE(got.precision, want.precision);
        QCOMPARE(got.f1, want.f1);
        QCOMPARE(got.ap50, want.ap50);
        QCOMPARE(got.threshold, d.threshold);
    }
    QCOMPARE(r.score("student")->true_positives, 11);
    QCOMPARE(r.score("teacher")->true_positives, 6);

    // One interval per score, each around its figure; the bootstrap as documented.
    QCOMPARE(int(r.intervals.size()), 3);
    for (std::size_t i = 0; i < r.scores.size(); ++i)
        QVERIFY2(contains(r.intervals[i], r.scores[i]), r.scores[i].name.c_str());
    // Frames differ, so there is a spread, but five frames say where the recall lies: not [0, 1].
    QVERIFY(r.intervals[2].recall.hi - r.intervals[2].recall.lo > 0);
    QVERIFY(r.intervals[2].recall.hi - r.intervals[2].recall.lo < 0.5);
    QCOMPARE(r.resamples, app::verifiedBootstrap().resamples);
    QCOMPARE(r.seed, app::verifiedBootstrap().seed);

    // The student's lead over each baseline: its figures minus theirs.
    QCOMPARE(int(r.differences.size()), 2);
    const char *baselines[] = {"teacher", "motion"};
    for (int i = 0; i < 2; ++i) {
        const vision::BootstrapDifference &d = r.differences[std::size_t(i)];
        QCOMPARE(d.a, std::string("student"));
        QCOMPARE(d.b, std::string(baselines[i]));
        QCOMPARE(r.lead(baselines[i]), &d);
        const vision::DetectorScore &s = *r.score("student"), &o = *r.score(baselines[i]);
        QVERIFY(near(d.a_minus_b.recall, s.recall - o.recall));
        QVERIFY(near(d.a_minus_b.precision, s.precision - o.precision));
        QVERIFY(near(d.a_minus_b.f1, s.f1 - o.f1));
        QVERIFY(near(d.a_minus_b.ap50, s.ap50 - o.ap50));
        QVERIFY(d.ci.f1.contains(d.a_minus_b.f1));
    }
    QVERIFY(r.lead("student") == nullptr);

    // The intervals are those of the five frames alone (the same draws of the same frames).
    Held spreadOnly = h;
    std::erase_if(spreadOnly.truth.frames,
                  [](const vision::TruthFrame &f) { return f.pick == "disagreement"; });
    const app::VerifiedRound plain = app::scoreVerified(spreadOnly.truth, spreadOnly.detections);
    QCOMPARE(plain.disagreement_frames, 0);
    for (std::size_t i = 0; i < plain.intervals.size(); ++i) {
        QCOMPARE(plain.intervals[i].f1.lo, r.intervals[i].f1.lo);
        QCOMPARE(plain.intervals[i].f1.hi, r.intervals[i].f1.hi);
    }
    QCOMPARE(plain.differences[0].ci.f1.lo, r.differences[0].ci.f1.lo);
}

void TestVerifiedScoring::disagreementFramesAloneAreBiased()
{
    Held h = heldOut();
    std::erase_if(h.truth.frames, [](const vision::TruthFrame &f) {
        return f.pick != "disagreement" && f.index != 70; // 70: not done, still left out
    });
    const app::VerifiedRound r = app::scoreVerified(h.truth, h.detections);
    QVERIFY(r.biased);
    QCOMPARE(r.frames, 2);
    QCOMPARE(r.score("student")->truths, 6);
    QCOMPARE(r.score("student")->recall, 0.0);
    QCOMPARE(r.disagreement_frames, 0); // none left out: they are the figures

    // A frame added by hand is enough to leave them out.
    h.truth.frames.push_back(frame(50, 2, true, ""));
    std::sort(h.truth.frames.begin(), h.truth.frames.end(),
              [](const auto &a, const auto &b) { return a.index < b.index; });
    const app::VerifiedRound withHand = app::scoreVerified(h.truth, h.detections);
    QVERIFY(!withHand.biased);
    QCOMPARE(withHand.frames, 1);
    QCOMPARE(withHand.disagreement_frames, 2);
    QCOMPARE(withHand.score("student")->recall, 1.0);
}

void TestVerifiedScoring::nothingHeldOutVerifiedYet()
{
    // Right after an evaluation, before any held-out frame is verified: no figures, no throw
    // (the workflow keeps no round with 0 frames), and every done frame there is pending.
    Held h = heldOut();
    std::erase_if(h.truth.frames, [](const vision::TruthFrame &f) { return f.index >= 10; });
    h.truth.frames.push_back(frame(60, 2));
    h.truth.frames.push_back(frame(61, 1));
    const app::VerifiedRound r = app::scoreVerified(h.truth, h.detections);
    QCOMPARE(r.frames, 0);
    QVERIFY(!r.biased);
    QCOMPARE(r.score("student")->truths, 0);
    QCOMPARE(app::pendingVerifiedFrames(h.truth, h.detections), 2);
}

void TestVerifiedScoring::detectionsRoundTrip()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    app::VerifiedDetections d = heldOut().detections;
    d.detectors[2].threshold = 0.4375f;
    d.detectors[2].frames[20].push_back({cv::Rect2d(12.345, 0.1, 33.3333333, 7.25), 0.123456f});
    d.detectors[1].frames[30] = {}; // ran there, found nothing
    QString error;
    QVERIFY2(d.save(dir.path(), &error), qPrintable(error));

    const auto back = app::VerifiedDetections::load(dir.path(), &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(back->round, 2);
    QCOMPARE(back->first_frame, 10);
    QCOMPARE(back->frames, d.frames);
    QCOMPARE(int(back->detectors.size()), 3);
    for (std::size_t i = 0; i < d.detectors.size(); ++i) {
        const auto &want = d.detectors[i];
        const auto &got = back->detectors[i];
        QCOMPARE(got.name, want.name);
        QCOMPARE(got.threshold, want.threshold);
        QCOMPARE(int(got.frames.size()), int(want.frames.size()));
        for (const auto &[f, boxes] : want.frames) {
            QVERIFY(got.frames.count(f));
            const auto &gotBoxes = got.frames.at(f);
            QCOMPARE(int(gotBoxes.size()), int(boxes.size()));
            for (std::size_t b = 0; b < boxes.size(); ++b) {
                QCOMPARE(gotBoxes[b].box, boxes[b].box);
                QCOMPARE(gotBoxes[b].score, boxes[b].score);
            }
        }
    }
    QCOMPARE(back->detector("student")->threshold, 0.4375f);
    QVERIFY(back->detector("yolo") == nullptr);
    // Scored again from the file, the same figures.
    const Held h = heldOut();
    const app::VerifiedRound a = app::scoreVerified(h.truth, h.detections);
    const app::VerifiedRound b =
        app::scoreVerified(h.truth, *app::VerifiedDetections::load(dir.path(), &error));
    QCOMPARE(b.score("teacher")->f1, a.score("teacher")->f1);
}

void TestVerifiedScoring::detectionsDamagedOrMissing()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    QString error;
    QVERIFY(!app::VerifiedDetections::load(dir.path(), &error));
    QVERIFY2(error.isEmpty(), qPrintable(error));

    const QString path = QDir(dir.path()).filePath(QLatin1String(app::VerifiedDetections::kFile));
    const auto damaged = [&](const QByteArray &bytes) {
        QFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate) || f.write(bytes) != bytes.size())
            return QStringLiteral("cannot write");
        f.close();
        QString why;
        return app::VerifiedDetections::load(dir.path(), &why) ? QStringLiteral("read") : why;
    };
    for (const QByteArray &bytes :
         {QByteArray("{\"format\": \"edgetrain-verified-detections-1\", \"detec"),
          QByteArray("{\"format\": \"something-else\"}"),
          QByteArray(
              "{\"format\": \"edgetrain-verified-detections-1\", \"detectors\": "
              "[{\"name\": \"student\", \"frames\": [{\"frame\": 3, \"boxes\": [[1, 2]]}]}]}")}) {
        const QString why = damaged(bytes);
        QVERIFY2(why.contains(path), qPrintable(why));
    }
}

void TestVerifiedScoring::sessionRoundTrip()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    app::Session s = sessionWithRound(heldOut());
    s.dir = dir.path();
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));
    const auto back = app::Session::open(dir.path(), &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(back->toJson(), s.toJson());

    QCOMPARE(back->evaluation.operatingPointAgainst, QStringLiteral("verified"));
    QCOMPARE(back->evaluation.operatingPoint->threshold, 0.4375f);
    QCOMPARE(int(back->evaluation.verified.size()), 1);
    const app::VerifiedRound &want = s.evaluation.verified[0], &got = back->evaluation.verified[0];
    QCOMPARE(got.frames, 5);
    QCOMPARE(got.disagreement_frames, 2);
    QCOMPARE(got.biased, false);
    QCOMPARE(got.resamples, want.resamples);
    QCOMPARE(got.seed, want.seed);
    QCOMPARE(int(got.intervals.size()), 3);
    for (std::size_t i = 0; i < 3; ++i) {
        QCOMPARE(got.intervals[i].recall.lo, want.intervals[i].recall.lo);
        QCOMPARE(got.intervals[i].precision.hi, want.intervals[i].precision.hi);
        QCOMPARE(got.intervals[i].f1.lo, want.intervals[i].f1.lo);
        QCOMPARE(got.intervals[i].ap50.hi, want.intervals[i].ap50.hi);
    }
    QCOMPARE(int(got.differences.size()), 2);
    for (std::size_t i = 0; i < 2; ++i) {
        QCOMPARE(got.differences[i].a, std::string("student"));
        QCOMPARE(got.differences[i].b, want.differences[i].b);
        QCOMPARE(got.differences[i].a_minus_b.f1, want.differences[i].a_minus_b.f1);
        QCOMPARE(got.differences[i].a_minus_b.recall, want.differences[i].a_minus_b.recall);
        QCOMPARE(got.differences[i].ci.f1.lo, want.differences[i].ci.f1.lo);
        QCOMPARE(got.differences[i].ci.f1.hi, want.differences[i].ci.f1.hi);
    }

    // A bias flag comes back too, and the labels are the default threshold's origin.
    app::Session b = s;
    b.evaluation.verified[0].biased = true;
    b.evaluation.operatingPointAgainst = QStringLiteral("labels");
    QVERIFY(b.fromJson(b.toJson(), &error));
    QVERIFY(b.evaluation.verified[0].biased);
    QCOMPARE(b.evaluation.operatingPointAgainst, QStringLiteral("labels"));
}

void TestVerifiedScoring::sessionBeforeIntervals()
{
    // session.json as written before intervals: no "_lo"/"_hi", no leads, no bootstrap, no
    // "against" on the operating point.
    app::Session s = sessionWithRound(heldOut());
    QJsonObject json = s.toJson();
    QJsonObject verified = json.value(QStringLiteral("verified_evaluation")).toObject();
    QVERIFY2(!verified.isEmpty(), "verified_evaluation is where the rounds are");
    QJsonArray rounds = verified.value(QStringLiteral("rounds")).toArray();
    QCOMPARE(rounds.size(), 1);
    QJsonObject round = rounds[0].toObject();
    QVERIFY(round.contains(QStringLiteral("leads")));
    for (const char *key : {"leads", "bootstrap", "disagreement_frames", "biased"})
        round.remove(QLatin1String(key));
    QJsonArray scores;
    for (const QJsonValue &v : round.value(QStringLiteral("scores")).toArray()) {
        QJsonObject sc = v.toObject();
        QVERIFY(sc.contains(QStringLiteral("f1_lo")));
        for (const QString &key : sc.keys())
            if (key.endsWith(QLatin1String("_lo")) || key.endsWith(QLatin1String("_hi")))
                sc.remove(key);
        scores.append(sc);
    }
    round.insert(QStringLiteral("scores"), scores);
    verified.insert(QStringLiteral("rounds"), QJsonArray{round});
    json.insert(QStringLiteral("verified_evaluation"), verified);
    QJsonObject point = json.value(QStringLiteral("operating_point")).toObject();
    point.remove(QStringLiteral("against"));
    json.insert(QStringLiteral("operating_point"), point);

    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    {
        QFile f(QDir(dir.path()).filePath(QStringLiteral("session.json")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QJsonDocument(json).toJson());
    }
    QString error;
    const auto back = app::Session::open(dir.path(), &error);
    QVERIFY2(back, qPrintable(error));
    const app::VerifiedRound &v = back->evaluation.verified.at(0);
    QVERIFY(v.intervals.empty());
    QVERIFY(v.differences.empty());
    QCOMPARE(v.resamples, 0);
    QCOMPARE(v.disagreement_frames, 0);
    QVERIFY(!v.biased);
    QVERIFY(v.interval("student") == nullptr);
    QCOMPARE(int(v.scores.size()), 3);
    QCOMPARE(v.score("student")->f1, s.evaluation.verified[0].score("student")->f1);
    QCOMPARE(back->evaluation.operatingPointAgainst, QStringLiteral("labels"));
    // Nothing to say a lead with: the Verify step's sentences are left out, not made up.
    const app::VerifiedEnough e = app::verifiedEnough(v, 0, QStringLiteral("people"));
    QVERIFY(e.headline.isEmpty());
    QVERIFY(e.comparisons.isEmpty());
    QVERIFY(!e.settled);
}

void TestVerifiedScoring::sameBytesInAnyLocale()
{
    const Held h = heldOut();
    const auto write = [&](const QString &dir) {
        app::Session s = sessionWithRound(h);
        s.dir = dir;
        QString error;
        if (!s.save(&error) || !h.detections.save(dir, &error))
            qWarning("%s", qPrintable(error));
        QByteArray all;
        for (const char *file :
             {"session.json", "metrics.csv", "progress.csv", app::VerifiedDetections::kFile})
            all += QByteArray(file) + '\n' + readAll(QDir(dir).filePath(QLatin1String(file)));
        return all;
    };
    QTemporaryDir plain, german;
    QVERIFY(plain.isValid() && german.isValid());
    const QByteArray c = write(plain.path());
    QVERIFY(c.contains("\"f1_lo\""));
    QVERIFY(c.contains(",97.5,")); // metrics.csv

    const QLocale before;
    const std::string numeric = std::setlocale(LC_ALL, nullptr);
    QLocale::setDefault(QLocale(QLocale::German, QLocale::Germany));
    const bool cGerman = std::setlocale(LC_ALL, "de_DE.UTF-8") != nullptr;
    QCOMPARE(QLocale().toString(0.5), QStringLiteral("0,5")); // the locale is really different
    const QByteArray de = write(german.path());
    std::setlocale(LC_ALL, numeric.c_str());
    QLocale::setDefault(before);
    if (!cGerman)
        qInfo("de_DE.UTF-8 is not installed: only Qt's default locale was German");
    QCOMPARE(de, c);
}

void TestVerifiedScoring::enoughSentences()
{
    app::VerifiedRound r;
    r.frames = 16;
    for (const char *name : {"teacher", "motion", "student"}) {
        vision::DetectorScore s;
        s.name = name;
        s.recall = 0.86;
        s.precision = 0.88;
        r.scores.push_back(s);
        vision::FigureIntervals ci;
        ci.recall = {0.78, 0.93, 2000};
        ci.precision = {0.81, 0.94, 2000};
        r.intervals.push_back(ci);
    }
    r.resamples = 2000;
    vision::BootstrapDifference overTeacher{"student", "teacher", {}, {}};
    overTeacher.a_minus_b.f1 = 0.18;
    overTeacher.ci.f1 = {0.07, 0.29, 2000};
    vision::BootstrapDifference overMotion{"student", "motion", {}, {}};
    overMotion.a_minus_b.f1 = 0.05;
    overMotion.ci.f1 = {-0.04, 0.14, 2000};
    r.differences = {overTeacher, overMotion};

    const app::VerifiedEnough e = app::verifiedEnough(r, 3, QStringLiteral("people"));
    QVERIFY2(e.headline.contains(QStringLiteral("On 16 verified frames")), qPrintable(e.headline));
    QVERIFY2(e.headline.contains(QStringLiteral("86 % (78–93 %) of the people")),
             qPrintable(e.headline));
    QVERIFY2(e.headline.contains(QStringLiteral("88 % (81–94 %) precision")),
             qPrintable(e.headline));
    QCOMPARE(e.pending, 3);
    QVERIFY(!e.settled);
    QCOMPARE(e.comparisons.size(), 2);
    QVERIFY2(e.comparisons[0].contains(QStringLiteral("the teacher: told apart")),
             qPrintable(e.comparisons[0]));
    QVERIFY2(e.comparisons[0].contains(QStringLiteral("+0.18")), qPrintable(e.comparisons[0]));
    const std::optional<int> more = vision::Bootstrap::framesToSettle(16, 0.05, overMotion.ci.f1);
    QVERIFY(more && *more > 1);
    QVERIFY2(e.comparisons[1].contains(QStringLiteral("motion: not yet told apart")),
             qPrintable(e.comparisons[1]));
    QVERIFY2(e.comparisons[1].contains(QStringLiteral("verify about %1 more frames").arg(*more)),
             qPrintable(e.comparisons[1]));

    // Both clear of zero: settled, nothing more to verify.
    r.differences[1].ci.f1 = {0.01, 0.09, 2000};
    const app::VerifiedEnough settled = app::verifiedEnough(r, 0, QStringLiteral("people"));
    QVERIFY(settled.settled);
    QCOMPARE(settled.pending, 0);
    for (const QString &sentence : settled.comparisons)
        QVERIFY2(!sentence.contains(QStringLiteral("verify about")), qPrintable(sentence));

    // No lead at all: more frames would not tell them apart, and the sentence does not pretend.
    r.differences[1].a_minus_b.f1 = 0;
    r.differences[1].ci.f1 = {-0.05, 0.05, 2000};
    const app::VerifiedEnough tie = app::verifiedEnough(r, 0, QStringLiteral("people"));
    QVERIFY(!tie.settled);
    QVERIFY2(tie.comparisons[1].contains(QStringLiteral("too close to tell apart")),
             qPrintable(tie.comparisons[1]));
    QVERIFY(!tie.comparisons[1].contains(QStringLiteral("verify about")));

    // One frame short (the reach 0.051 from +0.05 shrinks below 0.05 at 17 frames): singular.
    r.differences[1].a_minus_b.f1 = 0.05;
    r.differences[1].ci.f1 = {-0.001, 0.1, 2000};
    QCOMPARE(vision::Bootstrap::framesToSettle(16, 0.05, r.differences[1].ci.f1), 1);
    const app::VerifiedEnough close = app::verifiedEnough(r, 0, QStringLiteral("people"));
    QVERIFY2(close.comparisons[1].contains(QStringLiteral("verify about 1 more frame to")),
             qPrintable(close.comparisons[1]));
}

QTEST_GUILESS_MAIN(TestVerifiedScoring)
#include "tst_verifiedscoring.moc"

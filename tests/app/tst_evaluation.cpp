// The Evaluate step against verified frames, without nodes: a video the test draws (striped
// rectangles crossing a still background: a fixed camera), labels of its first frames, a
// full-frame student trained on them, and truth.json written here. The evaluation scores the
// teacher, motion and the student on the verified frames the student never saw; editing the
// truth in the Verify step (remove a box, mark one ignore) and evaluating again changes the
// figures.
#include "app/session/evaluationtask.h"
#include "app/session/workflow.h"
#include "core/safetensors.h"
#include "vision/framedataset.h"
#include "vision/framestudenttrainer.h"
#include "vision/studentteacher.h"

#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <cmath>

using namespace edgetrain;
using namespace edgetrain::vision;

namespace {

/** Rectangles crossing a 160x120 textured background at walking pace, striped (like clothes:
 *  motion sees a uniform blob's inside as still). */
struct Scene
{
    cv::Size size{160, 120};
    int frames = 120;
    int labelled = 80; // the labels (and the student) stop here
    struct Mover
    {
        double x0, y, vx, w, h;
        cv::Scalar colour;
    };
    std::vector<Mover> movers{{10, 20, 1.3, 18, 36, cv::Scalar(0, 0, 230)},
                              {150, 62, -1.1, 22, 44, cv::Scalar(0, 220, 0)}};

    cv::Rect2d box(const Mover &m, int f) const
    {
        const double span = size.width + m.w;
        double x = std::fmod(m.x0 + m.vx * f, span);
        if (x < 0)
            x += span;
        return {x - m.w, m.y, m.w, m.h};
    }
    /** The boxes wholly inside the frame. */
    std::vector<cv::Rect2d> boxes(int f) const
    {
        std::vector<cv::Rect2d> out;
        for (const Mover &m : movers) {
            const cv::Rect2d b = box(m, f);
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
                const int v = 100 + int(35 * std::sin(x * 0.11) * std::cos(y * 0.07));
                img.at<cv::Vec3b>(y, x) = cv::Vec3b(uchar(v), uchar(v), uchar(v + 8));
            }
        for (const Mover &m : movers) {
            const cv::Rect2d b = box(m, f);
            for (int y = int(b.y); y < int(b.y + b.height); ++y) {
                const bool stripe = (y / 4) % 2 == 0;
                const cv::Scalar c = stripe ? m.colour * 0.5 : m.colour;
                cv::line(img, cv::Point(int(std::round(b.x)), y),
                         cv::Point(int(std::round(b.x + b.width)) - 1, y), c);
            }
        }
        return img;
    }
    bool write(const std::string &path) const
    {
        cv::VideoWriter out(path, cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 25, size);
        if (!out.isOpened())
            return false;
        for (int f = 0; f < frames; ++f)
            out.write(draw(f));
        return true;
    }
    /** One accepted track per mover on frames [0, labelled), teacher boxes. */
    LabelResult labels(const std::string &source) const
    {
        LabelResult r;
        r.source = source;
        r.teacher = "motion";
        r.frame_size = size;
        r.options.max_frames = labelled;
        r.stats.frames = labelled;
        for (std::size_t i = 0; i < movers.size(); ++i) {
            Track t;
            t.id = int(i);
            for (int f = 0; f < labelled; ++f) {
                const cv::Rect2d visible =
                    box(movers[i], f) & cv::Rect2d(0, 0, size.width, size.height);
                if (visible.area() > 0)
                    t.boxes.push_back({f, visible, BoxSource::Teacher, 1.0f});
            }
            r.tracks.push_back(std::move(t));
        }
        return r;
    }
};

} // namespace

class TstEvaluation : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void heldOutSpan();
    void scoresTeacherMotionStudent();
    void figuresFollowTheTruth();
    void selfTrainingKeepsEachRound();

private:
    void evaluate(app::Workflow &w, app::VerifiedRound *round);

    QTemporaryDir m_dir;
    Scene m_scene;
    QString m_session;
    std::vector<int> m_verified{40, 90, 100, 110}; // 40: seen in training, not scored
};

void TstEvaluation::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_session = m_dir.filePath(QStringLiteral("session"));
    const std::string video = m_dir.filePath(QStringLiteral("drawn.avi")).toStdString();
    QVERIFY(m_scene.write(video));

    app::Session s;
    s.dir = m_session;
    s.capture.source = QString::fromStdString(video);
    s.capture.teacher = QStringLiteral("motion"); // what finds drawn rectangles
    s.capture.maxFrames = m_scene.labelled;
    s.dataset.frameWidth = 128;
    const LabelResult labels = m_scene.labels(video);
    labels.save(m_session.toStdString());

    // The student: trained on the labelled frames only.
    auto source = FrameSource::open(video);
    FrameDatasetOptions d;
    d.width = s.dataset.frameWidth;
    d.every = 2;
    d.augmented = 1;
    d.max_frame = m_scene.labelled;
    const FrameDatasetStats stats =
        FrameDataset::build(m_session.toStdString(), labels, *source, d);
    s.frameStats = stats;
    core::Model model(FrameStudentTrainer::spec(stats.input), 7);
    FrameTrainOptions t;
    t.epochs = 6;
    t.batch = 8;
    t.lr = 0.03;
    FrameStudentTrainer::train(model, m_session.toStdString(), t);
    core::Safetensors::saveModel(model, StudentTeacher::weightsPath(m_session.toStdString()));
    s.training.state = app::TrainingRecord::State::Finished;
    s.training.weights = QStringLiteral("detector.safetensors");

    GroundTruth truth;
    truth.source = video;
    truth.frame_size = m_scene.size;
    for (int f : m_verified) {
        TruthFrame &tf = truth.ensureFrame(f);
        for (const cv::Rect2d &b : m_scene.boxes(f))
            tf.boxes.push_back({b, false, -1});
        tf.done = true;
    }
    truth.ensureFrame(115); // picked, not checked: never scored
    truth.save(m_session.toStdString());
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));
}

void TstEvaluation::heldOutSpan()
{
    LabelResult l;
    l.options.max_frames = 480;
    QCOMPARE(app::EvaluationTask::heldOutFrom(l, 795), 480);
    QCOMPARE(app::EvaluationTask::heldOutFrom(l, 480), 0); // labelled to the end: all frames
    l.options.max_frames = 0;
    QCOMPARE(app::EvaluationTask::heldOutFrom(l, 795), 0);
    QCOMPARE(app::EvaluationTask::detectorPart(QStringLiteral("hog+motion")), std::string("hog"));
    QCOMPARE(app::EvaluationTask::detectorPart(QStringLiteral("motion")), std::string("motion"));
    QVERIFY(!app::EvaluationTask::fixedCamera(QStringLiteral("camera:0")));
    QVERIFY(!app::EvaluationTask::fixedCamera(m_dir.path())); // an image folder
}

void TstEvaluation::evaluate(app::Workflow &w, app::VerifiedRound *round)
{
    QSignalSpy finished(&w, &app::Workflow::taskFinished);
    w.startEvaluation();
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 120000);
    QVERIFY2(finished[0][1].toBool(), qPrintable(finished[0][2].toString()));
    QCOMPARE(int(w.session().evaluation.verified.size()), 1); // the round's figures, replaced
    *round = w.session().evaluation.verified.back();
}

void TstEvaluation::scoresTeacherMotionStudent()
{
    app::Workflow w;
    QString error;
    QVERIFY2(w.openSession(m_session, &error), qPrintable(error));
    app::VerifiedRound v;
    evaluate(w, &v);
    QCOMPARE(v.round, 1);
    QCOMPARE(v.first_frame, m_scene.labelled);
    QCOMPARE(v.frames, 3); // 90, 100, 110: done and held out
    QCOMPARE(int(v.scores.size()), 3);
    QCOMPARE(v.scores[0].name, std::string("teacher"));
    QCOMPARE(v.scores[1].name, std::string("motion"));
    QCOMPARE(v.scores[2].name, std::string("student"));
    int truths = 0;
    for (int f : {90, 100, 110})
        truths += int(m_scene.boxes(f).size());
    for (const vision::DetectorScore &s : v.scores) {
        QCOMPARE(s.truths, truths);
        QCOMPARE(s.frames, 3);
    }
    // Motion boxes the striped movers; the student learned them from the first 80 frames.
    const DetectorScore &motion = *v.score("motion");
    const DetectorScore &student = *v.score("student");
    QVERIFY2(motion.recall >= 0.6, qPrintable(QString::number(motion.recall)));
    QVERIFY2(student.recall >= 0.6 && student.precision >= 0.6,
             qPrintable(QStringLiteral("student recall %1 precision %2")
                            .arg(student.recall)
                            .arg(student.precision)));
    // Scored at its operating point: calibrated against the labels on the training frames and
    // kept with the weights (what detect and the live preview run it at).
    const auto &point = w.session().evaluation.operatingPoint;
    QVERIFY(point);
    QCOMPARE(student.threshold, point->threshold);
    QVERIFY(point->frames > 0 && point->boxes > 0 && point->f1 > 0);
    const QString weights = w.session().path(w.session().training.weights);
    QCOMPARE(FrameStudent::savedThreshold(weights.toStdString()), point->threshold);
    QVERIFY(!student.curve.empty());
    // The curve reaches at least the operating point (it is drawn from lower scores than it).
    QVERIFY2(student.curve.back().recall >= student.recall - 1e-9,
             qPrintable(QStringLiteral("curve ends at recall %1, the operating point has %2")
                            .arg(student.curve.back().recall)
                            .arg(student.recall)));
    QVERIFY(w.session().evaluation.student_fps > 0);
    QVERIFY(w.session().evaluation.motion_fps > 0);
    QVERIFY(w.session().evaluation.done); // the tracker-label figures too
    // Saved with the session, by the window's Save: on the saver thread, reported by saved().
    QSignalSpy saved(&w, &app::Workflow::saved);
    w.saveInBackground();
    QTRY_COMPARE_WITH_TIMEOUT(saved.size(), 1, 10000);
    QVERIFY2(saved[0][0].toBool(), qPrintable(saved[0][1].toString()));
    QVERIFY(saved[0][1].toString().contains(m_session));
    const auto back = app::Session::open(m_session, &error);
    QVERIFY2(back, qPrintable(error));
    QCOMPARE(back->evaluation.verified.back().scores[2].recall, student.recall);
}

void TstEvaluation::figuresFollowTheTruth()
{
    app::Workflow w;
    QString error;
    QVERIFY2(w.openSession(m_session, &error), qPrintable(error));
    app::VerifiedRound before;
    evaluate(w, &before);
    const DetectorScore motion0 = *before.score("motion");

    // A person removes a box the detectors find: one truth fewer, and a detection on it becomes
    // a false one.
    const TruthFrame *f100 = w.verification()->truth().frame(100);
    QVERIFY(f100 && !f100->boxes.empty());
    w.verification()->removeBox(100, 0);
    app::VerifiedRound removed;
    evaluate(w, &removed);
    const DetectorScore &motion1 = *removed.score("motion");
    QCOMPARE(motion1.truths, motion0.truths - 1);
    QVERIFY2(motion1.false_positives > motion0.false_positives ||
                 motion1.true_positives < motion0.true_positives,
             "removing a found box must change motion's counts");
    QVERIFY(motion1.precision != motion0.precision || motion1.recall != motion0.recall);

    // Marking a box ignore: neither required nor a false detection.
    w.verification()->setIgnore(110, 0, true);
    app::VerifiedRound ignored;
    evaluate(w, &ignored);
    const DetectorScore &motion2 = *ignored.score("motion");
    QCOMPARE(motion2.truths, motion1.truths - 1);
    QVERIFY(motion2.false_positives <= motion1.false_positives);
    QVERIFY(ignored.score("student")->truths == motion2.truths);
}

void TstEvaluation::selfTrainingKeepsEachRound()
{
    app::Workflow w;
    QString error;
    QVERIFY2(w.openSession(m_session, &error), qPrintable(error));
    app::VerifiedRound first;
    evaluate(w, &first);
    QSignalSpy finished(&w, &app::Workflow::taskFinished);
    w.startSelfTraining();
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 120000);
    QVERIFY2(finished[0][1].toBool(), qPrintable(finished[0][2].toString()));
    QCOMPARE(w.session().round, 2);
    QVERIFY(w.session().frameStats.has_value());
    // labels.json was rewritten and still covers the labelled frames only.
    const LabelResult saved = LabelResult::load(m_session.toStdString());
    QCOMPARE(saved.options.max_frames, m_scene.labelled);
    for (const Track &t : saved.tracks)
        for (const TrackBox &b : t.boxes)
            QVERIFY(b.frame < m_scene.labelled);
    // Both say their round: a session killed before it saved round 2 reopens at it, with this
    // dataset (Session::reconcile).
    QCOMPARE(saved.round, 2);
    QCOMPARE(FrameDataset::stats(m_session.toStdString())->round, 2);
    // Round 2's figures join round 1's.
    finished.clear();
    w.startEvaluation();
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 120000);
    QVERIFY2(finished[0][1].toBool(), qPrintable(finished[0][2].toString()));
    const auto &verified = w.session().evaluation.verified;
    QCOMPARE(int(verified.size()), 2);
    QCOMPARE(verified[0].round, 1);
    QCOMPARE(verified[1].round, 2);

    // The window's "Self-train round N": relabel, then train on the renewed labels at once (here
    // there is no cluster key, so the training is refused with what is missing; the chain is
    // what this checks).
    QVERIFY(w.canSelfTrain());
    finished.clear();
    w.startSelfTrainingRound();
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 2, 120000);
    QCOMPARE(finished[0][0].value<app::Task>(), app::Task::SelfTraining);
    QVERIFY2(finished[0][1].toBool(), qPrintable(finished[0][2].toString()));
    QCOMPARE(w.session().round, 3);
    QCOMPARE(finished[1][0].value<app::Task>(), app::Task::Training);
    QVERIFY2(finished[1][2].toString().contains(QLatin1String("cluster key")),
             qPrintable(finished[1][2].toString()));
    // A plain self-training pass does not train afterwards.
    finished.clear();
    w.startSelfTraining();
    QTRY_COMPARE_WITH_TIMEOUT(finished.size(), 1, 120000);
    QVERIFY(w.busy() == app::Task::None); // nothing chained after it
    QCOMPARE(finished[0][0].value<app::Task>(), app::Task::SelfTraining);
}

QTEST_GUILESS_MAIN(TstEvaluation)
#include "tst_evaluation.moc"

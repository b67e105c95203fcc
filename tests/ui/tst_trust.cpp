// How far to trust the report, driven through the real window: a drawn video (striped blocks
// crossing a textured background, a fixed camera), labels of its first 40 frames, a full-frame
// student trained briefly on them and truth.json with spread-picked frames after 40. The
// evaluation gives the Report headline its 95 % intervals; verifying one more frame on the Verify
// step rescores it at once (no new evaluation) and Ctrl+Z takes it back; "Pick where they
// disagree" adds frames marked so in the list and in truth.json; once evaluated, the headline
// leaves a verified one out and says so, and the gallery's caption names its pick. No nodes.
// QT_QPA_PLATFORM=offscreen. The Verify and Report steps are grabbed (in DIR with
// EDGETRAIN_SCREENSHOTS=DIR set, else in a temporary folder).
#include "app/session/workflow.h"
#include "core/safetensors.h"
#include "ui/gallery.h"
#include "ui/mainwindow.h"
#include "ui/reportpage.h"
#include "ui/truthview.h"
#include "ui/verifypage.h"
#include "vision/framedataset.h"
#include "vision/framesource.h"
#include "vision/framestudenttrainer.h"
#include "vision/studentteacher.h"

#include <QDir>
#include <QFile>
#include <QFontMetrics>
#include <QGuiApplication>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTextDocumentFragment>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <cmath>

using namespace edgetrain;

namespace {

constexpr int kFrames = 120;
constexpr int kLabelled = 40; // the labels (and the student's training) stop here
const cv::Size kSize(160, 120);

struct Mover
{
    double x0, y, vx, w, h;
    cv::Scalar colour;
};
const Mover kMovers[] = {{10, 20, 1.3, 18, 36, cv::Scalar(0, 0, 230)},
                         {150, 62, -1.1, 22, 44, cv::Scalar(0, 220, 0)}};

cv::Rect2d boxOf(const Mover &m, int frame)
{
    const double span = kSize.width + m.w;
    double x = std::fmod(m.x0 + m.vx * frame, span);
    if (x < 0)
        x += span;
    return {x - m.w, m.y, m.w, m.h};
}

/** The blocks wholly inside frame `frame`: what a person verifying it draws. */
std::vector<cv::Rect2d> truthAt(int frame)
{
    std::vector<cv::Rect2d> out;
    for (const Mover &m : kMovers) {
        const cv::Rect2d b = boxOf(m, frame);
        if (b.x >= 0 && b.x + b.width <= kSize.width)
            out.push_back(b);
    }
    return out;
}

/** Striped blocks (motion sees a uniform blob's inside as still) on a textured background. */
cv::Mat drawFrame(int frame)
{
    cv::Mat img(kSize, CV_8UC3);
    for (int y = 0; y < kSize.height; ++y)
        for (int x = 0; x < kSize.width; ++x) {
            const int v = 100 + int(35 * std::sin(x * 0.11) * std::cos(y * 0.07));
            img.at<cv::Vec3b>(y, x) = cv::Vec3b(uchar(v), uchar(v), uchar(v + 8));
        }
    for (const Mover &m : kMovers) {
        const cv::Rect2d b = boxOf(m, frame);
        for (int y = int(b.y); y < int(b.y + b.height); ++y)
            cv::line(img, cv::Point(int(std::round(b.x)), y),
                     cv::Point(int(std::round(b.x + b.width)) - 1, y),
                     (y / 4) % 2 == 0 ? m.colour * 0.5 : m.colour);
    }
    return img;
}

/** One accepted track per block on the labelled frames, as the motion teacher would give. */
vision::LabelResult labelsFor(const std::string &video)
{
    vision::LabelResult r;
    r.source = video;
    r.teacher = "motion";
    r.frame_size = kSize;
    r.options.max_frames = kLabelled;
    r.stats.frames = kLabelled;
    for (int i = 0; i < 2; ++i) {
        vision::Track t;
        t.id = i;
        for (int f = 0; f < kLabelled; ++f) {
            const cv::Rect2d visible =
                boxOf(kMovers[i], f) & cv::Rect2d(0, 0, kSize.width, kSize.height);
            if (visible.area() > 0)
                t.boxes.push_back({f, visible, vision::BoxSource::Teacher, 1.0f});
        }
        r.tracks.push_back(std::move(t));
    }
    return r;
}

/** The Report page's headline as the user reads it (the label holds escaped rich text). */
QString headlineOf(ui::ReportPage *page)
{
    return QTextDocumentFragment::fromHtml(page->headline()->text()).toPlainText().simplified();
}

/** "On N verified frames …": N, or -1. */
int framesIn(const QString &headline)
{
    const auto m = QRegularExpression(QStringLiteral("^On (\\d+) verified frame")).match(headline);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

const QRegularExpression kInterval(QStringLiteral("\\d+ % \\((\\d+)–(\\d+) %\\)"));

/** The rightmost column of the gallery caption's first line holding a near-white pixel. */
int captionEnd(const QImage &img)
{
    int end = -1;
    for (int y = 1; y < 17; ++y)
        for (int x = 0; x < img.width(); ++x) {
            const QColor c = img.pixelColor(x, y);
            if (c.red() > 170 && c.green() > 170 && c.blue() > 170)
                end = std::max(end, x);
        }
    return end;
}

} // namespace

class TestTrust : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void intervalsAfterEvaluation();
    void followsVerification();
    void disagreementPick();
    void galleryMarksThePick();
    void screenshots();
    void cleanupTestCase();

private:
    /** Runs the Evaluate step's task and waits for it. */
    void evaluate();
    /** Draws the blocks on picked frame `frame` with the mouse and marks it done with D. */
    void verifyByHand(int frame);

    QTemporaryDir m_dir;
    QString m_session, m_video;
    std::unique_ptr<app::Workflow> m_workflow;
    std::unique_ptr<ui::MainWindow> m_window;
    QString m_afterVerify; // the headline when followsVerification() ended
    int m_disagreementFrame = -1;
};

void TestTrust::initTestCase()
{
    // The window keeps settings (recent sessions, geometry): never in the user's own.
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_session = m_dir.filePath(QStringLiteral("session"));
    m_video = m_dir.filePath(QStringLiteral("drawn.avi"));
    {
        cv::VideoWriter out(m_video.toStdString(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 25,
                            kSize);
        QVERIFY(out.isOpened());
        for (int f = 0; f < kFrames; ++f)
            out.write(drawFrame(f));
    }
    app::Session s;
    s.dir = m_session;
    s.capture.source = m_video;
    s.capture.teacher = QStringLiteral("motion"); // fast, and it finds drawn blocks
    s.capture.maxFrames = kLabelled;
    s.dataset.kind = QStringLiteral("frames");
    s.dataset.frameWidth = 128;
    const vision::LabelResult labels = labelsFor(m_video.toStdString());
    labels.save(m_session.toStdString());

    // A student trained briefly on the labelled frames: its boxes are worth counting.
    auto source = vision::FrameSource::open(m_video.toStdString());
    vision::FrameDatasetOptions d;
    d.width = s.dataset.frameWidth;
    d.every = 2;
    d.augmented = 1;
    d.max_frame = kLabelled;
    const vision::FrameDatasetStats stats =
        vision::FrameDataset::build(m_session.toStdString(), labels, *source, d);
    s.frameStats = stats;
    core::Model model(vision::FrameStudentTrainer::spec(stats.input), 7);
    vision::FrameTrainOptions t;
    t.epochs = 6;
    t.batch = 8;
    t.lr = 0.03;
    vision::FrameStudentTrainer::train(model, m_session.toStdString(), t);
    core::Safetensors::saveModel(model,
                                 vision::StudentTeacher::weightsPath(m_session.toStdString()));
    s.training.state = app::TrainingRecord::State::Finished;
    s.training.weights = QStringLiteral("detector.safetensors");

    // Eight frames of the spread pick after the labelled span; five verified, three still to do.
    vision::GroundTruth truth;
    truth.source = m_video.toStdString();
    truth.frame_size = kSize;
    for (int f : {44, 54, 64, 74, 84, 94, 104, 114}) {
        vision::TruthFrame &tf = truth.ensureFrame(f);
        tf.pick = "spread";
        if (f == 54 || f == 74 || f == 94)
            continue;
        for (const cv::Rect2d &b : truthAt(f))
            tf.boxes.push_back({b, false, -1});
        tf.done = true;
    }
    truth.save(m_session.toStdString());
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));

    m_workflow = std::make_unique<app::Workflow>();
    QVERIFY2(m_workflow->openSession(m_session, &error), qPrintable(error));
    QVERIFY(m_workflow->labels());
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->resize(1280, 860);
    m_window->showStep(ui::MainWindow::Report);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
}

void TestTrust::cleanupTestCase()
{
    m_window.reset();
    m_workflow.reset();
}

void TestTrust::evaluate()
{
    QSignalSpy finished(m_workflow.get(), &app::Workflow::taskFinished);
    m_workflow->startEvaluation();
    QTRY_VERIFY_WITH_TIMEOUT(std::any_of(finished.begin(), finished.end(),
                                         [](const QList<QVariant> &a) {
                                             return a[0].value<app::Task>() ==
                                                    app::Task::Evaluation;
                                         }),
                             60000);
    for (const QList<QVariant> &a : finished)
        if (a[0].value<app::Task>() == app::Task::Evaluation)
            QVERIFY2(a[1].toBool(), qPrintable(a[2].toString()));
}

void TestTrust::verifyByHand(int frame)
{
    ui::VerifyPage *page = m_window->verifyPage();
    ui::TruthView *view = page->view();
    app::Verification *v = m_workflow->verification();
    page->showFrame(frame);
    QTRY_VERIFY(view->frame() == frame && view->hasImage());
    view->setFocus();
    const std::vector<cv::Rect2d> blocks = truthAt(frame);
    QVERIFY(!blocks.empty());
    for (std::size_t i = 0; i < blocks.size(); ++i) {
        const cv::Rect2d &b = blocks[i];
        const QPoint from = view->imageToWidget({b.x, b.y}).toPoint();
        const QPoint to = view->imageToWidget({b.x + b.width, b.y + b.height}).toPoint();
        QTest::mousePress(view, Qt::LeftButton, Qt::NoModifier, from);
        for (int k = 1; k <= 4; ++k)
            QTest::mouseMove(view, from + (to - from) * k / 4);
        QTest::mouseRelease(view, Qt::LeftButton, Qt::NoModifier, to);
        QCOMPARE(int(v->truth().frame(frame)->boxes.size()), int(i + 1));
    }
    QTest::keyClick(view, Qt::Key_D);
    QVERIFY(v->truth().frame(frame)->done);
}

void TestTrust::intervalsAfterEvaluation()
{
    ui::ReportPage *report = m_window->reportPage();
    QVERIFY2(!headlineOf(report).contains(QStringLiteral("verified frame")),
             qPrintable(headlineOf(report)));
    evaluate();
    QVERIFY(QFile::exists(QDir(m_session).filePath(
        QLatin1String(app::VerifiedDetections::kFile)))); // the boxes kept for rescoring
    const auto &kept = m_workflow->verifiedDetections();
    QVERIFY(kept);
    QCOMPARE(kept->first_frame, kLabelled);
    for (int f : {44, 54, 74, 114}) // every picked frame, verified or not
        QVERIFY2(std::count(kept->frames.begin(), kept->frames.end(), f) == 1,
                 qPrintable(QString::number(f)));

    const QString headline = headlineOf(report);
    QVERIFY2(headline.startsWith(QStringLiteral(
                 "On 5 verified frames (from frame 40 on, never seen in training) the student ")),
             qPrintable(headline));
    // The student's figures (and each baseline's that found something) with their intervals,
    // each bracketing its figure.
    auto it = kInterval.globalMatch(headline);
    int intervals = 0;
    while (it.hasNext()) {
        const auto m = it.next();
        const int value = m.captured(0).section(QLatin1Char(' '), 0, 0).toInt();
        QVERIFY2(m.captured(1).toInt() <= value && value <= m.captured(2).toInt(),
                 qPrintable(m.captured(0)));
        ++intervals;
    }
    QVERIFY2(intervals >= 2, qPrintable(headline));
    QVERIFY2(headline.contains(QStringLiteral(" of the people at ")), qPrintable(headline));
}

void TestTrust::followsVerification()
{
    m_window->showStep(ui::MainWindow::Verify);
    ui::VerifyPage *page = m_window->verifyPage();
    ui::ReportPage *report = m_window->reportPage();
    QTRY_VERIFY(m_window->isActiveWindow());
    const QString before = headlineOf(report);
    const int frames = framesIn(before);
    QCOMPARE(frames, 5);
    QVERIFY2(page->enoughLabel()->text().contains(QStringLiteral("On 5 verified frames")),
             qPrintable(page->enoughLabel()->text()));

    // A person verifies frame 74: the figures follow at once, without evaluating again.
    QSignalSpy started(m_workflow.get(), &app::Workflow::taskStarted);
    verifyByHand(74);
    const QString after = headlineOf(report);
    QCOMPARE(framesIn(after), frames + 1);
    QVERIFY(after != before);
    QVERIFY2(kInterval.match(after).hasMatch(), qPrintable(after));
    QCOMPARE(started.size(), 0);
    const QString enough =
        QTextDocumentFragment::fromHtml(page->enoughLabel()->text()).toPlainText();
    QVERIFY2(enough.startsWith(QStringLiteral("On 6 verified frames the student finds ")),
             qPrintable(enough));
    QVERIFY2(QRegularExpression(QStringLiteral("finds \\d+ % \\(\\d+–\\d+ %\\) of the people at "
                                               "\\d+ % \\(\\d+–\\d+ %\\) precision"))
                 .match(enough)
                 .hasMatch(),
             qPrintable(enough));
    QVERIFY2(!enough.contains(QStringLiteral("came after the last evaluation")),
             qPrintable(enough));

    // Ctrl+Z: the frame is open again and the headline is what it was; Ctrl+Shift+Z: done again.
    QTest::keyClick(page->view(), Qt::Key_Z, Qt::ControlModifier);
    QVERIFY(!m_workflow->verification()->truth().frame(74)->done);
    QCOMPARE(headlineOf(report), before);
    QTest::keyClick(page->view(), Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QVERIFY(m_workflow->verification()->truth().frame(74)->done);
    QCOMPARE(headlineOf(report), after);
    QCOMPARE(started.size(), 0);
    m_afterVerify = after;
}

void TestTrust::disagreementPick()
{
    QVERIFY(!m_afterVerify.isEmpty());
    ui::VerifyPage *page = m_window->verifyPage();
    ui::ReportPage *report = m_window->reportPage();
    app::Verification *v = m_workflow->verification();
    const std::size_t picked = v->truth().frames.size();
    QCOMPARE(page->countBox()->value(), 20); // as the page offers it
    QTRY_VERIFY(page->disagreementButton()->isEnabled());
    QSignalSpy finished(m_workflow.get(), &app::Workflow::taskFinished);
    QTest::mouseClick(page->disagreementButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!finished.isEmpty(), 60000);
    QCOMPARE(finished[0][0].value<app::Task>(), app::Task::DisagreementPick);
    QVERIFY2(finished[0][1].toBool(), qPrintable(finished[0][2].toString()));

    // New frames, marked in the list and in truth.json; the spread pick's frames all stay.
    std::vector<int> added;
    for (const vision::TruthFrame &f : v->truth().frames)
        if (f.pick == "disagreement")
            added.push_back(f.index);
    QVERIFY2(!added.empty() && added.size() <= 20, qPrintable(QString::number(added.size())));
    QCOMPARE(v->truth().frames.size(), picked + added.size());
    int marked = 0;
    for (int i = 0; i < page->frameList()->count(); ++i)
        marked += page->frameList()->item(i)->text().endsWith(QStringLiteral(" · disagree"));
    QCOMPARE(marked, int(added.size()));
    QVERIFY(v->flush());
    const vision::GroundTruth onDisk = vision::GroundTruth::load(m_session.toStdString());
    for (int f : added)
        QCOMPARE(QString::fromStdString(onDisk.frame(f)->pick), QStringLiteral("disagreement"));
    QCOMPARE(onDisk.frame(44)->pick, std::string("spread"));
    QCOMPARE(headlineOf(report), m_afterVerify); // picked, not verified: nothing changes
    // The page shows the first new frame to verify.
    QCOMPARE(page->currentFrame(), added.front());

    // One of them in the held-out span, verified: the evaluation did not run on it yet, so the
    // figures stand and the Verify step says to evaluate again.
    const auto held =
        std::find_if(added.begin(), added.end(), [](int f) { return f >= kLabelled; });
    QString list;
    for (int f : added)
        list += QStringLiteral(" %1").arg(f);
    QVERIFY2(held != added.end(), qPrintable("no frame after the labels among" + list));
    m_disagreementFrame = *held;
    verifyByHand(m_disagreementFrame);
    QCOMPARE(headlineOf(report), m_afterVerify);
    QVERIFY2(page->enoughLabel()->text().contains(QStringLiteral("came after the last evaluation")),
             qPrintable(page->enoughLabel()->text()));

    // Evaluated again: the frame is scored and left out of the headline, which says so; the
    // figures are the spread pick's alone, as before.
    evaluate();
    const QString headline = headlineOf(report);
    QVERIFY2(headline.startsWith(m_afterVerify), qPrintable(headline + "\n" + m_afterVerify));
    QCOMPARE(framesIn(headline), 6);
    QVERIFY2(headline.contains(QStringLiteral(
                 "1 verified frame picked where the detectors disagree is left out of these "
                 "figures")),
             qPrintable(headline));
    QCOMPARE(m_workflow->session().evaluation.verified.back().disagreement_frames, 1);
    QVERIFY2(!page->enoughLabel()->text().contains(QStringLiteral("came after")),
             qPrintable(page->enoughLabel()->text()));
}

void TestTrust::galleryMarksThePick()
{
    QVERIFY(m_disagreementFrame >= 0);
    const app::Session &s = m_workflow->session();
    const app::VerifiedRound &round = s.evaluation.verified.back();
    const vision::TruthFrame *picked =
        m_workflow->verification()->truth().frame(m_disagreementFrame);
    QVERIFY(picked && picked->done);
    // The frame drawn as the report's gallery draws it, its caption's first line measured with
    // the gallery's font: as long as "frame N · k to find" plus what its pick is called.
    auto render = [&](const std::string &pick) {
        vision::GroundTruth one;
        one.source = m_video.toStdString();
        one.frame_size = kSize;
        one.frames.push_back(*picked);
        one.frames.back().pick = pick;
        const QList<QImage> images =
            ui::Gallery::renderVerified(s, one, round.first_frame, round.scores, 6, 300);
        return images.size() == 1 ? captionEnd(images.first()) : -1;
    };
    QFont font = QGuiApplication::font();
    font.setPixelSize(12);
    const QFontMetrics metrics(font);
    const QString base =
        QStringLiteral("frame %1 · %2 to find").arg(m_disagreementFrame).arg(picked->boxes.size());
    const int plain = render("");
    QVERIFY(plain > 0);
    QVERIFY2(std::abs(plain - (4 + metrics.horizontalAdvance(base))) <= 3,
             qPrintable(QStringLiteral("caption ends at %1").arg(plain)));
    const int disagreement = render(picked->pick);
    const int spread = render("spread");
    const int wantDisagreement =
        metrics.horizontalAdvance(base + " · disagreement pick") - metrics.horizontalAdvance(base);
    const int wantSpread =
        metrics.horizontalAdvance(base + " · spread pick") - metrics.horizontalAdvance(base);
    QVERIFY2(
        std::abs(disagreement - plain - wantDisagreement) <= 3,
        qPrintable(
            QStringLiteral("%1 px more, want %2").arg(disagreement - plain).arg(wantDisagreement)));
    QVERIFY2(std::abs(spread - plain - wantSpread) <= 3,
             qPrintable(QStringLiteral("%1 px more, want %2").arg(spread - plain).arg(wantSpread)));
}

void TestTrust::screenshots()
{
    QTemporaryDir dir;
    const QString shots = qEnvironmentVariableIsSet("EDGETRAIN_SCREENSHOTS")
                              ? qEnvironmentVariable("EDGETRAIN_SCREENSHOTS")
                              : dir.filePath(QStringLiteral("shots"));
    QVERIFY(QDir().mkpath(shots));
    auto grab = [&](ui::MainWindow::Step step, const QString &name) {
        m_window->showStep(step);
        QTest::qWait(300);
        const QImage image = m_window->grab().toImage();
        QVERIFY(!image.isNull());
        QVERIFY(image.save(shots + QLatin1Char('/') + name));
    };
    // The Verify step on the disagreement frame just verified, its list and how sure.
    m_window->verifyPage()->showFrame(m_disagreementFrame);
    QTRY_COMPARE(m_window->verifyPage()->view()->frame(), m_disagreementFrame);
    grab(ui::MainWindow::Verify, QStringLiteral("trust-verify.png"));
    QTRY_VERIFY_WITH_TIMEOUT(!m_window->reportPage()->galleryLoading(), 60000);
    grab(ui::MainWindow::Report, QStringLiteral("trust-report.png"));
}

QTEST_MAIN(TestTrust)
#include "tst_trust.moc"

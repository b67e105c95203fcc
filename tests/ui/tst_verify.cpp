// The Verify step driven as a user drives it: the editor gets real mouse and key events, the
// frames come from a real video through the frame loader, truth.json is read back from disk after
// every edit. No nodes. QT_QPA_PLATFORM=offscreen.
// screenshot() does it on a real video: 120 frames of vtest.avi labelled by the HOG teacher, frames
// picked, a frame's proposals accepted with A and one marked ignore with I, the window grabbed
// (DIR/verify-editor.png with EDGETRAIN_SCREENSHOTS=DIR set, else in a temporary folder).
#include "../support/walkingvideo.h"
#include "app/session/framepick.h"
#include "app/session/workflow.h"
#include "ui/mainwindow.h"
#include "ui/truthview.h"
#include "ui/verifypage.h"
#include "vision/framesource.h"
#include "vision/teacher.h"

#include <QApplication>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <algorithm>
#include <set>

using namespace edgetrain;

namespace {

constexpr int kFrames = tests::kWalkingFrames;
const cv::Size kSize = tests::kWalkingSize;
cv::Rect2d personAt(int frame)
{
    return tests::walkingPersonAt(frame);
}
void writeVideo(const QString &path)
{
    tests::writeWalkingVideo(path);
}

/** The labels a teacher every 10 frames and a tracker in between would give the person, in the
 *  first 40 frames (the labelling stopped there). */
vision::LabelResult labelsFor(const QString &video)
{
    vision::LabelResult labels;
    labels.source = video.toStdString();
    labels.teacher = "hog";
    labels.frame_size = kSize;
    vision::Track t;
    t.id = 1;
    for (int f = 0; f < 40; ++f) {
        if (f >= 12 && f < 16)
            continue; // the tracker lost it: frames where nobody was labelled
        vision::TrackBox b;
        b.frame = f;
        b.box = personAt(f);
        b.source = f % 10 == 0 ? vision::BoxSource::Teacher : vision::BoxSource::Tracker;
        b.confidence = 0.9f;
        t.boxes.push_back(b);
    }
    labels.tracks.push_back(t);
    labels.updateStats();
    labels.stats.frames = 40;
    return labels;
}

std::string onDisk(const QString &dir)
{
    return vision::GroundTruth::load(dir.toStdString()).toJson().dump();
}

QPoint at(const ui::TruthView *view, double x, double y)
{
    return view->imageToWidget({x, y}).toPoint();
}

/** A drag with the mouse moving on the way (several move events: still one command). */
void drag(ui::TruthView *view, QPoint from, QPoint to)
{
    QTest::mousePress(view, Qt::LeftButton, Qt::NoModifier, from);
    for (int i = 1; i <= 4; ++i)
        QTest::mouseMove(view, from + (to - from) * i / 4);
    QTest::mouseRelease(view, Qt::LeftButton, Qt::NoModifier, to);
}

void compareBox(const cv::Rect2d &got, const cv::Rect2d &want)
{
    const QString text = QStringLiteral("got (%1, %2, %3, %4), want (%5, %6, %7, %8)")
                             .arg(got.x)
                             .arg(got.y)
                             .arg(got.width)
                             .arg(got.height)
                             .arg(want.x)
                             .arg(want.y)
                             .arg(want.width)
                             .arg(want.height);
    QVERIFY2(std::abs(got.x - want.x) < 1e-6 && std::abs(got.y - want.y) < 1e-6 &&
                 std::abs(got.width - want.width) < 1e-6 &&
                 std::abs(got.height - want.height) < 1e-6,
             qPrintable(text));
}

} // namespace

class TestVerify : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void pickRule_data();
    void pickRule();
    void pickFromLabels();
    void editor();
    void reopen();
    void screenshot();

private:
    void check(const char *what); // truth.json equals the truth in memory
    QTemporaryDir m_dir;
    QString m_video;
    std::unique_ptr<app::Workflow> m_workflow;
    std::unique_ptr<ui::VerifyPage> m_page;
    std::string m_saved; // the truth when editor() ended
};

void TestVerify::initTestCase()
{
    // The window keeps settings (recent sessions, geometry): never in the user's own.
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_video = m_dir.filePath(QStringLiteral("walk.avi"));
    writeVideo(m_video);
    labelsFor(m_video).save(m_dir.path().toStdString());
    app::Session s;
    s.dir = m_dir.path();
    s.capture.source = m_video;
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));
}

void TestVerify::pickRule_data()
{
    QTest::addColumn<int>("frames");
    QTest::addColumn<int>("count");
    QTest::addColumn<QList<int>>("keep");
    QTest::addColumn<int>("minHeldOut"); // picks in frames 200-299 at least
    QTest::newRow("20 of 300") << 300 << 20 << QList<int>{} << 11;
    QTest::newRow("keeps verified frames") << 300 << 20 << QList<int>{3, 7, 150} << 9;
    QTest::newRow("more wanted than frames") << 12 << 20 << QList<int>{5} << 0;
}

void TestVerify::pickRule()
{
    QFETCH(int, frames);
    QFETCH(int, count);
    QFETCH(QList<int>, keep);
    QFETCH(int, minHeldOut);
    app::FramePick pick;
    pick.frames = frames;
    pick.count = count;
    pick.heldOut = {{200, 299}};
    pick.labelledFrames = std::min(frames, 150);
    for (int f = 0; f < pick.labelledFrames; ++f)
        if (f < 50 || f >= 60)
            pick.labelled.push_back(f); // nobody in 50-59
    pick.keep.assign(keep.begin(), keep.end());
    const std::vector<int> got = app::pickFrames(pick);

    QCOMPARE(int(got.size()), std::min(count, frames));
    QVERIFY(std::is_sorted(got.begin(), got.end()));
    QCOMPARE(int(std::set<int>(got.begin(), got.end()).size()), int(got.size()));
    for (int k : keep)
        QVERIFY2(std::binary_search(got.begin(), got.end(), k), qPrintable(QString::number(k)));
    for (int f : got)
        QVERIFY(f >= 0 && f < frames);
    if (frames < 300)
        return;
    const auto held = std::count_if(got.begin(), got.end(), [](int f) { return f >= 200; });
    QVERIFY2(held >= minHeldOut, qPrintable(QStringLiteral("%1 held-out picks").arg(held)));
    QVERIFY2(held < int(got.size()), "the rest of the video gets picks too");
    QVERIFY(
        std::any_of(got.begin(), got.end(), [](int f) { return f >= 50 && f < 60; })); // unlabelled
    // Spread: no two new picks in the held-out span closer than a third of an even spacing.
    std::vector<int> heldPicks;
    for (int f : got)
        if (f >= 200)
            heldPicks.push_back(f);
    for (std::size_t i = 1; i < heldPicks.size(); ++i)
        QVERIFY2(heldPicks[i] - heldPicks[i - 1] >= 100 / int(heldPicks.size()) / 3,
                 qPrintable(QStringLiteral("%1 and %2").arg(heldPicks[i - 1]).arg(heldPicks[i])));
    // Deterministic
    QCOMPARE(app::pickFrames(pick), got);
}

void TestVerify::pickFromLabels()
{
    // Without labels: the last third is held out.
    const app::FramePick none = app::FramePick::fromLabels(nullptr, 90, 20, 1);
    QCOMPARE(none.heldOut.size(), std::size_t(1));
    QCOMPARE(none.heldOut.front(), std::make_pair(60, 89));
    // With labels that stop at frame 40: frames 40-59 are held out; 12-15 hold nobody.
    const vision::LabelResult labels = labelsFor(m_video);
    const app::FramePick pick = app::FramePick::fromLabels(&labels, kFrames, 10, 1);
    QCOMPARE(pick.labelledFrames, 40);
    QCOMPARE(int(pick.labelled.size()), 36);
    QVERIFY(std::find(pick.heldOut.begin(), pick.heldOut.end(), std::make_pair(40, kFrames - 1)) !=
            pick.heldOut.end());
    const std::vector<int> got = app::pickFrames(pick);
    QCOMPARE(int(got.size()), 10);
    QVERIFY(std::any_of(got.begin(), got.end(), [](int f) { return f >= 12 && f < 16; }));
    QVERIFY(std::count_if(got.begin(), got.end(), [](int f) { return f >= 40; }) >= 5);
}

void TestVerify::check(const char *what)
{
    app::Verification *v = m_workflow->verification();
    QVERIFY2(v->flush(), what);
    QVERIFY2(vision::GroundTruth::exists(m_dir.path().toStdString()), what);
    QVERIFY2(onDisk(m_dir.path()) == v->truth().toJson().dump(), what);
}

void TestVerify::editor()
{
    m_workflow = std::make_unique<app::Workflow>();
    QString error;
    QVERIFY2(m_workflow->openSession(m_dir.path(), &error), qPrintable(error));
    QVERIFY(m_workflow->labels());
    m_page = std::make_unique<ui::VerifyPage>(m_workflow.get());
    m_page->resize(1100, 700);
    m_page->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_page.get()));
    app::Verification *v = m_workflow->verification();
    QUndoStack *undo = v->undoStack();
    ui::TruthView *view = m_page->view();
    QCOMPARE(m_page->progressLabel()->text(), QStringLiteral("no frames picked yet"));

    // Pick 6 frames: the list shows them, the first one is shown with its proposals.
    m_page->countBox()->setValue(6);
    QTRY_VERIFY(m_page->pickButton()->isEnabled());
    QTest::mouseClick(m_page->pickButton(), Qt::LeftButton);
    QCOMPARE(m_page->frameList()->count(), 6);
    QCOMPARE(m_page->progressLabel()->text(), QStringLiteral("0 of 6 done"));
    check("picked");
    const std::vector<int> picked = v->frames();
    QVERIFY(std::any_of(picked.begin(), picked.end(), [](int f) { return f >= 40; }));
    // A labelled frame to work on.
    const int frame = *std::find_if(picked.begin(), picked.end(),
                                    [](int f) { return f < 40 && (f < 12 || f >= 16); });
    m_page->showFrame(frame);
    QTRY_COMPARE(view->frame(), frame);
    QVERIFY(view->hasImage());
    QCOMPARE(view->proposals().size(), std::size_t(1));
    view->setFocus();
    const vision::TruthFrame *tf = nullptr;
    auto boxes = [&] {
        tf = v->truth().frame(frame);
        return tf ? int(tf->boxes.size()) : -1;
    };
    QCOMPARE(boxes(), 0);

    // Draw a box on empty space: its image coordinates are where the mouse went.
    const QPoint a = at(view, 200, 40), b = at(view, 260, 120);
    drag(view, a, b);
    QCOMPARE(boxes(), 1);
    QCOMPARE(undo->count(), 2); // pick, draw
    const QPointF ia = view->widgetToImage(a), ib = view->widgetToImage(b);
    compareBox(tf->boxes[0].box, {ia.x(), ia.y(), ib.x() - ia.x(), ib.y() - ia.y()});
    QVERIFY(std::abs(tf->boxes[0].box.x - 200) < 1.5 && std::abs(tf->boxes[0].box.height - 80) < 3);
    QCOMPARE(view->selectedBox(), 0);
    check("drawn");
    const cv::Rect2d drawn = tf->boxes[0].box;

    // Drag it by (30, 20) widget pixels: it moves by that many image pixels, scaled.
    const QPoint centre = at(view, drawn.x + drawn.width / 2, drawn.y + drawn.height / 2);
    drag(view, centre, centre + QPoint(30, 20));
    QCOMPARE(undo->count(), 3); // one command for the whole drag
    const QPointF shift =
        view->widgetToImage(centre + QPoint(30, 20)) - view->widgetToImage(centre);
    compareBox(v->truth().frame(frame)->boxes[0].box,
               {drawn.x + shift.x(), drawn.y + shift.y(), drawn.width, drawn.height});
    check("moved");
    const cv::Rect2d moved = v->truth().frame(frame)->boxes[0].box;

    // Resize by the bottom-right handle.
    const QPoint corner =
        view->imageToWidget({moved.x + moved.width, moved.y + moved.height}).toPoint();
    const QPointF cornerImage = view->widgetToImage(corner);
    drag(view, corner, corner + QPoint(-15, 25));
    QCOMPARE(undo->count(), 4);
    const QPointF grow = view->widgetToImage(corner + QPoint(-15, 25)) - cornerImage;
    compareBox(v->truth().frame(frame)->boxes[0].box,
               {moved.x, moved.y, moved.width + grow.x(), moved.height + grow.y()});
    QVERIFY(grow.x() < 0 && grow.y() > 0);
    check("resized");
    const cv::Rect2d resized = v->truth().frame(frame)->boxes[0].box;

    // Resizing survives a resize of the window: the mapping follows.
    m_page->resize(800, 560);
    QTRY_VERIFY(view->imageRect().width() < 700);
    const QPoint c2 = at(view, resized.x + resized.width / 2, resized.y + resized.height / 2);
    drag(view, c2, c2 + QPoint(-10, 0));
    const QPointF shift2 = view->widgetToImage(c2 + QPoint(-10, 0)) - view->widgetToImage(c2);
    QVERIFY(shift2.x() < -10.0 * 320 / 800); // the frame is drawn smaller now: a pixel is more
    compareBox(v->truth().frame(frame)->boxes[0].box,
               {resized.x + shift2.x(), resized.y, resized.width, resized.height});
    undo->undo();
    compareBox(v->truth().frame(frame)->boxes[0].box, resized);
    m_page->resize(1100, 700);
    QTRY_VERIFY(view->imageRect().width() > 700);

    // Ignore with I, undo, redo.
    QTest::keyClick(view, Qt::Key_I);
    QVERIFY(v->truth().frame(frame)->boxes[0].ignore);
    QVERIFY(m_page->frameList()->currentItem()->text().contains(QStringLiteral("1 ignore")));
    check("ignored");
    QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier);
    QVERIFY(!v->truth().frame(frame)->boxes[0].ignore);
    check("ignore undone");
    QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QVERIFY(v->truth().frame(frame)->boxes[0].ignore);
    QTest::keyClick(view, Qt::Key_I);
    QVERIFY(!v->truth().frame(frame)->boxes[0].ignore);

    // Accept the proposal with a click: the teacher's or tracker's box becomes truth.
    const cv::Rect2d proposal = view->proposals().front().box;
    QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier,
                      at(view, proposal.x + proposal.width / 2, proposal.y + proposal.height / 2));
    QCOMPARE(boxes(), 2);
    compareBox(tf->boxes[1].box, proposal);
    QCOMPARE(view->selectedBox(), 1);
    check("accepted");
    // A (accept all) adds nothing now: the proposal is covered.
    const int commands = undo->count();
    QTest::keyClick(view, Qt::Key_A);
    QCOMPARE(boxes(), 2);
    QCOMPARE(undo->count(), commands);

    // Delete the accepted box, undo (back), redo (gone), undo.
    QTest::keyClick(view, Qt::Key_Delete);
    QCOMPARE(boxes(), 1);
    check("deleted");
    QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(boxes(), 2);
    compareBox(tf->boxes[1].box, proposal);
    check("delete undone");
    QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(boxes(), 1);
    QTest::keyClick(view, Qt::Key_Z, Qt::ControlModifier);
    QCOMPARE(boxes(), 2);

    // Undo the resize, the move and the draw, one by one.
    for (int i = 0; i < 4; ++i)
        undo->undo(); // accept, ignore off, ignore on... then the resize
    compareBox(v->truth().frame(frame)->boxes[0].box, moved);
    undo->undo();
    compareBox(v->truth().frame(frame)->boxes[0].box, drawn);
    undo->undo();
    QCOMPARE(boxes(), 0);
    check("all undone");
    while (undo->canRedo())
        undo->redo(); // up to the delete
    QCOMPARE(boxes(), 1);
    undo->undo();
    QCOMPARE(boxes(), 2);
    compareBox(tf->boxes[0].box, resized);
    check("all redone");

    // D: the frame is done, the next one is shown; the list and the count say so.
    QTest::keyClick(view, Qt::Key_D);
    QVERIFY(v->truth().frame(frame)->done);
    QCOMPARE(m_page->progressLabel()->text(), QStringLiteral("1 of 6 done"));
    QVERIFY(m_page->currentFrame() != frame);
    QTRY_COMPARE(view->frame(), m_page->currentFrame());
    bool listed = false;
    for (int i = 0; i < m_page->frameList()->count(); ++i) {
        const QString text = m_page->frameList()->item(i)->text();
        if (text.contains(QStringLiteral("frame %1 ·").arg(frame))) {
            listed = true;
            QVERIFY2(text.startsWith(QStringLiteral("✔")), qPrintable(text));
            QVERIFY2(text.contains(QStringLiteral("2 boxes")), qPrintable(text));
        }
    }
    QVERIFY(listed);
    check("done");

    // N and P walk the picked frames.
    const int here = m_page->currentFrame();
    QTest::keyClick(view, Qt::Key_P);
    QTRY_COMPARE(view->frame(), frame);
    QTest::keyClick(view, Qt::Key_Right);
    QTRY_COMPARE(view->frame(), here);

    // Picking again keeps the done frame and its boxes.
    QTest::mouseClick(m_page->pickButton(), Qt::LeftButton);
    QVERIFY(v->truth().frame(frame) && v->truth().frame(frame)->done);
    QCOMPARE(int(v->truth().frame(frame)->boxes.size()), 2);
    QCOMPARE(m_page->frameList()->count(), 6);
    check("picked again");
    m_saved = v->truth().toJson().dump();
}

void TestVerify::reopen()
{
    QVERIFY(!m_saved.empty());
    m_page.reset();
    m_workflow.reset(); // closing the app
    app::Workflow workflow;
    QString error;
    QVERIFY2(workflow.openSession(m_dir.path(), &error), qPrintable(error));
    QCOMPARE(workflow.verification()->truth().toJson().dump(), m_saved);
    QCOMPARE(workflow.verification()->truth().frames.size(), std::size_t(6));
    QCOMPARE(workflow.verification()->truth().doneFrames(), 1); // the others picked, not done
    ui::VerifyPage page(&workflow);
    QCOMPARE(page.frameList()->count(), 6);
    QCOMPARE(page.progressLabel()->text(), QStringLiteral("1 of 6 done"));
    // It goes on at the first frame not done.
    const auto &frames = workflow.verification()->truth().frames;
    const auto open = std::find_if(frames.begin(), frames.end(),
                                   [](const vision::TruthFrame &f) { return !f.done; });
    QCOMPARE(page.currentFrame(), open->index);
    QTRY_COMPARE(page.view()->frame(), open->index);
}

void TestVerify::screenshot()
{
    const QString vtest = QStringLiteral("/usr/share/doc/opencv-doc/examples/data/vtest.avi");
    if (!QFile::exists(vtest))
        QFAIL("opencv-doc is missing: scripts/install-deps.sh installs it");
    QTemporaryDir dir;
    const QString shots = qEnvironmentVariableIsSet("EDGETRAIN_SCREENSHOTS")
                              ? qEnvironmentVariable("EDGETRAIN_SCREENSHOTS")
                              : dir.filePath(QStringLiteral("shots"));
    auto source = vision::FrameSource::open(vtest.toStdString());
    auto teacher = vision::Teacher::create("hog");
    vision::LabelOptions options;
    options.max_frames = 120;
    const vision::LabelResult labels = vision::Labeler::run(*source, *teacher, options);
    QVERIFY2(labels.stopped.empty(), labels.stopped.c_str());
    QCOMPARE(labels.stats.frames, 120);
    QVERIFY(labels.stats.tracks > 0);
    labels.save(dir.path().toStdString());
    app::Session s;
    s.dir = dir.path();
    s.capture.source = vtest;
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));

    app::Workflow workflow;
    QVERIFY2(workflow.openSession(dir.path(), &error), qPrintable(error));
    ui::MainWindow window(&workflow);
    window.showStep(ui::MainWindow::Verify);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ui::VerifyPage *page = window.verifyPage();
    QTRY_VERIFY(page->pickButton()->isEnabled());
    QTest::qWait(500); // the source's length
    QTest::mouseClick(page->pickButton(), Qt::LeftButton);
    const std::vector<int> picked = workflow.verification()->frames();
    QCOMPARE(int(picked.size()), 20);
    // A labelled frame with proposals: accept them all, mark one ignore, select another.
    int frame = -1;
    std::vector<app::Proposal> proposals;
    for (int f : picked)
        if (f < 120 && (proposals = app::Proposal::fromLabels(*workflow.labels(), f)).size() >= 3) {
            frame = f;
            break;
        }
    QVERIFY2(frame >= 0, "the HOG teacher's labels propose 3 boxes on a picked frame");
    page->showFrame(frame);
    QTRY_VERIFY(page->view()->frame() == frame && page->view()->hasImage());
    page->view()->setFocus();
    QTest::keyClick(page->view(), Qt::Key_A);
    const auto &boxes = workflow.verification()->truth().frame(frame)->boxes;
    QCOMPARE(boxes.size(), proposals.size()); // every proposal a box, none twice
    for (const app::Proposal &proposal : proposals)
        QVERIFY(std::any_of(boxes.begin(), boxes.end(), [&](const vision::TruthBox &b) {
            return (b.box & proposal.box).area() > 0.999 * proposal.box.area() &&
                   b.box.area() < 1.001 * proposal.box.area();
        }));
    page->view()->selectBox(int(boxes.size()) - 1);
    QTest::keyClick(page->view(), Qt::Key_I);
    for (std::size_t i = 0; i < boxes.size(); ++i)
        QCOMPARE(boxes[i].ignore, i + 1 == boxes.size());
    page->view()->selectBox(0);
    QCOMPARE(page->view()->selectedBox(), 0);
    QVERIFY(page->frameList()->currentItem()->text().contains(QStringLiteral("1 ignore")));
    // What the window shows is what truth.json holds.
    QVERIFY(workflow.verification()->flush());
    QCOMPARE(onDisk(dir.path()), workflow.verification()->truth().toJson().dump());
    QTest::qWait(300);
    QVERIFY(QDir().mkpath(shots));
    const QImage grabbed = window.grab().toImage();
    QCOMPARE(grabbed.size(), window.size() * grabbed.devicePixelRatio());
    QVERIFY(grabbed.save(shots + QStringLiteral("/verify-editor.png")));
}

QTEST_MAIN(TestVerify)
#include "tst_verify.moc"

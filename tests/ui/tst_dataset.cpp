// The Dataset step for the full-frame student, and the boxes the window draws over frames.
// framesPage(): a drawn video of 200 frames (a person walking, a rejected track standing still)
// is labelled in memory, the real FrameDataset is built through the Workflow, and the page must
// show what was built: its counts, the full sentence, a gallery of frames, the frame controls and
// not the crop student's (DIR/dataset-frames.png with EDGETRAIN_SCREENSHOTS=DIR set).
// boxColours(): the gallery's and the video view's boxes are drawn in the
// palette's colours (app/report/palette.h), pixel by pixel. No nodes. QT_QPA_PLATFORM=offscreen.
#include "app/report/palette.h"
#include "app/session/workflow.h"
#include "ui/datasetpage.h"
#include "ui/gallery.h"
#include "ui/videoview.h"
#include "vision/framedataset.h"

#include <QApplication>
#include <QGroupBox>
#include <QLabel>
#include <QListWidget>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

using namespace edgetrain;
using Source = app::palette::Source;

namespace {

constexpr int kFrames = 200; // validation is one block of 60 frames in five: frames 120-179
const cv::Size kSize(320, 240);

cv::Rect2d walkerAt(int frame)
{
    return {20.0 + 1.2 * frame, 100.0, 20.0, 50.0};
}
const cv::Rect2d kStill(250, 40, 16, 40); // a rejected track: an ignore region in the dataset

void writeVideo(const QString &path)
{
    cv::VideoWriter writer(path.toStdString(), cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), 25,
                           kSize);
    QVERIFY2(writer.isOpened(), "cannot write the test video");
    for (int i = 0; i < kFrames; ++i) {
        cv::Mat frame(kSize, CV_8UC3, cv::Scalar(90, 90, 90));
        cv::rectangle(frame, cv::Rect(walkerAt(i)), cv::Scalar(240, 240, 240), cv::FILLED);
        cv::rectangle(frame, cv::Rect(kStill), cv::Scalar(60, 60, 200), cv::FILLED);
        writer.write(frame);
    }
}

vision::LabelResult labelsFor(const QString &video)
{
    vision::LabelResult labels;
    labels.source = video.toStdString();
    labels.teacher = "hog";
    labels.frame_size = kSize;
    vision::Track walker, still;
    walker.id = 1;
    still.id = 2;
    still.state = vision::Track::State::Rejected;
    for (int f = 0; f < kFrames; ++f) {
        vision::TrackBox b;
        b.frame = f;
        b.box = walkerAt(f);
        b.source = f % 10 == 0 ? vision::BoxSource::Teacher : vision::BoxSource::Tracker;
        b.confidence = 0.9f;
        walker.boxes.push_back(b);
        b.box = kStill;
        still.boxes.push_back(b);
    }
    labels.tracks = {walker, still};
    labels.updateStats();
    labels.stats.frames = kFrames;
    return labels;
}

/** Pixels in `area` of `image` within `tolerance` (sum over R, G, B) of `colour`. */
int pixelsNear(const QImage &image, const QRect &area, const QColor &colour, int tolerance = 40)
{
    int n = 0;
    const QRect r = area.intersected(image.rect());
    for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x) {
            const QColor c = image.pixelColor(x, y);
            n += std::abs(c.red() - colour.red()) + std::abs(c.green() - colour.green()) +
                     std::abs(c.blue() - colour.blue()) <=
                 tolerance;
        }
    return n;
}

/** The ring a box's outline is drawn in: `box` grown and shrunk by `margin` pixels. */
QRect around(const QRectF &box, int margin = 3)
{
    return box.toAlignedRect().adjusted(-margin, -margin, margin, margin);
}

} // namespace

class TestDataset : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void framesPage();
    void boxColours();

private:
    QTemporaryDir m_dir;
    QString m_video;
};

void TestDataset::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
    m_video = m_dir.filePath(QStringLiteral("walk.avi"));
    writeVideo(m_video);
    labelsFor(m_video).save(m_dir.path().toStdString());
    app::Session s;
    s.dir = m_dir.path();
    s.capture.source = m_video;
    QCOMPARE(s.dataset.kind, QStringLiteral("frames")); // the default student
    s.dataset.frameEvery = 4;
    s.dataset.frameAugment = 2;
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));
}

void TestDataset::framesPage()
{
    app::Workflow workflow;
    QString error;
    QVERIFY2(workflow.openSession(m_dir.path(), &error), qPrintable(error));
    QVERIFY(workflow.labels());
    ui::DatasetPage page(&workflow);
    page.resize(1300, 700);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));

    // Before a build: the frame student's form, no crop controls, a table of dashes.
    const auto boxes = page.findChildren<QGroupBox *>();
    auto box = [&](const QString &title) -> QGroupBox * {
        for (QGroupBox *b : boxes)
            if (b->title() == title)
                return b;
        return nullptr;
    };
    QVERIFY(box(QStringLiteral("Frames")) && box(QStringLiteral("Crops")));
    QVERIFY(box(QStringLiteral("Frames"))->isVisible());
    QVERIFY(!box(QStringLiteral("Crops"))->isVisible());
    QCOMPARE(page.counts()->rowCount(), 2); // training and validation: no test split
    QCOMPARE(page.counts()->item(0, 0)->text(), QStringLiteral("–"));
    QCOMPARE(page.gallery()->count(), 0);

    QSignalSpy done(&workflow, &app::Workflow::taskFinished);
    workflow.startDataset();
    QTRY_VERIFY_WITH_TIMEOUT(!done.isEmpty(), 120000);
    QVERIFY2(done.front().at(1).toBool(), qPrintable(done.front().at(2).toString()));
    const auto stats = vision::FrameDataset::stats(m_dir.path().toStdString());
    QVERIFY(stats.has_value());
    QVERIFY(stats->frames[0] > 0 && stats->frames[1] > 0);
    QVERIFY(stats->ignores[0] > 0); // the rejected track

    // The table counts what was built, by split.
    const QTableWidget *counts = page.counts();
    for (int split = 0; split < 2; ++split) {
        QCOMPARE(counts->item(split, 0)->text().toInt(), stats->frames[split]);
        QCOMPARE(counts->item(split, 1)->text().toInt(), stats->samples[split]);
        QCOMPARE(counts->item(split, 2)->text().toInt(), stats->objects[split]);
        QCOMPARE(counts->item(split, 3)->text().toInt(), stats->ignores[split]);
    }
    QVERIFY(counts->item(0, 1)->text().toInt() > counts->item(0, 0)->text().toInt()); // copies

    // The sentence in full on the page, in words a user reads.
    const QString summary = page.summary()->text();
    QVERIFY2(summary.contains(QStringLiteral("Training: %1 frames").arg(stats->frames[0])),
             qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("every 4th frame")), qPrintable(summary));
    QVERIFY2(summary.contains(QStringLiteral("Validation: %1 frames").arg(stats->frames[1])),
             qPrintable(summary));
    QVERIFY2(!summary.contains(QStringLiteral("(s)")), qPrintable(summary));
    QVERIFY(page.summary()->isVisible());

    // A gallery of the training frames, drawn at the frame's aspect with their boxes.
    QTRY_VERIFY_WITH_TIMEOUT(page.gallery()->count() > 0, 20000);
    QCOMPARE(page.gallery()->count(), std::min(stats->frames[0], 120));
    const QSize icon = page.gallery()->iconSize();
    QVERIFY2(icon.width() > icon.height(), "whole frames, not upright crops");
    if (qEnvironmentVariableIsSet("EDGETRAIN_SCREENSHOTS")) // to look at: DIR/dataset-frames.png
        page.grab().save(qEnvironmentVariable("EDGETRAIN_SCREENSHOTS") +
                         QStringLiteral("/dataset-frames.png"));
}

void TestDataset::boxColours()
{
    // A gallery picture of a dataset sample: the object in the tracker's colour, the ignore
    // region in the ignore colour, each where its box is.
    QTemporaryDir dir;
    QImage grey(256, 192, QImage::Format_RGB32);
    grey.fill(QColor(90, 90, 90));
    QVERIFY(grey.save(dir.filePath(QStringLiteral("0.png"))));
    vision::FrameSample sample;
    sample.file = "0.png";
    sample.frame = 7;
    sample.boxes = {{40, 60, 80, 150, false}, {160, 40, 200, 120, true}};
    const QImage tile = ui::Gallery::renderSample(dir.path(), sample, false, 192);
    QCOMPARE(tile.size(), QSize(256, 192));
    const QRect object = around({40, 60, 40, 90}), ignore = around({160, 40, 40, 80});
    QVERIFY(pixelsNear(tile, object, app::palette::onFrame(Source::Tracker)) > 40);
    QCOMPARE(pixelsNear(tile, ignore, app::palette::onFrame(Source::Tracker)), 0);
    QVERIFY(pixelsNear(tile, ignore, app::palette::onFrame(Source::Ignore)) > 20);

    // The Capture step's view: teacher, tracker, rejected and student boxes in their colours.
    auto labels = std::make_shared<vision::LabelResult>(labelsFor(m_video));
    QImage frame(kSize.width, kSize.height, QImage::Format_RGB32);
    frame.fill(QColor(90, 90, 90));
    ui::VideoView view;
    view.resize(kSize.width, kSize.height); // scale 1: widget pixels are frame pixels
    view.setLabels(labels);
    const QRectF student(150, 150, 30, 60);
    auto drawn = [&](int index) {
        view.setFrame(index, frame);
        view.setStudentBoxes(index, {student}, 0);
        return view.grab().toImage();
    };
    auto rect = [](const cv::Rect2d &r) { return QRectF(r.x, r.y, r.width, r.height); };
    const QImage teacherFrame = drawn(10), trackerFrame = drawn(15);
    if (qEnvironmentVariableIsSet("EDGETRAIN_SCREENSHOTS")) { // DIR/videoview-boxes.png
        view.resize(640, 480);
        view.setFrame(10, frame);
        view.grab().save(qEnvironmentVariable("EDGETRAIN_SCREENSHOTS") +
                         QStringLiteral("/videoview-boxes.png"));
        view.resize(kSize.width, kSize.height);
    }
    const struct
    {
        const QImage &image;
        QRect area;
        Source source;
    } cases[] = {
        {teacherFrame, around(rect(walkerAt(10))), Source::Teacher},
        {trackerFrame, around(rect(walkerAt(15))), Source::Tracker},
        {teacherFrame, around(rect(kStill)), Source::Ignore},
        {teacherFrame, around(student), Source::Student},
    };
    for (const auto &c : cases) {
        const QString what = app::palette::name(c.source);
        QVERIFY2(pixelsNear(c.image, c.area, app::palette::onFrame(c.source)) > 20,
                 qPrintable(what));
        for (Source other : {Source::Teacher, Source::Tracker, Source::Student})
            if (other != c.source)
                QVERIFY2(
                    pixelsNear(c.image, c.area, app::palette::onFrame(other)) == 0,
                    qPrintable(what + QStringLiteral(" drawn as ") + app::palette::name(other)));
    }
}

QTEST_MAIN(TestDataset)
#include "tst_dataset.moc"

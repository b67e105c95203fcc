// The Report step and the PDF, from a session built in memory: figures against verified frames
// (headline, table, precision-recall chart, PDF results page, chart files), the same without
// verified frames (named "against the tracker's labels", the Verify step offered), the verified
// gallery drawn on a small drawn video, and the Capture page's teacher choices and student
// preview. No nodes. QT_QPA_PLATFORM=offscreen.
// look() scores HOG+motion, motion and (with EDGETRAIN_STUDENT=detector.safetensors) a trained
// student on vtest.avi against tests/data/vtest's verified frames from 480 on, checks the Report
// page and the PDF say what was measured, and saves the Report page, PDF pages and the PR chart as
// PNGs (in DIR with EDGETRAIN_SCREENSHOTS=DIR set, else in a temporary folder).
#include "../support/pdfinfo.h"
#include "../support/walkingvideo.h"
#include "app/report/palette.h"
#include "app/report/pdfpage.h"
#include "app/session/workflow.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "reportsupport.h"
#include "ui/capturepage.h"
#include "ui/chartfiles.h"
#include "ui/charts.h"
#include "ui/gallery.h"
#include "ui/mainwindow.h"
#include "ui/planpage.h"
#include "ui/reportpage.h"
#include "ui/reportpages.h"
#include "ui/reporttext.h"
#include "ui/reportwriter.h"
#include "ui/videoview.h"
#include "vision/detectionrun.h"
#include "vision/framesource.h"
#include "vision/framestudenttrainer.h"
#include "vision/studentteacher.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QListWidget>
#include <QPdfWriter>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <map>
#include <set>

using namespace edgetrain;

namespace {

using tests::inkedFraction;
using tests::pdfPages;
using tests::pdfText;
using tests::renderPage;
using tests::stoppedEarly;
using tests::trackerEvaluation;
using tests::verifiedRounds;

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

/** `session` written to `dir` and opened there, as a user reopens a session with results. */
bool openWith(app::Workflow &workflow, const QString &dir, app::Session session, QString *error)
{
    session.dir = dir;
    return session.save(error) && workflow.openSession(dir, error);
}

/** Pixels of `img` close to `colour` (each channel within 40). */
int pixelsLike(const QImage &img, const QColor &colour)
{
    int n = 0;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x) {
            const QColor c = img.pixelColor(x, y);
            n += std::abs(c.red() - colour.red()) < 40 &&
                 std::abs(c.green() - colour.green()) < 40 &&
                 std::abs(c.blue() - colour.blue()) < 40;
        }
    return n;
}

} // namespace

class TestReport : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void verifiedPage();
    void withoutVerifiedFrames();
    void verifyButtonGoesToVerify();
    void prChart();
    void pdfAndCharts_data();
    void pdfAndCharts();
    void verifiedGallery();
    void captureTeachersAndPreview();
    void energyTable();
    void look();

private:
    QTemporaryDir m_dir;
};

void TestReport::initTestCase()
{
    // The window keeps settings (recent sessions, geometry): never in the user's own.
    QStandardPaths::setTestModeEnabled(true);
    QVERIFY(m_dir.isValid());
}

void TestReport::verifiedPage()
{
    app::Workflow workflow;
    QString error;
    app::Session s;
    s.capture.maxFrames = 480;
    trackerEvaluation(s);
    s.evaluation.verified = verifiedRounds();
    s.evaluation.student_fps = 41.5;
    s.evaluation.teacher_fps = 4.8;
    s.evaluation.motion_fps = 144;
    QVERIFY2(openWith(workflow, m_dir.filePath(QStringLiteral("verified")), s, &error),
             qPrintable(error));
    ui::ReportPage page(&workflow, {});

    const QString head = page.headline()->text();
    QVERIFY2(head.contains(QStringLiteral("On 13 verified frames")), qPrintable(head));
    QVERIFY2(
        head.contains(QStringLiteral("the student finds 87 % of the people at 93 % precision")),
        qPrintable(head));
    QVERIFY2(head.contains(QStringLiteral("the teacher 41 % at 80 %; motion 90 % at 95 %")),
             qPrintable(head));
    QVERIFY(!page.verifyButton()->isVisibleTo(&page));

    // Both rounds, student first in each; the current round with its speeds.
    QTableWidget *t = page.verifiedTable();
    QCOMPARE(t->rowCount(), 6);
    QCOMPARE(t->columnCount(), 9);
    QStringList header;
    for (int c = 0; c < t->columnCount(); ++c)
        header << t->horizontalHeaderItem(c)->text();
    QCOMPARE(header, QStringList({"Round", "Detector", "Recall", "Precision", "F1", "AP50",
                                  "AP@[.5:.95]", "TP / FP", "Frames/s"}));
    auto row = [t](int r) {
        QStringList cells;
        for (int c = 0; c < t->columnCount(); ++c)
            cells << t->item(r, c)->text();
        return cells;
    };
    QCOMPARE(row(0).mid(0, 4), QStringList({"1", "student", "70.0 %", "88.0 %"}));
    QCOMPARE(row(0).last(), QStringLiteral("–")); // an earlier round's speed was not measured
    QCOMPARE(row(3), QStringList({"2", "student", "87.0 %", "93.0 %", "0.899", "0.809", "0.405",
                                  "71 / 5", "41.5"}));
    QCOMPARE(row(4).mid(1, 3), QStringList({"teacher", "41.0 %", "80.0 %"}));
    QCOMPARE(row(4).last(), QStringLiteral("4.8"));
    QCOMPARE(row(5).last(), QStringLiteral("144"));

    // The tracker's figures stay, named for what they are.
    QCOMPARE(page.trackerTable()->item(1, 2)->text(), QStringLiteral("44.0 %"));
    QCOMPARE(page.prChart()->curveCount(), 3);

    // In the window on a 1366 x 768 screen, and narrower, every column header of the Report
    // step's verified table reads whole ("Frames/s" was elided), its cells with their intervals.
    for (app::VerifiedRound &r : s.evaluation.verified)
        r.intervals.assign(
            r.scores.size(),
            vision::FigureIntervals{{0.812, 0.921}, {0.923, 0.991}, {0.85, 0.95}, {0.8, 0.9}});
    QVERIFY2(openWith(workflow, m_dir.filePath(QStringLiteral("verified-ci")), s, &error),
             qPrintable(error));
    ui::MainWindow window(&workflow);
    window.showStep(ui::MainWindow::Report);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    t = window.reportPage()->verifiedTable();
    QHeaderView *h = t->horizontalHeader();
    for (int width : {1366, 1100, 900, 700}) {
        window.resize(width, 768);
        QApplication::processEvents();
        const QFontMetrics fm(h->font());
        const int margin = h->style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, h);
        for (int c = 0; c < t->columnCount(); ++c) {
            const QString text = t->horizontalHeaderItem(c)->text();
            const int room = h->sectionSize(c) - 2 * margin;
            QVERIFY2(
                fm.elidedText(text, Qt::ElideRight, room) == text,
                qPrintable(QStringLiteral("'%1' at %2: %3 px").arg(text).arg(width).arg(room)));
        }
    }
}

void TestReport::withoutVerifiedFrames()
{
    app::Workflow workflow;
    QString error;
    app::Session s;
    trackerEvaluation(s);
    QVERIFY2(openWith(workflow, m_dir.filePath(QStringLiteral("tracker")), s, &error),
             qPrintable(error));
    ui::ReportPage page(&workflow, {});
    const QString head = page.headline()->text();
    QVERIFY2(head.contains(QStringLiteral("against the tracker's own labels")), qPrintable(head));
    QVERIFY2(head.contains(QStringLiteral("44.0 %")), qPrintable(head));
    QVERIFY2(head.contains(QStringLiteral("Verify frames")), qPrintable(head));
    QVERIFY(page.verifyButton()->isVisibleTo(&page));
    QCOMPARE(page.verifiedTable()->rowCount(), 0);
    QCOMPARE(page.prChart()->curveCount(), 0);
    QSignalSpy verify(&page, &ui::ReportPage::verifyRequested);
    QTest::mouseClick(page.verifyButton(), Qt::LeftButton);
    QCOMPARE(verify.count(), 1);
    // The plain-text headline (the PDF's) says the same.
    const QString plain = ui::ReportText::headline(workflow.session(), "person");
    QVERIFY2(
        plain.startsWith(QStringLiteral("Against the tracker's labels: on 310 held-out boxes")),
        qPrintable(plain));
    QVERIFY2(plain.contains(QStringLiteral("Verify frames in step 4")), qPrintable(plain));
}

void TestReport::verifyButtonGoesToVerify()
{
    app::Workflow workflow;
    QString error;
    app::Session s;
    trackerEvaluation(s);
    QVERIFY2(openWith(workflow, m_dir.filePath(QStringLiteral("window")), s, &error),
             qPrintable(error));
    ui::MainWindow window(&workflow);
    window.showStep(ui::MainWindow::Report);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY(window.reportPage()->verifyButton()->isVisible());
    QTest::mouseClick(window.reportPage()->verifyButton(), Qt::LeftButton);
    QCOMPARE(window.currentStep(), ui::MainWindow::Verify);
    // A new session trains the full-frame student: the Plan step shows it (the list once
    // lacked it, so the page wrote the crop student back and training refused the frames).
    window.showStep(ui::MainWindow::Plan);
    QCOMPARE(workflow.session().plan.model, QStringLiteral("detector"));
    QCOMPARE(window.planPage()->modelBox()->currentText(), QStringLiteral("detector"));
}

void TestReport::prChart()
{
    ui::PrChart chart;
    const auto rounds = verifiedRounds();
    chart.show(rounds.back().scores);
    QCOMPARE(chart.curveCount(), 3);
    for (const vision::DetectorScore &d : rounds.back().scores) {
        const QString name = QString::fromStdString(d.name);
        QLineSeries *curve = chart.curve(name);
        QVERIFY2(curve, qPrintable(name));
        QCOMPARE(curve->count(), int(d.curve.size()));
        for (int i = 0; i < curve->count(); ++i)
            QCOMPARE(curve->at(i),
                     QPointF(d.curve[std::size_t(i)].recall, d.curve[std::size_t(i)].precision));
        QCOMPARE(curve->pen().color(), ui::detectorColor(name));
        QScatterSeries *point = chart.operatingPoint(name);
        QCOMPARE(point->count(), 1);
        QCOMPARE(point->at(0), QPointF(d.recall, d.precision));
        QVERIFY2(curve->name().startsWith(name + QStringLiteral(" (AP50 ")),
                 qPrintable(curve->name()));
    }
    // The palette's colours, as the report's (app/report/palette.h).
    QCOMPARE(ui::detectorColor(QStringLiteral("student")),
             app::palette::onLight(app::palette::Source::Student));
    QCOMPARE(ui::detectorColor(QStringLiteral("teacher")),
             app::palette::onLight(app::palette::Source::Teacher));
    // Again with fewer detectors: the old curves go.
    chart.show({rounds.back().scores[0]});
    QCOMPARE(chart.curveCount(), 1);
    QCOMPARE(chart.chart()->series().size(), 2);
}

void TestReport::pdfAndCharts_data()
{
    QTest::addColumn<bool>("verified");
    QTest::addColumn<QString>("results"); // on page 5
    QTest::newRow("verified") << true
                              << QStringLiteral(
                                     "the student finds 87 % of the people at 93 % precision");
    QTest::newRow("none verified") << false << QStringLiteral("No frame is verified yet");
}

void TestReport::pdfAndCharts()
{
    QFETCH(bool, verified);
    QFETCH(QString, results);
    app::Session s;
    s.dir = m_dir.filePath(QStringLiteral("pdf"));
    s.capture.source = QStringLiteral("vtest.avi");
    s.capture.maxFrames = 480;
    s.capture.every = 2;
    trackerEvaluation(s);
    stoppedEarly(s);
    if (verified)
        s.evaluation.verified = verifiedRounds();
    ui::ReportContent content;
    content.session = &s;
    // The tracker's gains (no verified gallery): a frame for the front page.
    QImage frame(400, 300, QImage::Format_RGB32);
    frame.fill(QColor(90, 110, 90));
    content.gallery = {frame, frame};
    const QString out =
        m_dir.filePath(verified ? QStringLiteral("out-verified") : QStringLiteral("out-none"));
    QStringList written;
    QString error;
    QVERIFY2(ui::ReportWriter::exportAll(out, content, &written, &error), qPrintable(error));
    for (const char *f : {"report.pdf", "charts/pr.png", "charts/pr.svg", "verified.csv"}) {
        const QString path = out + QLatin1Char('/') + QLatin1String(f);
        QVERIFY2(written.contains(path), f);
        QVERIFY2(QFileInfo(path).size() > 0, f);
    }
    const QImage png(out + QStringLiteral("/charts/pr.png"));
    QVERIFY(!png.isNull());
    QFile svg(out + QStringLiteral("/charts/pr.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    const QByteArray svgText = svg.readAll();
    QCOMPARE(svgText.contains("student (AP50"), verified);
    QFile csv(out + QStringLiteral("/verified.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    QCOMPARE(csv.readAll().count('\n'), verified ? 7 : 1); // header + 2 rounds x 3 detectors

    const QString pdf = out + QStringLiteral("/report.pdf");
    const int pages = pdfPages(pdf);
    if (pages < 0)
        QFAIL("pdfinfo (poppler-utils) is missing: scripts/install-deps.sh installs it");
    QCOMPARE(pages, ui::ReportWriter::kPages);
    const QString page5 = pdfText(pdf, 5);
    QVERIFY2(page5.contains(QStringLiteral("Results against verified frames")), qPrintable(page5));
    QVERIFY2(page5.contains(results), qPrintable(page5));
    if (verified)
        QVERIFY2(page5.contains(QStringLiteral("AP@[.5:.95]")), qPrintable(page5));
    // The PR chart is drawn as vectors (no image on the page).
    QProcess images;
    images.start(QStringLiteral("pdfimages"),
                 {QStringLiteral("-list"), QStringLiteral("-f"), QStringLiteral("5"),
                  QStringLiteral("-l"), QStringLiteral("5"), pdf});
    QVERIFY(images.waitForFinished(20000));
    const QStringList lines = QString::fromUtf8(images.readAllStandardOutput())
                                  .split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 2); // the list's header only
    // Drawn through its SVG: the chart's smallest text, scaled as on the page, reads on paper.
    {
        QPdfWriter paper(m_dir.filePath(QStringLiteral("scale.pdf")));
        app::PdfPage::setUp(paper, QString());
        ui::PrChart chart;
        chart.setAttribute(Qt::WA_DontShowOnScreen);
        chart.resize(400, 300);
        chart.show(verifiedRounds().back().scores, {});
        chart.QWidget::show();
        QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
        static const QRegularExpression size(QStringLiteral("font-size=\"([0-9.]+)\""));
        double smallest = 1e9;
        for (auto it = size.globalMatch(QString::fromUtf8(ui::ChartFiles::svg(&chart, {})));
             it.hasNext();)
            smallest = std::min(smallest, it.next().captured(1).toDouble());
        const double points =
            smallest * ui::ReportPages::chartScale(paper, chart) * 72.0 / paper.logicalDpiY();
        QVERIFY2(points >= 7.0 && points < 1e8, qPrintable(QString::number(points)));
    }
    // The words a customer reads without help, and a glossary for the rest.
    QString all;
    for (int page = 1; page <= pages; ++page)
        all += pdfText(pdf, page) + QLatin1Char(' ');
    for (const char *wrong : {"(s)", "2th", "every 2 frame"})
        QVERIFY2(!all.contains(QLatin1String(wrong)), wrong);
    // The invitation to verify frames only while none is verified.
    QCOMPARE(all.contains(QStringLiteral("Verify frames to see")), !verified);
    QVERIFY2(all.contains(QStringLiteral("every 2nd frame")), qPrintable(all));
    // Why another run of this session may differ (three devices trained it).
    QVERIFY2(all.contains(QStringLiteral("repeatable only up to float rounding")), qPrintable(all));
    const QString settings = pdfText(pdf, 2);
    QVERIFY2(settings.contains(QStringLiteral("25 run of at most 40")), qPrintable(settings));
    // The full-frame student's dataset is not shown as the crop student's table of dashes.
    QVERIFY2(!settings.contains(QStringLiteral("split by track")), qPrintable(settings));
    QVERIFY2(settings.contains(QStringLiteral("keeps the weights of epoch 15")),
             qPrintable(settings));
    const QString glossary = pdfText(pdf, pages);
    QVERIFY2(glossary.contains(QStringLiteral("Glossary")), qPrintable(glossary));
    for (const QList<QString> &row : ui::ReportText::glossary().mid(1))
        QVERIFY2(glossary.contains(row.first()), qPrintable(row.first()));
    for (const char *term : {"AP50", "AP@[.5:.95]", "IoU", "TP / FP", "EDP", "Store-all",
                             "Operating point", "95 % interval", "Held-out", "Recall", "Precision",
                             "F1", "Teacher", "Student", "Motion", "Tracker"})
        QVERIFY2(glossary.contains(QLatin1String(term)), term);
    // The front page is filled, not two thirds blank.
    const QImage front = renderPage(pdf, 1, m_dir.filePath(QStringLiteral("front")));
    QVERIFY(!front.isNull());
    QVERIFY2(inkedFraction(front) > 0.6, qPrintable(QString::number(inkedFraction(front))));
    const QString title = pdfText(pdf, 1);
    QVERIFY2(title.contains(verified ? QStringLiteral("On 13 verified frames")
                                     : QStringLiteral("Against the tracker's labels")),
             qPrintable(title));
    QVERIFY2(title.contains(QStringLiteral("25 of at most 40 epochs")), qPrintable(title));
    if (verified) // the key figures: student, teacher, motion with their recall and precision
        for (const char *tile : {"student", "teacher", "motion", "recall", "precision"})
            QVERIFY2(title.contains(QLatin1String(tile)), tile);
    const QString page6 = pdfText(pdf, 6);
    QVERIFY2(page6.contains(QStringLiteral("Results against the tracker's labels")),
             qPrintable(page6));
    QVERIFY2(page6.contains(QStringLiteral("44.0 %")), qPrintable(page6));
}

void TestReport::verifiedGallery()
{
    const QString dir = m_dir.filePath(QStringLiteral("gallery"));
    QVERIFY(QDir().mkpath(dir));
    const QString video = dir + QStringLiteral("/walk.avi");
    writeVideo(video);
    app::Session s;
    s.dir = dir; // no student weights: the teacher only
    s.capture.source = video;
    s.capture.teacher = QStringLiteral("motion");
    vision::GroundTruth truth;
    truth.source = video.toStdString();
    truth.frame_size = kSize;
    for (int f : {20, 40, 50}) {
        vision::TruthFrame &tf = truth.ensureFrame(f);
        const cv::Rect2d p = personAt(f); // 4 px loose: the teacher's box shows inside it
        tf.boxes.push_back({cv::Rect2d(p.x - 4, p.y - 4, p.width + 8, p.height + 8), false, 1});
        tf.done = f != 50; // not done: not drawn
    }
    const QList<QImage> images = ui::Gallery::renderVerified(s, truth, 30, {}, 6, 300);
    QCOMPARE(images.size(), 1); // 20 is before the first frame, 50 is not done
    const QImage &img = images.first();
    QCOMPARE(img.height(), 300);
    QCOMPARE(img.width(), 400);
    // The verified box in the palette's truth colour where the person is (x 140 at scale 1.25),
    // the motion teacher's box in the teacher's colour inside it.
    using Source = app::palette::Source;
    const double k = 300.0 / kSize.height;
    const cv::Rect2d p = personAt(40);
    QCOMPARE(img.pixelColor(int((p.x - 4) * k), int((p.y + p.height / 2) * k)),
             app::palette::onFrame(Source::Truth));
    QVERIFY2(pixelsLike(img, app::palette::onFrame(Source::Teacher)) > 100, "no teacher box drawn");
    QCOMPARE(pixelsLike(img, app::palette::onFrame(Source::Student)), 0);
}

void TestReport::captureTeachersAndPreview()
{
    const QString dir = m_dir.filePath(QStringLiteral("capture"));
    app::Workflow workflow;
    QString error;
    QVERIFY2(workflow.newSession(dir, &error), qPrintable(error));
    const QString video = dir + QStringLiteral("/walk.avi");
    writeVideo(video);
    ui::CapturePage page(&workflow);
    app::CaptureSettings capture = workflow.session().capture;
    capture.source = video;
    capture.teacher = QStringLiteral("hog+motion");
    QVERIFY(workflow.setCapture(capture));
    QComboBox *teachers = page.teacherBox();
    QVERIFY(teachers->findData(QStringLiteral("motion")) >= 0);
    QCOMPARE(teachers->currentData().toString(), QStringLiteral("hog+motion"));
    for (const QString &spec : {QStringLiteral("motion"), QStringLiteral("hog+motion")})
        QVERIFY(vision::Teacher::create(spec.toStdString())); // what the box offers, Teacher takes

    // No student yet: the preview cannot be switched on.
    QVERIFY(!page.studentToggle()->isEnabled());
    // A full-frame student (untrained weights: the boxes do not matter here, that they come does).
    const auto spec = vision::FrameStudentTrainer::spec(cv::Size(128, 96));
    core::Model model(spec, 1);
    core::Safetensors::saveModel(model, vision::StudentTeacher::weightsPath(dir.toStdString()));
    // Reopened, the session has a student (as after a training run).
    QVERIFY2(workflow.save(&error) && workflow.openSession(dir, &error), qPrintable(error));
    QVERIFY(page.studentToggle()->isEnabled());
    QTRY_COMPARE(page.view()->frame(), 0);
    page.studentToggle()->setChecked(true);
    QTRY_COMPARE(page.view()->studentFrame(), 0);
    QTRY_VERIFY(page.studentSpeed()->text().contains(QStringLiteral("frames/s")));
    page.studentToggle()->setChecked(false);
    QCOMPARE(page.view()->studentFrame(), -1);
    QVERIFY(page.studentSpeed()->text().isEmpty());
}

void TestReport::energyTable()
{
    // Per device that reported power: its energy over its readings, the mean power, per epoch.
    app::Session s;
    auto reading = [&](const QString &node, double t, double watts, double joules, bool measured) {
        app::MetricRow m;
        m.seconds = t;
        m.node = node;
        m.powerWatts = watts;
        m.energyJoules = joules;
        m.powerMeasured = measured;
        s.training.metrics.push_back(m);
    };
    QCOMPARE(ui::ReportText::energyRows(s).size(), 1); // only the header: no power at all
    reading(QStringLiteral("pi"), 1.0, 3.0, 10.0, false);
    reading(QStringLiteral("plain"), 1.5, -1.0, 0.0, false); // reports no power: not listed
    reading(QStringLiteral("laptop"), 2.0, 20.0, 100.0, true);
    reading(QStringLiteral("pi"), 3.0, 3.0, 16.0, false);
    reading(QStringLiteral("laptop"), 4.0, 20.0, 140.0, true);
    s.training.epochs.resize(2);
    const QList<QStringList> rows = ui::ReportText::energyRows(s);
    QCOMPARE(rows.size(), 3);
    QCOMPARE(rows[1], (QStringList{QStringLiteral("laptop"), QStringLiteral("measured"),
                                   QStringLiteral("40.0 J"), QStringLiteral("20.00 W"),
                                   QStringLiteral("20.0 J")}));
    QCOMPARE(rows[2], (QStringList{QStringLiteral("pi"), QStringLiteral("estimated (profile)"),
                                   QStringLiteral("6.0 J"), QStringLiteral("3.00 W"),
                                   QStringLiteral("3.0 J")}));
}

void TestReport::look()
{
    const QString vtest = QStringLiteral("/usr/share/doc/opencv-doc/examples/data/vtest.avi");
    if (!QFile::exists(vtest))
        QFAIL("opencv-doc is missing: scripts/install-deps.sh installs it");
    const QString dir = m_dir.filePath(QStringLiteral("look"));
    const QString shots = qEnvironmentVariableIsSet("EDGETRAIN_SCREENSHOTS")
                              ? qEnvironmentVariable("EDGETRAIN_SCREENSHOTS")
                              : m_dir.filePath(QStringLiteral("look-shots"));
    QVERIFY(QDir().mkpath(dir));
    QVERIFY(QDir().mkpath(shots));
    // The verified frames made by hand (tests/data/vtest), scored from frame 480 on.
    vision::GroundTruth truth =
        vision::GroundTruth::importFile(EDGETRAIN_SOURCE_DIR "/tests/data/vtest/gt.txt",
                                        vision::AnnotationFormat::Mot, cv::Size(768, 576), 795);
    truth.source = vtest.toStdString();
    truth.save(dir.toStdString());
    // Students: EDGETRAIN_STUDENT (current) and EDGETRAIN_STUDENT_ROUND1 (before self-training).
    QStringList students;
    for (const char *var : {"EDGETRAIN_STUDENT_ROUND1", "EDGETRAIN_STUDENT"})
        if (qEnvironmentVariableIsSet(var))
            students << qEnvironmentVariable(var);
    if (!students.isEmpty())
        QVERIFY(QFile::copy(
            students.last(),
            QString::fromStdString(vision::StudentTeacher::weightsPath(dir.toStdString()))));

    std::vector<std::unique_ptr<vision::Teacher>> detectors;
    detectors.push_back(vision::Teacher::create("hog"));
    detectors.push_back(vision::Teacher::create("motion"));
    for (const QString &w : students) {
        auto student = std::make_unique<vision::StudentTeacher>(
            vision::FrameStudent::loadModel(w.toStdString()));
        student->threshold = 0.05f; // the whole curve; the operating point is at 0.3
        detectors.push_back(std::move(student));
    }
    std::vector<vision::Teacher *> run;
    for (auto &d : detectors)
        run.push_back(d.get());
    std::set<int> frames;
    for (const vision::TruthFrame &f : truth.frames)
        if (f.done && f.index >= 480)
            frames.insert(f.index);
    QVERIFY2(frames.size() >= 10, "tests/data/vtest verifies frames from 480 on");
    auto source = vision::FrameSource::open(vtest.toStdString());
    const vision::DetectionRunResult found = vision::DetectionRun::run(*source, run, frames);

    app::Session s;
    s.dir = dir;
    s.title = QStringLiteral("vtest, HOG teacher");
    s.capture.source = vtest;
    s.capture.teacher = QStringLiteral("hog");
    s.capture.maxFrames = 480;
    vision::MetricsOptions options;
    options.first_frame = 480;
    for (std::size_t r = 0; r < std::max<std::size_t>(1, std::size_t(students.size())); ++r) {
        app::VerifiedRound round;
        round.round = int(r) + 1;
        round.first_frame = 480;
        round.frames = int(frames.size());
        options.threshold = 0.0f;
        round.scores.push_back(
            vision::DetectionMetrics::evaluate("teacher", found.detections[0], truth, options));
        round.scores.push_back(
            vision::DetectionMetrics::evaluate("motion", found.detections[1], truth, options));
        if (!students.isEmpty()) {
            options.threshold = 0.3f;
            round.scores.push_back(vision::DetectionMetrics::evaluate(
                "student", found.detections[2 + r], truth, options));
        }
        s.evaluation.verified.push_back(round);
    }
    const double n = double(frames.size());
    s.evaluation.teacher_fps = n / found.detect_seconds[0];
    s.evaluation.motion_fps = n / found.detect_seconds[1];
    if (!students.isEmpty())
        s.evaluation.student_fps = n / found.detect_seconds.back();
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));

    app::Workflow workflow;
    QVERIFY2(workflow.openSession(dir, &error), qPrintable(error));
    ui::MainWindow window(&workflow);
    window.resize(1400, 900);
    window.showStep(ui::MainWindow::Report);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    ui::ReportPage *page = window.reportPage();
    QTRY_VERIFY_WITH_TIMEOUT(!page->galleryLoading(), 180000);
    QTest::qWait(200);
    // The page says what was measured: on these frames, the teacher's and motion's figures.
    const vision::DetectorScore &hog = s.evaluation.verified.back().scores[0];
    const vision::DetectorScore &motion = s.evaluation.verified.back().scores[1];
    const QString head = page->headline()->text();
    qInfo().noquote() << head;
    QVERIFY2(head.contains(QStringLiteral("On %1 verified frames").arg(frames.size())),
             qPrintable(head));
    QCOMPARE(hog.frames, int(frames.size()));
    QVERIFY2(hog.truths > 0 && hog.true_positives > 0,
             "HOG finds people among the verified frames' people");
    QVERIFY2(motion.true_positives > 0, "so does motion");
    QTableWidget *table = page->verifiedTable();
    std::map<QString, int> column; // the table has a Round column only with several rounds
    for (int c = 0; c < table->columnCount(); ++c)
        column[table->horizontalHeaderItem(c)->text()] = c;
    QStringList shown;
    for (int r = 0; r < table->rowCount(); ++r)
        shown << table->item(r, column[QStringLiteral("Detector")])->text() + QLatin1Char(' ') +
                     table->item(r, column[QStringLiteral("Recall")])->text() + QLatin1Char(' ') +
                     table->item(r, column[QStringLiteral("Precision")])->text();
    auto figures = [](const QString &name, const vision::DetectorScore &d) {
        return name + QStringLiteral(" %1 % %2 %")
                          .arg(QString::number(100 * d.recall, 'f', 1),
                               QString::number(100 * d.precision, 'f', 1));
    };
    QVERIFY2(shown.contains(figures(QStringLiteral("teacher"), hog)), qPrintable(shown.join('|')));
    QVERIFY2(shown.contains(figures(QStringLiteral("motion"), motion)),
             qPrintable(shown.join('|')));
    const QImage pageShot = window.grab().toImage();
    QVERIFY(pageShot.save(shots + QStringLiteral("/report-page.png")));

    const QString out = dir + QStringLiteral("/export");
    QStringList written;
    QVERIFY2(page->exportTo(out, &written, &error), qPrintable(error));
    QFile::remove(shots + QStringLiteral("/pr-chart.png"));
    QVERIFY(QFile::copy(out + QStringLiteral("/charts/pr.png"),
                        shots + QStringLiteral("/pr-chart.png")));
    QFile::copy(out + QStringLiteral("/report.pdf"), shots + QStringLiteral("/report.pdf"));
    for (const auto &[first, name] :
         {std::pair{5, "report-pdf-results"}, std::pair{1, "report-pdf-title"},
          std::pair{7, "report-pdf-gallery"}}) {
        QProcess ppm;
        ppm.start(QStringLiteral("pdftoppm"),
                  {QStringLiteral("-f"), QString::number(first), QStringLiteral("-l"),
                   QString::number(first), QStringLiteral("-png"), QStringLiteral("-r"),
                   QStringLiteral("60"), QStringLiteral("-singlefile"),
                   out + QStringLiteral("/report.pdf"),
                   shots + QLatin1Char('/') + QLatin1String(name)});
        QVERIFY(ppm.waitForFinished(60000));
        QCOMPARE(ppm.exitCode(), 0);
        const QImage rendered(shots + QLatin1Char('/') + QLatin1String(name) +
                              QStringLiteral(".png"));
        QVERIFY2(!rendered.isNull(), name);
        QVERIFY2(pixelsLike(rendered, Qt::white) < rendered.width() * rendered.height(), name);
    }
    // The PDF's results page and its title page carry the same headline.
    const QString results = pdfText(out + QStringLiteral("/report.pdf"), 5);
    QVERIFY2(results.contains(QStringLiteral("On %1 verified frames").arg(frames.size())),
             qPrintable(results));
    QVERIFY2(results.contains(QString::number(100 * hog.recall, 'f', 1) + QStringLiteral(" %")),
             qPrintable(results));
    if (students.isEmpty())
        return;
    // The Capture page's live preview of the student.
    window.showStep(ui::MainWindow::Capture);
    ui::CapturePage *capture = window.capturePage();
    QTRY_VERIFY(capture->studentToggle()->isEnabled());
    capture->studentToggle()->setChecked(true);
    QTRY_VERIFY_WITH_TIMEOUT(
        capture->view()->studentFrame() == capture->view()->frame() &&
            capture->studentSpeed()->text().contains(QStringLiteral("frames/s")),
        20000);
    QTest::qWait(200);
    QVERIFY(window.grab().save(shots + QStringLiteral("/capture-student.png")));
}

QTEST_MAIN(TestReport)
#include "tst_report.moc"

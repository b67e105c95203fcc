// Every step of the window at the sizes it is used at (1366×768, 1920×1080), on a session with a
// finished training run, verified results and a deployment: no chart's title, axis title, tick
// label or legend entry is cut short ("…") or drawn over another, and no visible column header
// is elided. QT_QPA_PLATFORM=offscreen. With EDGETRAIN_SCREENSHOTS=DIR set, each step is saved
// as DIR/<width>x<height>-<step>.png.
#include "../support/walkingvideo.h"
#include "app/session/workflow.h"
#include "reportsupport.h"
#include "ui/mainwindow.h"
#include "ui/reportpages.h"
#include "ui/reportwriter.h"
#include "ui/trainpage.h"

#include <QApplication>
#include <QChartView>
#include <QGraphicsTextItem>
#include <QHeaderView>
#include <QLineSeries>
#include <QListWidget>
#include <QStandardPaths>
#include <QStyle>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTextDocument>
#include <QValueAxis>

#include <cmath>

using namespace edgetrain;

namespace {

constexpr int kNodes = 3, kEpochs = 25;
constexpr double kEpochSeconds = 18.7; // a run of several minutes: the time axis in minutes

const char *const kStepNames[] = {"nodes", "capture", "dataset", "verify",
                                  "plan",  "train",   "report",  "deploy"};

/** The report suites' score (reportsupport.h): 16 frames, 90 people, as wide as the demo's. */
vision::DetectorScore score(const std::string &name, double recall, double precision)
{
    vision::DetectorScore s =
        tests::score(name, recall, precision, 90,
                     {{0.2, 0.98, 0.9f}, {recall, precision, 0.3f}, {recall + 0.03, 0.6, 0.1f}});
    s.frames = 16;
    s.threshold = 0.0f;
    return s;
}

vision::FigureIntervals intervals(double recall, double precision)
{
    vision::FigureIntervals i;
    i.recall = {recall - 0.06, std::min(1.0, recall + 0.05), 2000};
    i.precision = {precision - 0.05, std::min(1.0, precision + 0.04), 2000};
    return i;
}

/** A session as the demo leaves it: three x86_64 nodes without a power model trained 25
 *  epochs (one dropped out and came back), verified and deployed. */
app::Session trainedSession(const QString &video)
{
    app::Session s;
    s.capture.source = video;
    s.plan.epochs = 40;
    for (int n = 1; n <= kNodes; ++n) {
        app::SessionNode node;
        node.name = QStringLiteral("demo-node-%1").arg(n);
        node.host = QStringLiteral("127.0.0.1");
        node.port = quint16(7000 + n);
        node.paired = true;
        node.arch = QStringLiteral("x86_64");
        node.cpuModel = QStringLiteral("Intel(R) Xeon(R) CPU");
        node.cores = 2;
        node.ramBytes = std::int64_t(8) << 30;
        s.nodes.push_back(node);
        s.training.nodes << node.name;
    }
    app::TrainingRecord &t = s.training;
    t.state = app::TrainingRecord::State::Finished;
    t.jobId = QStringLiteral("job-1");
    t.seconds = kEpochs * kEpochSeconds;
    t.keptEpoch = 15;
    for (int e = 1; e <= kEpochs; ++e) {
        net::ClusterEpoch epoch;
        epoch.epoch = e;
        epoch.train_loss = 2.0 / (1 + 0.3 * e);
        epoch.train_accuracy = 0.5 + 0.01 * e;
        epoch.test_loss = 2.2 / (1 + 0.25 * e);
        epoch.test_accuracy = 0.48 + 0.009 * e;
        epoch.seconds = kEpochSeconds;
        epoch.images_per_second = 65;
        epoch.nodes = kNodes;
        t.epochs.push_back(epoch);
    }
    for (double sec = 0; sec < t.seconds; sec += 1.0)
        for (int n = 1; n <= kNodes; ++n) {
            app::MetricRow m;
            m.seconds = sec + 0.1 * n;
            m.node = QStringLiteral("demo-node-%1").arg(n);
            m.cpuPercent = 95 + std::sin(sec / 7 + n) * 5;
            m.memoryUsedBytes = 3.5e9 + 1e8 * std::sin(sec / 30);
            m.processRssBytes = 2.6e8 + 4e7 * n + 1e7 * std::sin(sec / 11);
            m.rxBytesPerSecond = 2.4e6 + 1e6 * std::sin(sec / 5 + n);
            m.txBytesPerSecond = 2.2e6 + 1e6 * std::cos(sec / 5 + n);
            m.phase = QStringLiteral("training");
            m.epoch = 1 + int(sec / kEpochSeconds);
            m.loss = 0.6;
            m.accuracy = 0.73;
            m.imagesPerSecond = 22;
            t.metrics.push_back(m);
        }
    for (double sec = 0.5; sec < t.seconds; sec += 0.5)
        for (int n = 1; n <= kNodes; ++n) {
            app::ProgressRow p;
            p.seconds = sec;
            p.node = QStringLiteral("demo-node-%1").arg(n);
            p.epoch = 1 + int(sec / kEpochSeconds);
            p.step = std::int64_t(sec * 2);
            p.loss = 2.0 / (1 + 0.3 * p.epoch) + 0.3 * std::sin(sec * 3);
            p.accuracy = std::clamp(0.5 + 0.01 * p.epoch + 0.15 * std::cos(sec * 3), 0.0, 1.0);
            p.imagesPerSecond = 20 + 5 * std::sin(sec);
            t.progress.push_back(p);
        }
    net::ClusterEvent lost;
    lost.seconds = 120.4;
    lost.node.name = QStringLiteral("demo-node-3");
    lost.kind = net::ClusterEventKind::Lost;
    lost.message = QStringLiteral("stopped answering");
    net::ClusterEvent back = lost;
    back.seconds = 161.0;
    back.kind = net::ClusterEventKind::Rejoined;
    back.message.clear();
    t.events = {lost, back};

    app::VerifiedRound round;
    round.frames = 16;
    round.first_frame = 30;
    // The widest figures the table shows: an interval up to 100 %.
    round.scores = {score("teacher", 0.48, 0.891), score("motion", 0.696, 0.789),
                    score("student", 0.824, 0.977)};
    round.intervals = {intervals(0.48, 0.891), intervals(0.696, 0.789), intervals(0.824, 0.977)};
    round.resamples = 2000;
    s.evaluation.verified = {round};
    s.evaluation.student_fps = 41.5;
    s.evaluation.teacher_fps = 4.8;
    s.evaluation.motion_fps = 144;

    app::DeploymentRecord d;
    d.started = QDateTime::currentDateTimeUtc();
    d.seconds = 30;
    for (int n = 1; n <= kNodes; ++n) {
        app::DeploymentRecord::Device dev;
        dev.node = QStringLiteral("demo-node-%1").arg(n);
        dev.source = video;
        dev.frames = 600;
        dev.detections = 1400;
        dev.fps = 20.1;
        dev.latencyMsP50 = 31;
        dev.latencyMsP95 = 48;
        dev.cpuPercent = 61;
        dev.rssBytes = std::int64_t(180) << 20;
        d.devices.push_back(dev);
    }
    s.deployment = d;
    return s;
}

/** A Qt Charts text (title, axis title, tick label, legend entry) cut short. */
bool elided(const QString &text)
{
    return text.contains(QStringLiteral("...")) || text.contains(QChar(0x2026));
}

/** Where `text`'s glyphs are, in its own coordinates: a line's ink (two labels meeting at the
 *  plot's corner may share the empty part of their line boxes), a wrapped text's lines. */
QRectF inkBox(const QGraphicsTextItem *text)
{
    const qreal margin = text->document()->documentMargin();
    const QFontMetricsF fm(text->font());
    const QRectF lines = text->boundingRect().adjusted(margin, margin, -margin, -margin);
    if (lines.height() > 1.5 * fm.lineSpacing())
        return lines;
    return fm.tightBoundingRect(text->toPlainText())
        .translated(lines.left(), lines.top() + fm.ascent());
}

/** The text items a chart shows, with their glyphs' rectangles in the view's coordinates. */
std::vector<std::pair<QString, QRectF>> chartTexts(QChartView *view)
{
    std::vector<std::pair<QString, QRectF>> texts;
    for (QGraphicsItem *item : view->scene()->items()) {
        auto *text = dynamic_cast<QGraphicsTextItem *>(item);
        if (!text || !text->isVisible() || text->toPlainText().trimmed().isEmpty())
            continue;
        const QRectF box = text->mapRectToScene(inkBox(text));
        texts.emplace_back(text->toPlainText(), view->mapFromScene(box).boundingRect());
    }
    return texts;
}

/** What is wrong with `view`'s texts: cut short, outside the view, or over one another. */
QStringList chartProblems(QChartView *view)
{
    QStringList problems;
    const QString chart =
        view->chart()->title().isEmpty() ? view->objectName() : view->chart()->title();
    const auto texts = chartTexts(view);
    const QRectF inside = QRectF(view->rect()).adjusted(-1, -1, 1, 1);
    for (std::size_t i = 0; i < texts.size(); ++i) {
        const auto &[text, box] = texts[i];
        if (elided(text))
            problems << QStringLiteral("chart '%1': '%2' elided").arg(chart, text);
        else if (!inside.contains(box))
            problems << QStringLiteral("chart '%1': '%2' outside the chart").arg(chart, text);
        for (std::size_t j = i + 1; j < texts.size(); ++j)
            if (box.adjusted(1, 1, -1, -1).intersects(texts[j].second.adjusted(1, 1, -1, -1)))
                problems << QStringLiteral("chart '%1': '%2' over '%3'")
                                .arg(chart, text, texts[j].first);
    }
    return problems;
}

/** Headers whose text does not fit their section (what Qt would draw with an ellipsis). */
QStringList headerProblems(QHeaderView *header)
{
    QStringList problems;
    const QFontMetrics fm(header->font());
    const int margin = header->style()->pixelMetric(QStyle::PM_HeaderMargin, nullptr, header);
    for (int i = 0; i < header->count(); ++i) {
        if (header->isSectionHidden(i) || header->sectionSize(i) <= 0)
            continue;
        const QString text =
            header->model()->headerData(i, header->orientation(), Qt::DisplayRole).toString();
        const int room = header->sectionSize(i) - 2 * margin;
        for (const QString &line : text.split(QLatin1Char('\n')))
            if (fm.elidedText(line, Qt::ElideRight, room) != line)
                problems << QStringLiteral("header '%1' elided").arg(text);
        // A column the table's edge cuts through (its table scrolls sideways): what shows of
        // its header is cut short as well.
        const int left = header->sectionViewportPosition(i);
        const int shown = header->viewport()->width() - left;
        if (header->orientation() == Qt::Horizontal && left >= 0 && shown > 0 &&
            shown < header->sectionSize(i) && fm.horizontalAdvance(text) + 2 * margin > shown)
            problems << QStringLiteral("header '%1' cut by the table's edge").arg(text);
    }
    return problems;
}

/** Each device's lines have the colour of its CPU line in every chart. */
void sameColours(const ui::TrainingCharts &charts)
{
    for (const ui::DeviceChart *c : charts.all())
        for (QAbstractSeries *s : c->chart()->series()) {
            auto *line = qobject_cast<QLineSeries *>(s);
            const QString node = line->name().section(QLatin1Char(' '), 0, 0);
            if (!node.startsWith(QStringLiteral("demo-node-")))
                continue;
            const QLineSeries *cpuLine = nullptr;
            for (QAbstractSeries *o : charts.cpu->chart()->series())
                if (o->name() == line->name())
                    cpuLine = qobject_cast<QLineSeries *>(o);
            QVERIFY2(cpuLine, qPrintable(line->name()));
            QCOMPARE(line->pen().color(), cpuLine->pen().color());
        }
    // and two devices never share one
    std::map<QRgb, QString> owners;
    for (QAbstractSeries *s : charts.cpu->chart()->series()) {
        const QString node = s->name().section(QLatin1Char(' '), 0, 0);
        const QRgb colour = qobject_cast<QLineSeries *>(s)->pen().color().rgb();
        const auto [it, added] = owners.emplace(colour, node);
        QVERIFY2(added || it->second == node, qPrintable(it->second + QStringLiteral(", ") + node));
    }
}

/** The line of `chart` named `name`, or none. */
const QLineSeries *lineNamed(const ui::DeviceChart *chart, const QString &name)
{
    for (QAbstractSeries *s : chart->chart()->series())
        if (s->name() == name)
            return qobject_cast<QLineSeries *>(s);
    return nullptr;
}

} // namespace

class TestLayout : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void axesFollowTheData();
    void everyLineFollowsTheUnit();
    void longRunsStayLight();
    void coloursLiveAsReopened();
    void groupEventsTakeNoColour();
    void planLineFollowsTheSession();
    void checksSeeCutText();
    void everyStepReads_data();
    void everyStepReads();
    void trainStepSaysWhatItShows();

private:
    QTemporaryDir m_dir;
    QString m_video;
};

void TestLayout::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_video = m_dir.filePath(QStringLiteral("walk.avi"));
    tests::writeWalkingVideo(m_video);
}

void TestLayout::axesFollowTheData()
{
    // Zeros first (a device idle at the start), then readings in MiB/s: the axis grows to round
    // ticks in the unit that reads (and does not lay out the ticks of the old, tiny range).
    ui::DeviceChart chart(QStringLiteral("Network"), QString());
    chart.setValues(ui::DeviceChart::Values::BytesPerSecond);
    chart.append(QStringLiteral("a"), 0, 0);
    chart.flush();
    for (int s = 1; s <= 400; ++s)
        chart.append(QStringLiteral("a"), s, 37.3 * 1024 * 1024);
    chart.flush();
    const auto *x = qobject_cast<QValueAxis *>(chart.chart()->axes(Qt::Horizontal).first());
    const auto *y = qobject_cast<QValueAxis *>(chart.chart()->axes(Qt::Vertical).first());
    QCOMPARE(y->titleText(), QStringLiteral("MiB/s"));
    QCOMPARE(y->min(), 0.0);
    QCOMPARE(y->max(), 40.0);
    QCOMPARE(y->tickInterval(), 10.0);
    QCOMPARE(x->titleText(), QStringLiteral("minutes"));
    QCOMPARE(x->max(), 8.0); // 6 min 40 s
    QCOMPARE(x->tickInterval(), 2.0);
}

void TestLayout::everyLineFollowsTheUnit()
{
    // Device b drops out before the run passes three minutes, and sends KiB/s while a's grow to
    // MiB/s: its line is in the axes' new units too.
    ui::DeviceChart chart(QStringLiteral("Network"), QString());
    chart.setValues(ui::DeviceChart::Values::BytesPerSecond);
    for (int s = 0; s <= 120; ++s) {
        chart.append(QStringLiteral("a"), s, 20 * 1024);
        chart.append(QStringLiteral("b"), s, 20 * 1024);
    }
    chart.flush();
    for (int s = 121; s <= 600; ++s)
        chart.append(QStringLiteral("a"), s, 20 * 1024 * 1024);
    chart.flush();
    const auto *y = qobject_cast<QValueAxis *>(chart.chart()->axes(Qt::Vertical).first());
    QCOMPARE(y->titleText(), QStringLiteral("MiB/s"));
    const QLineSeries *b = lineNamed(&chart, QStringLiteral("b"));
    QVERIFY(b);
    QCOMPARE(b->at(b->count() - 1), QPointF(2.0, 20.0 / 1024)); // 120 s at 20 KiB/s
    const QLineSeries *a = lineNamed(&chart, QStringLiteral("a"));
    QCOMPARE(a->at(a->count() - 1), QPointF(10.0, 20.0));
}

void TestLayout::longRunsStayLight()
{
    // A reading a second for over five hours: the line keeps a few thousand points, still from
    // the run's start to its last reading.
    ui::DeviceChart chart(QStringLiteral("CPU"), QStringLiteral("%"));
    for (int s = 0; s < 20000; ++s)
        chart.append(QStringLiteral("a"), s, 50);
    chart.flush();
    const QLineSeries *a = lineNamed(&chart, QStringLiteral("a"));
    QVERIFY(a);
    QVERIFY2(a->count() <= 4000, qPrintable(QString::number(a->count())));
    QCOMPARE(a->at(0), QPointF(0, 50));
    QCOMPARE(a->at(a->count() - 1), QPointF(19999.0 / 3600, 50)); // hours
    for (int i = 1; i < a->count(); ++i)
        QVERIFY(a->at(i).x() > a->at(i - 1).x());
}

void TestLayout::coloursLiveAsReopened()
{
    // Three paired devices, the run on two of them: the third device's colour is the same live
    // (colours given at the start, readings after) as in the reopened run and the PDF.
    app::Session session;
    for (const char *name : {"demo-node-1", "demo-node-2", "demo-node-3"}) {
        app::SessionNode n;
        n.name = QString::fromLatin1(name);
        n.paired = true;
        session.nodes.push_back(n);
    }
    session.training.nodes = {QStringLiteral("demo-node-3"), QStringLiteral("demo-node-1")};
    for (int s = 0; s < 10; ++s)
        for (const QString &node : session.training.nodes) {
            app::MetricRow m;
            m.seconds = s;
            m.node = node;
            m.cpuPercent = 40;
            m.processRssBytes = 1e8;
            session.training.metrics.push_back(m);
        }
    QWidget owner;
    ui::TrainingCharts live = ui::TrainingCharts::create(&owner);
    live.orderDevices(session);
    for (const app::MetricRow &m : session.training.metrics)
        live.add(m);
    live.flush();
    ui::TrainingCharts reopened = ui::TrainingCharts::create(&owner);
    reopened.load(session);
    QCOMPARE(ui::TrainingCharts::deviceOrder(session),
             QStringList({QStringLiteral("demo-node-1"), QStringLiteral("demo-node-3")}));
    for (const QString &node : session.training.nodes) {
        const QLineSeries *l = lineNamed(live.cpu, node), *r = lineNamed(reopened.cpu, node);
        QVERIFY(l && r);
        QCOMPARE(l->pen().color(), r->pen().color());
    }
    sameColours(live);
    sameColours(reopened);
}

void TestLayout::groupEventsTakeNoColour()
{
    // A group's event names no device: it takes no place in the palette.
    ui::DeviceChart chart(QStringLiteral("CPU"), QStringLiteral("%")),
        alone(QStringLiteral("CPU"), QString());
    chart.setLost(QString(), false);
    chart.append(QStringLiteral("a"), 0, 1);
    chart.flush();
    alone.append(QStringLiteral("a"), 0, 1);
    alone.flush();
    QCOMPARE(lineNamed(&chart, QStringLiteral("a"))->pen().color(),
             lineNamed(&alone, QStringLiteral("a"))->pen().color());
}

void TestLayout::planLineFollowsTheSession()
{
    const QString planLine = QStringLiteral("plan: peak of a step");
    QWidget owner;
    ui::TrainingCharts charts = ui::TrainingCharts::create(&owner);
    charts.setPlannedMemory(1e9);
    charts.clear(); // a new run of the same session keeps its plan
    charts.flush();
    QVERIFY(lineNamed(charts.memory, planLine));
    app::Session session = trainedSession(m_video);
    charts.load(session); // another session: not that plan's line
    QVERIFY(!lineNamed(charts.memory, planLine));

    // The PDF's memory chart has the line as the window's.
    ui::ReportContent content;
    content.session = &session;
    content.plan = app::PlanView{};
    content.plan->plan.predicted_peak_bytes = std::int64_t(1) << 30;
    const auto report = ui::ReportCharts::make(content);
    const QLineSeries *line = lineNamed(report->training.memory, planLine);
    QVERIFY(line);
    QCOMPARE(line->at(0).y(), 1024.0); // MiB
}

void TestLayout::checksSeeCutText()
{
    // The checks themselves: a chart squeezed as the Train step's were in a grid of three, and a
    // column narrower than its header, are caught.
    ui::DeviceChart chart(QStringLiteral("Network: received (solid), sent (dashed)"),
                          QStringLiteral("% of the device"));
    for (int s = 0; s < 600; ++s)
        chart.append(QStringLiteral("demo-node-1"), s, 50 + s % 7);
    chart.flush();
    chart.setMinimumSize(0, 0);
    chart.resize(200, 120);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    QTRY_VERIFY2(!chartProblems(&chart).isEmpty(), "a squeezed chart reads as fine");
    chart.resize(600, 320);
    QTRY_VERIFY2(chartProblems(&chart).isEmpty(),
                 qPrintable(chartProblems(&chart).join(QLatin1Char('\n'))));

    QTableWidget table(1, 2);
    table.setHorizontalHeaderLabels({QStringLiteral("Detector"), QStringLiteral("Frames/s")});
    table.horizontalHeader()->resizeSection(1, 30);
    QCOMPARE(headerProblems(table.horizontalHeader()),
             QStringList{QStringLiteral("header 'Frames/s' elided")});
    table.horizontalHeader()->resizeSection(1, 120);
    QCOMPARE(headerProblems(table.horizontalHeader()), QStringList());
}

void TestLayout::everyStepReads_data()
{
    QTest::addColumn<QSize>("size");
    QTest::newRow("1366x768") << QSize(1366, 768);
    QTest::newRow("1920x1080") << QSize(1920, 1080);
}

void TestLayout::everyStepReads()
{
    QFETCH(QSize, size);
    app::Workflow workflow;
    QString error;
    app::Session session = trainedSession(m_video);
    session.dir = m_dir.filePath(QStringLiteral("session-%1").arg(size.width()));
    QVERIFY2(session.save(&error) && workflow.openSession(session.dir, &error), qPrintable(error));
    ui::MainWindow window(&workflow);
    window.resize(size);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QTRY_COMPARE(window.size(), size);
    const QString shots = qEnvironmentVariable("EDGETRAIN_SCREENSHOTS");

    QStringList failures;
    for (int step = 0; step < ui::MainWindow::Steps; ++step) {
        window.showStep(ui::MainWindow::Step(step));
        QTest::qWait(300); // layouts, the charts' flushes and the planner's answer
        const QString name = QString::fromLatin1(kStepNames[step]);
        if (!shots.isEmpty())
            window.grab().save(QStringLiteral("%1/%2x%3-%4-%5.png")
                                   .arg(shots)
                                   .arg(size.width())
                                   .arg(size.height())
                                   .arg(step + 1)
                                   .arg(name));
        QStringList problems;
        for (QChartView *view : window.findChildren<QChartView *>())
            if (view->isVisible()) // below the fold too: the page scrolls to it
                problems << chartProblems(view);
        for (QHeaderView *header : window.findChildren<QHeaderView *>())
            if (header->isVisible() && header->orientation() == Qt::Horizontal)
                problems << headerProblems(header);
        problems.removeDuplicates();
        for (const QString &p : problems)
            failures
                << QStringLiteral("%1x%2 %3: %4").arg(size.width()).arg(size.height()).arg(name, p);
    }
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join(QLatin1Char('\n'))));
}

void TestLayout::trainStepSaysWhatItShows()
{
    app::Workflow workflow;
    QString error;
    app::Session session = trainedSession(m_video);
    session.dir = m_dir.filePath(QStringLiteral("session-train"));
    QVERIFY2(session.save(&error) && workflow.openSession(session.dir, &error), qPrintable(error));
    ui::MainWindow window(&workflow);
    window.resize(1366, 768);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.showStep(ui::MainWindow::Train);
    const ui::TrainPage *page = window.trainPage();
    const ui::TrainingCharts &charts = page->charts();

    // No device reports power: the chart says why and names the architecture, the columns go.
    QCOMPARE(charts.power->pointCount(), 0);
    QVERIFY2(charts.power->note().contains(QStringLiteral("x86_64")),
             qPrintable(charts.power->note()));
    QVERIFY(page->devicesTable()->isColumnHidden(8));
    // Memory: the training process's, named so; loss and accuracy a point per device and epoch.
    QVERIFY2(charts.memory->title().contains(QStringLiteral("training process")),
             qPrintable(charts.memory->title()));
    QCOMPARE(charts.loss->pointCount(), kNodes * kEpochs);
    QCOMPARE(charts.accuracy->pointCount(), kNodes * kEpochs);
    // The time axis of a run of minutes counts minutes.
    const auto *x = qobject_cast<QValueAxis *>(charts.cpu->chart()->axes(Qt::Horizontal).first());
    QCOMPARE(x->titleText(), QStringLiteral("minutes"));
    sameColours(charts);
    QVERIFY(!QTest::currentTestFailed());
    // The events in words: the epochs, the node that dropped out and came back, the end.
    QStringList events;
    for (int i = 0; i < page->eventsList()->count(); ++i)
        events << page->eventsList()->item(i)->text();
    QCOMPARE(events.size(), kEpochs + 3);
    QCOMPARE(events.last(),
             QStringLiteral("Training finished after 25 epochs; kept the weights of epoch 15"));
    QVERIFY2(events.filter(QStringLiteral("demo-node-3 dropped out")).size() == 1,
             qPrintable(events.join(QLatin1Char('\n'))));
    QVERIFY2(events.first().startsWith(QStringLiteral("Epoch 1 of 40")),
             qPrintable(events.first()));

    // A session recorded before the process's memory was: the whole device's, named so, with
    // the devices' colours as in the other charts.
    app::Session older = trainedSession(m_video);
    for (app::MetricRow &m : older.training.metrics)
        m.processRssBytes = -1;
    QWidget owner;
    ui::TrainingCharts old = ui::TrainingCharts::create(&owner);
    old.load(older);
    QVERIFY2(old.memory->title().contains(QStringLiteral("whole device")),
             qPrintable(old.memory->title()));
    QCOMPARE(old.memory->pointCount(), old.cpu->pointCount());
    sameColours(old);
    QVERIFY(!QTest::currentTestFailed());
}

int main(int argc, char **argv)
{
    QStandardPaths::setTestModeEnabled(true); // before anything reads a setting
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("EdgeTrain"));
    QApplication::setApplicationName(QStringLiteral("tst_layout"));
    TestLayout test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "tst_layout.moc"

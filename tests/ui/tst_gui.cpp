// The desktop app through its real window: real edgetrain-node processes on 127.0.0.1, real
// OpenCV on vtest.avi, real training across the nodes, a real PDF. QT_QPA_PLATFORM=offscreen.
// With EDGETRAIN_SCREENSHOTS=DIR set, every step is also saved as DIR/<n>-<step>.png.
#include "core/memoryaccountant.h"
#include "nodeprocess.h"
#include "ui/capturepage.h"
#include "ui/datasetpage.h"
#include "ui/mainwindow.h"
#include "ui/nodespage.h"
#include "ui/planpage.h"
#include "ui/reportpage.h"
#include "ui/reporttext.h"
#include "ui/trainpage.h"
#include "ui/videoview.h"

#include <QAbstractSeries>
#include <QApplication>
#include <QChart>
#include <QComboBox>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMessageBox>
#include <QProcess>
#include <QPushButton>
#include <QScopeGuard>
#include <QSet>
#include <QSignalSpy>
#include <QSlider>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <csignal>

using namespace edgetrain;

namespace {

const QString kVideo = QStringLiteral("/usr/share/doc/opencv-doc/examples/data/vtest.avi");

/**
 * The application, timing every event it dispatches on the GUI thread: a slot, a timer, a
 * repaint, a queued call. What the user feels as a freeze is one of these taking long.
 */
class TimedApplication : public QApplication
{
public:
    using QApplication::QApplication;
    bool notify(QObject *receiver, QEvent *event) override
    {
        if (QThread::currentThread() != thread()) // workers' own event loops: not the GUI
            return QApplication::notify(receiver, event);
        if (m_depth > 0 || !measuring) { // nested dispatch is part of the outer one
            ++m_depth;
            const bool r = QApplication::notify(receiver, event);
            --m_depth;
            return r;
        }
        QElapsedTimer t;
        t.start();
        const int type = int(event->type());
        const QByteArray name = receiver->metaObject()->className();
        ++m_depth;
        const bool r = QApplication::notify(receiver, event);
        --m_depth;
        const double ms = double(t.nsecsElapsed()) / 1e6;
        if (ms > longest) {
            longest = ms;
            what = name + " event " + QByteArray::number(type);
        }
        return r;
    }
    static inline bool measuring = false;
    static inline double longest = 0;
    static inline QByteArray what;

private:
    int m_depth = 0;
};

/** The longest event on the GUI thread, and how late a 10 ms timer fired (that adds the time
 *  the operating system gave other threads and processes). */
class Watchdog : public QObject
{
public:
    Watchdog()
    {
        m_timer.setInterval(10);
        m_timer.setTimerType(Qt::PreciseTimer);
        connect(&m_timer, &QTimer::timeout, this, [this] {
            const qint64 now = m_clock.nsecsElapsed();
            if (m_last > 0)
                m_late = std::max(m_late, double(now - m_last) / 1e6 - 10.0);
            m_last = now;
        });
    }
    void start()
    {
        m_late = 0;
        m_last = 0;
        m_clock.start();
        m_timer.start();
        TimedApplication::longest = 0;
        TimedApplication::what.clear();
        TimedApplication::measuring = true;
    }
    void stop(const char *during)
    {
        m_timer.stop();
        TimedApplication::measuring = false;
        qInfo(
            "%s: the longest event on the GUI thread took %.1f ms (%s); a 10 ms timer came at most "
            "%.1f ms late",
            during, TimedApplication::longest, TimedApplication::what.constData(), m_late);
    }
    /** The test's own blocking calls (a node process killed or started and waited for) hold
     *  the GUI thread without it being the window's doing: not measured. */
    template <typename F> auto unmeasured(F &&blocking)
    {
        m_timer.stop();
        TimedApplication::measuring = false;
        auto result = blocking();
        m_last = 0;
        m_timer.start();
        TimedApplication::measuring = true;
        return result;
    }
    double busy() const { return TimedApplication::longest; } // ms
    double late() const { return m_late; }                    // ms

private:
    QTimer m_timer;
    QElapsedTimer m_clock;
    qint64 m_last = 0;
    double m_late = 0;
};

bool waitTask(app::Workflow &w, app::Task task, int timeoutMs, QString *message)
{
    QSignalSpy done(&w, &app::Workflow::taskFinished);
    QElapsedTimer t;
    t.start();
    while (t.elapsed() < timeoutMs) {
        for (const auto &args : done)
            if (args.at(0).value<app::Task>() == task) {
                *message = args.at(2).toString();
                return args.at(1).toBool();
            }
        done.wait(200);
    }
    *message = QStringLiteral("timed out");
    return false;
}

} // namespace

class TstGui : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void discoveryFillsNodesTable();
    void sliderChangesScheduleAndMemory();
    void labelReviewAndDataset();
    void trainingFillsChartsAndPdf();
    void plannerChoosesTheDevices();
    void trainingOutlastsFaults();
    void closingMidTrainingStopsTheJob();
    void rehearseWithEmulatedDevices();
    void cleanupTestCase();

private:
    void screenshot(const QString &name);
    // Each slot can run alone (e.g. `tst_gui trainingFillsChartsAndPdf`): what it needs from an
    // earlier step is made here when that step has not run.
    /** The key file set and both nodes probed by their discovery ports. */
    void probeNodes();
    void requirePairedNodes();
    void requireDataset();
    /** Paired nodes, a crop dataset, and the crop student planned for `epochs` (batch 64). */
    bool prepareStudentRun(int epochs);
    bool nodesIdle(int timeoutMs);

    QTemporaryDir m_dir;
    QString m_keyFile;
    QByteArray m_key = "gui test cluster key 0123456789";
    std::vector<std::unique_ptr<NodeProcess>> m_nodes;
    std::unique_ptr<app::Workflow> m_workflow;
    std::unique_ptr<ui::MainWindow> m_window;
    QString m_session;
    int m_shot = 0;
};

void TstGui::initTestCase()
{
    // scripts/install-deps.sh installs it: a missing video is a broken install, not a skip.
    QVERIFY2(QFileInfo::exists(kVideo), "vtest.avi is missing (Debian package opencv-doc)");
    QVERIFY(m_dir.isValid());
    m_keyFile = m_dir.path() + QStringLiteral("/cluster.key");
    QFile f(m_keyFile);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(m_key + "\n");
    f.close();
    QFile::setPermissions(m_keyFile, QFile::ReadOwner | QFile::WriteOwner);
    for (int i = 1; i <= 2; ++i) {
        // The second says it is a Raspberry Pi 4: it reports the profile's facts and power.
        QStringList extra{QStringLiteral("--threads"), QStringLiteral("1")};
        if (i == 2)
            extra << QStringLiteral("--device-profile") << QStringLiteral("pi4")
                  << QStringLiteral("--emulated");
        m_nodes.push_back(
            std::make_unique<NodeProcess>(QStringLiteral("gui-node-%1").arg(i), m_keyFile, extra));
        QVERIFY2(m_nodes.back()->waitReady(), qPrintable(m_nodes.back()->log()));
    }
    m_session = m_dir.path() + QStringLiteral("/session");
    m_workflow = std::make_unique<app::Workflow>();
    QString error;
    QVERIFY2(m_workflow->newSession(m_session, &error), qPrintable(error));
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->resize(1366, 768);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
}

/** The column whose header is `header` (-1 if none): cells are found by what they show. */
int column(const QTableWidget *table, const QString &header)
{
    for (int c = 0; c < table->columnCount(); ++c)
        if (table->horizontalHeaderItem(c) && table->horizontalHeaderItem(c)->text() == header)
            return c;
    return -1;
}

/** The row whose `Name` cell is `name` (-1 if none). */
int rowNamed(const QTableWidget *table, const QString &name)
{
    const int c = column(table, QStringLiteral("Name"));
    for (int r = 0; r < table->rowCount(); ++r)
        if (c >= 0 && table->item(r, c) && table->item(r, c)->text() == name)
            return r;
    return -1;
}

void TstGui::probeNodes()
{
    QString error;
    QVERIFY2(m_workflow->nodes().setKeyFile(m_keyFile, &error), qPrintable(error));
    for (const auto &n : m_nodes)
        QVERIFY2(m_workflow->nodes().addProbe(QStringLiteral("127.0.0.1:%1").arg(n->discoveryPort),
                                              &error),
                 qPrintable(error));
}

void TstGui::requirePairedNodes()
{
    if (m_workflow->nodes().pairedNodes().size() == 2)
        return;
    probeNodes();
    if (QTest::currentTestFailed())
        return;
    QTRY_COMPARE_WITH_TIMEOUT(int(m_workflow->nodes().all().size()), 2, 5000);
    m_workflow->nodes().pairAll();
    QTRY_COMPARE_WITH_TIMEOUT(m_workflow->nodes().pairedNodes().size(), 2, 5000);
}

void TstGui::requireDataset()
{
    if (m_workflow->labels() && m_workflow->session().hasDataset())
        return;
    app::CaptureSettings capture = m_workflow->session().capture;
    capture.source = kVideo;
    capture.every = 3;
    capture.maxFrames = 240;
    app::DatasetSettings dataset = m_workflow->session().dataset;
    dataset.kind = QStringLiteral("crops");
    QVERIFY(m_workflow->setCapture(capture));
    QVERIFY(m_workflow->setDatasetSettings(dataset));
    QString message;
    m_workflow->startLabelling();
    QVERIFY2(waitTask(*m_workflow, app::Task::Labelling, 120000, &message), qPrintable(message));
    m_workflow->startDataset();
    QVERIFY2(waitTask(*m_workflow, app::Task::Dataset, 120000, &message), qPrintable(message));
}

bool TstGui::prepareStudentRun(int epochs)
{
    requirePairedNodes();
    if (QTest::currentTestFailed())
        return false;
    requireDataset();
    if (QTest::currentTestFailed())
        return false;
    app::PlanSettings plan = m_workflow->session().plan;
    plan.model = QStringLiteral("student");
    plan.epochs = epochs;
    plan.batch = 64;
    return m_workflow->setPlanSettings(plan);
}

void TstGui::screenshot(const QString &name)
{
    const QString dir = qEnvironmentVariable("EDGETRAIN_SCREENSHOTS");
    if (dir.isEmpty())
        return;
    QDir().mkpath(dir);
    QTest::qWait(300); // let charts and lists paint
    m_window->grab().save(QStringLiteral("%1/%2-%3.png").arg(dir).arg(++m_shot).arg(name));
}

void TstGui::discoveryFillsNodesTable()
{
    m_window->showStep(ui::MainWindow::Nodes);
    probeNodes();
    if (QTest::currentTestFailed())
        return;
    QString error;
    QTableWidget *table = m_window->nodesPage()->table();
    // Discovery finds both nodes: their names appear in the table with their real facts.
    QTRY_COMPARE_WITH_TIMEOUT(table->rowCount(), 2, 5000);
    QStringList names;
    for (int r = 0; r < table->rowCount(); ++r)
        names.append(table->item(r, 0)->text());
    names.sort();
    QCOMPARE(names, (QStringList{QStringLiteral("gui-node-1"), QStringLiteral("gui-node-2")}));
    const int cores = column(table, QStringLiteral("Cores")),
              state = column(table, QStringLiteral("State")),
              address = column(table, QStringLiteral("Address"));
    QVERIFY(cores >= 0 && state >= 0 && address >= 0);
    const int first = rowNamed(table, QStringLiteral("gui-node-1"));
    QVERIFY(first >= 0);
    QCOMPARE(table->item(first, cores)->text().toInt(), QThread::idealThreadCount());
    const int second = rowNamed(table, QStringLiteral("gui-node-2"));
    QVERIFY(second >= 0);
    QCOMPARE(table->item(second, cores)->text().toInt(), 4); // the Pi 4's
    QCOMPARE(table->item(second, column(table, QStringLiteral("Arch")))->text(),
             QStringLiteral("aarch64"));
    QVERIFY(table->item(first, state)->text().startsWith(QLatin1String("locked")));
    // Pairing proves the key; the state column says so and the status bar counts them.
    m_workflow->nodes().pairAll();
    QTRY_COMPARE_WITH_TIMEOUT(m_workflow->nodes().pairedNodes().size(), 2, 5000);
    QTRY_VERIFY_WITH_TIMEOUT(
        table->item(rowNamed(table, QStringLiteral("gui-node-1")), state)->text() ==
            QLatin1String("paired"),
        3000);
    QTRY_VERIFY(m_window->clusterLabel()->text().startsWith(QLatin1String("2 paired")));
    // A node with another cluster's key stays locked and says why; Forget drops it.
    {
        const QString otherKey = m_dir.path() + QStringLiteral("/other.key");
        QFile k(otherKey);
        QVERIFY(k.open(QIODevice::WriteOnly));
        k.write("another cluster's key 987654321\n");
        k.close();
        QFile::setPermissions(otherKey, QFile::ReadOwner | QFile::WriteOwner);
        NodeProcess stranger(QStringLiteral("stranger"), otherKey);
        QVERIFY2(stranger.waitReady(), qPrintable(stranger.log()));
        QVERIFY(
            m_workflow->nodes().addNode(QStringLiteral("127.0.0.1:%1").arg(stranger.port), &error));
        const QString key = QStringLiteral("127.0.0.1:%1").arg(stranger.port);
        QTRY_VERIFY_WITH_TIMEOUT(m_workflow->nodes().all().count(key) &&
                                     m_workflow->nodes().all().at(key).state ==
                                         app::NodeView::State::Locked,
                                 5000);
        QTRY_COMPARE(table->rowCount(), 3);
        bool shown = false;
        for (int r = 0; r < table->rowCount(); ++r)
            shown |=
                table->item(r, address)->text() == key &&
                table->item(r, state)->text().startsWith(QLatin1String("locked: key refused")) &&
                table->item(r, state)->text().contains(QLatin1String("cluster key"));
        QVERIFY(shown);
        QCOMPARE(m_workflow->nodes().pairedNodes().size(), 2);
        m_workflow->nodes().forget(key);
        QCOMPARE(table->rowCount(), 2);
    }
    // A node typed in with a wrong address is reported, not a crash.
    QVERIFY(!m_workflow->nodes().addNode(QStringLiteral("not-an-address"), &error));
    QVERIFY(error.contains(QLatin1String("host:port")));
    // A probe by name is looked up in the background (the GUI thread does not wait for DNS); a
    // name that does not resolve is said in the status bar.
    QSignalSpy said(&m_workflow->nodes(), &app::NodeRegistry::message);
    QVERIFY2(m_workflow->nodes().addProbe(QStringLiteral("no-such-node.invalid:45454"), &error),
             qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(
        std::any_of(said.begin(), said.end(),
                    [](const QList<QVariant> &m) {
                        return m.at(0).toString().contains(QLatin1String("no-such-node.invalid")) &&
                               m.at(0).toString().contains(QLatin1String("resolve"));
                    }),
        30000);
    screenshot(QStringLiteral("nodes"));
}

void TstGui::sliderChangesScheduleAndMemory()
{
    requirePairedNodes();
    // ResNet-20 trades memory for recompute (the small student's floor is its store-all peak).
    app::PlanSettings settings = m_workflow->session().plan;
    const app::PlanSettings before = settings;
    settings.model = QStringLiteral("resnet20");
    QVERIFY(m_workflow->setPlanSettings(settings));
    m_window->showStep(ui::MainWindow::Plan);
    ui::PlanPage *plan = m_window->planPage();
    QSlider *slider = plan->slider();
    // ResNet-20's plan has come (the student's has a single point on the curve).
    QTRY_VERIFY_WITH_TIMEOUT(plan->lastPlan().has_value() && plan->lastPlan()->sweep.size() > 3,
                             20000);
    // At the top of the slider everything fits: store-all. (Moving it sets a budget.)
    slider->setValue(slider->maximum() - 1);
    slider->setValue(slider->maximum());
    QTRY_VERIFY_WITH_TIMEOUT(plan->lastPlan()->schedule == QLatin1String("store-all") &&
                                 plan->lastPlan()->request.budgetBytes ==
                                     std::int64_t(slider->value()) * 16 * 1024,
                             20000);
    const std::int64_t storeAll = plan->lastPlan()->plan.predicted_peak_bytes;
    const QString topText = plan->memoryTable()->item(6, 0)->text();
    // Half-way down: a checkpointing schedule, less memory, some recompute.
    slider->setValue((slider->minimum() + slider->maximum()) / 2);
    QTRY_VERIFY_WITH_TIMEOUT(
        plan->lastPlan()->request.budgetBytes == std::int64_t(slider->value()) * 16 * 1024, 10000);
    const app::PlanView mid = *plan->lastPlan();
    QVERIFY2(mid.plan.fits, qPrintable(plan->scheduleLabel()->text()));
    QVERIFY(mid.schedule != QLatin1String("store-all"));
    QVERIFY(mid.plan.predicted_peak_bytes < storeAll);
    QVERIFY(mid.plan.predicted_recompute_factor > 1.0);
    QVERIFY(plan->scheduleLabel()->text().contains(mid.schedule));
    QVERIFY(plan->memoryTable()->item(6, 0)->text() != topText);
    // At the bottom nothing fits: the warning says what would.
    slider->setValue(slider->minimum());
    QTRY_VERIFY_WITH_TIMEOUT(
        plan->lastPlan()->request.budgetBytes == std::int64_t(slider->value()) * 16 * 1024, 10000);
    QVERIFY(!plan->lastPlan()->plan.fits);
    slider->setValue((slider->minimum() + 2 * slider->maximum()) / 3);
    screenshot(QStringLiteral("plan"));
    // One device's own budget: kept for that device only, the others keep the shared one.
    auto *device = plan->findChild<QComboBox *>(QStringLiteral("budgetDevice"));
    QVERIFY(device);
    const std::int64_t shared = m_workflow->session().plan.budgetAllBytes;
    device->setCurrentText(QStringLiteral("gui-node-1"));
    slider->setValue(slider->maximum() - 2);
    QTRY_COMPARE(m_workflow->session().plan.budgetBytesFor(QStringLiteral("gui-node-1")),
                 std::int64_t(slider->maximum() - 2) * 16 * 1024);
    QCOMPARE(m_workflow->session().plan.budgetBytesFor(QStringLiteral("gui-node-2")), shared);
    // A setting the session could not be reopened with is refused, and nothing changes.
    settings = m_workflow->session().plan;
    settings.batch = 0;
    QString refused;
    QVERIFY(!m_workflow->setPlanSettings(settings, &refused));
    QVERIFY2(refused.contains(QLatin1String("field \"plan.batch\"")), qPrintable(refused));
    QVERIFY(m_workflow->session().plan.batch > 0);
    // Back to the student for the runs below, with no budget.
    settings = before;
    settings.model = QStringLiteral("student");
    settings.budgetAllBytes = -1;
    settings.deviceBudgetBytes.clear();
    QVERIFY(m_workflow->setPlanSettings(settings));
    QCOMPARE(plan->modelBox()->currentText(), QStringLiteral("student")); // the page shows it
}

void TstGui::labelReviewAndDataset()
{
    m_window->showStep(ui::MainWindow::Capture);
    // A source that is not there: the view says so (and which file) instead of staying blank.
    app::CaptureSettings capture = m_workflow->session().capture;
    capture.source = m_dir.path() + QStringLiteral("/no-such-video.avi");
    QVERIFY(m_workflow->setCapture(capture));
    QTRY_VERIFY_WITH_TIMEOUT(
        m_window->capturePage()->view()->problem().contains(QLatin1String("no-such-video.avi")),
        5000);
    capture.source = kVideo;
    capture.every = 3;
    capture.maxFrames = 240;
    QVERIFY(m_workflow->setCapture(capture));
    app::DatasetSettings dataset = m_workflow->session().dataset;
    dataset.kind = QStringLiteral("crops"); // this run trains the crop student (the demo: frames)
    QVERIFY(m_workflow->setDatasetSettings(dataset));
    Watchdog watchdog;
    watchdog.start();
    QTest::mouseClick(m_window->capturePage()->labelButton(), Qt::LeftButton);
    QString message;
    QVERIFY2(waitTask(*m_workflow, app::Task::Labelling, 120000, &message), qPrintable(message));
    watchdog.stop("labelling");
    QVERIFY2(watchdog.busy() < 50.0,
             qPrintable(QStringLiteral("GUI thread busy for %1 ms").arg(watchdog.busy())));
    QVERIFY2(watchdog.late() < 100.0,
             qPrintable(QStringLiteral("a timer came %1 ms late").arg(watchdog.late())));
    const auto labels = m_workflow->labels();
    QVERIFY(labels && labels->stats.tracks > 3);
    // Review: reject one track; the change is in labels.json at once.
    const int id = labels->tracks.front().id;
    m_workflow->setTrackAccepted(id, false);
    QCOMPARE(m_workflow->labels()->tracks.front().state, vision::Track::State::Rejected);
    QTRY_VERIFY_WITH_TIMEOUT(
        vision::LabelResult::load(m_session.toStdString()).tracks.front().state ==
            vision::Track::State::Rejected,
        3000);
    m_workflow->setTrackAccepted(id, true);
    m_window->capturePage()->timeline()->trackClicked(labels->tracks[1].id,
                                                      labels->tracks[1].boxes.front().frame);
    QTRY_VERIFY_WITH_TIMEOUT(
        m_window->capturePage()->view()->frame() == labels->tracks[1].boxes.front().frame, 5000);
    screenshot(QStringLiteral("capture"));

    m_window->showStep(ui::MainWindow::Dataset);
    m_workflow->startDataset();
    QVERIFY2(waitTask(*m_workflow, app::Task::Dataset, 120000, &message), qPrintable(message));
    QVERIFY(m_workflow->session().datasetStats->positives[0] > 0);
    QTRY_VERIFY_WITH_TIMEOUT(m_window->datasetPage()->gallery()->count() > 0, 5000);
    QCOMPARE(m_window->datasetPage()->counts()->item(0, 1)->text().toInt(),
             m_workflow->session().datasetStats->positives[0]);
    screenshot(QStringLiteral("dataset"));
}

void TstGui::trainingFillsChartsAndPdf()
{
    QVERIFY(prepareStudentRun(3));
    QVERIFY(m_workflow->setEvaluationFrames(6));
    const app::Session &s = m_workflow->session();
    m_window->showStep(ui::MainWindow::Train);
    ui::TrainPage *train = m_window->trainPage();
    Watchdog watchdog;
    watchdog.start();
    QTest::mouseClick(train->startButton(), Qt::LeftButton);
    QString message;
    QVERIFY2(waitTask(*m_workflow, app::Task::Training, 240000, &message), qPrintable(message));
    QVERIFY2(waitTask(*m_workflow, app::Task::Evaluation, 240000, &message), qPrintable(message));
    watchdog.stop("training and evaluation");
    QVERIFY2(watchdog.busy() < 50.0,
             qPrintable(QStringLiteral("GUI thread busy for %1 ms").arg(watchdog.busy())));
    QVERIFY2(watchdog.late() < 100.0,
             qPrintable(QStringLiteral("a timer came %1 ms late").arg(watchdog.late())));
    QCOMPARE(int(s.training.epochs.size()), 3);
    QCOMPARE(s.training.state, app::TrainingRecord::State::Finished);
    // Every chart has a line per device with points; the training curves a point per device and
    // epoch at least, however fast the run (every epoch's end is reported). The charts draw what
    // came in at their next flush.
    for (ui::DeviceChart *c : train->charts().all())
        if (c != train->charts().power) // one device reports power: checked below
            QTRY_VERIFY2_WITH_TIMEOUT(c->pointCount() >= 2, qPrintable(c->title()), 5000);
    for (ui::DeviceChart *c :
         {train->charts().loss, train->charts().accuracy, train->charts().speed})
        QTRY_VERIFY2_WITH_TIMEOUT(
            c->pointCount() >= 2 * 3,
            qPrintable(QStringLiteral("%1: %2 points").arg(c->title()).arg(c->pointCount())), 5000);
    QSet<QString> reporting;
    for (const auto &p : s.training.progress)
        reporting.insert(p.node);
    QCOMPARE(reporting.size(), 2);
    QVERIFY(train->charts().cpu->chart()->series().size() == 2);
    // Power: a line for the device that reports it (the Pi 4's estimate), none for the other.
    QTRY_VERIFY_WITH_TIMEOUT(train->charts().power->pointCount() >= 1, 5000);
    QCOMPARE(int(train->charts().power->chart()->series().size()), 1);
    QCOMPARE(train->charts().power->chart()->series().first()->name(),
             QStringLiteral("gui-node-2"));
    screenshot(QStringLiteral("train"));

    m_window->showStep(ui::MainWindow::Report);
    QVERIFY(s.evaluation.done);
    // The gallery renders off the GUI thread; the page fills it when it is done.
    QTRY_VERIFY_WITH_TIMEOUT(!m_window->reportPage()->galleryLoading(), 20000);
    screenshot(QStringLiteral("report"));
    const QString out = m_dir.path() + QStringLiteral("/report");
    QStringList written;
    QString error;
    QElapsedTimer exportClock;
    exportClock.start();
    QVERIFY2(m_window->reportPage()->exportTo(out, &written, &error), qPrintable(error));
    qInfo("export: %lld files in %lld ms", qint64(written.size()), exportClock.elapsed());
    if (const QString shots = qEnvironmentVariable("EDGETRAIN_SCREENSHOTS"); !shots.isEmpty())
        QFile::copy(out + QStringLiteral("/report.pdf"), shots + QStringLiteral("/report.pdf"));
    for (const char *f :
         {"report.pdf", "charts/cpu.png", "charts/cpu.svg", "charts/loss.svg", "metrics.csv",
          "progress.csv", "epochs.csv", "evaluation.csv", "session.json", "student.safetensors"})
        QVERIFY2(QFileInfo(out + QLatin1Char('/') + QLatin1String(f)).size() > 0, f);
    QProcess pdfinfo;
    pdfinfo.start(QStringLiteral("pdfinfo"), {out + QStringLiteral("/report.pdf")});
    // scripts/install-deps.sh installs poppler-utils: pdfinfo missing is a broken install.
    QVERIFY2(pdfinfo.waitForFinished(10000) && pdfinfo.exitStatus() == QProcess::NormalExit,
             "pdfinfo (poppler-utils) did not run");
    const QString info = QString::fromUtf8(pdfinfo.readAllStandardOutput());
    QVERIFY2(pdfinfo.exitCode() == 0,
             qPrintable(QString::fromUtf8(pdfinfo.readAllStandardError())));
    QVERIFY2(info.contains(QRegularExpression(
                 QStringLiteral("Pages:\\s+%1\\n").arg(ui::ReportWriter::kPages))),
             qPrintable(info));
    // The CSV holds every device reading of the run (one a second per device, so how many
    // depends on how long the run took): a header and one line per reading, from both devices.
    QFile csv(out + QStringLiteral("/metrics.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = csv.readAll().trimmed().split('\n');
    const auto &readings = m_workflow->session().training.metrics;
    QCOMPARE(qsizetype(lines.size()), qsizetype(readings.size()) + 1);
    QSet<QString> devices;
    for (const auto &r : readings)
        devices.insert(r.node);
    QCOMPARE(devices.size(), 2);
}

bool TstGui::nodesIdle(int timeoutMs)
{
    // Ask each node directly: its metrics carry the job's status.
    for (const auto &n : m_nodes) {
        if (n->process.state() == QProcess::NotRunning)
            continue; // killed on purpose
        net::ControlClient client(QStringLiteral("127.0.0.1"), n->port, m_key);
        QSignalSpy ready(&client, &net::ControlClient::ready);
        client.connectToNode();
        if (!ready.wait(5000))
            return false;
        QSignalSpy metrics(&client, &net::ControlClient::metrics);
        client.subscribeMetrics();
        QElapsedTimer t;
        t.start();
        bool idle = false;
        while (!idle && t.elapsed() < timeoutMs && metrics.wait(1500))
            idle = !metrics.last()
                        .at(0)
                        .value<net::SystemSample>()
                        .training.value_or(net::TrainingStatus())
                        .active;
        if (!idle)
            return false;
    }
    return true;
}

void TstGui::plannerChoosesTheDevices()
{
    // Four epochs (~2 s): the nodes' once-a-second power readings must fall inside the training
    // for its energy to be measured.
    QVERIFY(prepareStudentRun(4));
    // "the cluster using the least energy", chosen on the Plan page
    m_window->showStep(ui::MainWindow::Plan);
    QComboBox *objective = m_window->planPage()->objectiveBox();
    // Every paired device again for the tests below, also when this one fails.
    const auto allDevices = qScopeGuard([&] {
        objective->setCurrentIndex(0);
        QVERIFY(m_workflow->session().plan.clusterObjective.isEmpty());
    });
    QPushButton *compare = m_window->planPage()->compareButton();
    QVERIFY(!compare->isEnabled()); // "all of them": nothing to compare by
    objective->setCurrentIndex(objective->findData(QStringLiteral("energy")));
    QCOMPARE(m_workflow->session().plan.clusterObjective, QStringLiteral("energy"));
    // First only compare: the planner ranks the clusters from the profiles, nothing trains and
    // the session's training record stays as it was.
    QVERIFY(compare->isEnabled());
    const app::TrainingRecord::State before = m_workflow->session().training.state;
    const std::size_t epochsBefore = m_workflow->session().training.epochs.size();
    QTest::mouseClick(compare, Qt::LeftButton);
    QVERIFY(!compare->isEnabled()); // while it runs
    QString compared;
    QVERIFY2(waitTask(*m_workflow, app::Task::ClusterPlan, 120000, &compared),
             qPrintable(compared));
    QVERIFY2(compared.contains(QLatin1String("the best is gui-node-2")) &&
                 compared.contains(QLatin1String("nothing trained")),
             qPrintable(compared));
    QVERIFY(compare->isEnabled());
    QVERIFY(m_workflow->clusterPreview().has_value());
    QCOMPARE(m_workflow->session().training.state, before);
    QCOMPARE(m_workflow->session().training.epochs.size(), epochsBefore);
    {
        QTableWidget *table = m_window->planPage()->candidateTable();
        QCOMPARE(table->rowCount(), 3);
        QCOMPARE(table->item(0, 1)->text(), QStringLiteral("gui-node-2"));
        QCOMPARE(table->item(0, 7)->text(), QStringLiteral("best"));
        const QString summary = m_window->planPage()->candidateSummary()->text();
        QVERIFY2(summary.contains(QLatin1String("nothing trained")), qPrintable(summary));
        screenshot(QStringLiteral("plan-compared"));
    }
    // Other settings: the comparison no longer says anything and is gone.
    {
        app::PlanSettings other = m_workflow->session().plan;
        other.epochs += 1;
        QVERIFY(m_workflow->setPlanSettings(other));
        QVERIFY(!m_workflow->clusterPreview().has_value());
        QVERIFY(!m_window->planPage()->candidateSummary()->text().contains(
            QLatin1String("Compared now")));
        other.epochs -= 1;
        QVERIFY(m_workflow->setPlanSettings(other));
    }
    // Both nodes were released: they take the run below at once.
    QVERIFY(nodesIdle(20000));
    m_window->showStep(ui::MainWindow::Train);
    QTest::mouseClick(m_window->trainPage()->startButton(), Qt::LeftButton);
    QString message;
    QVERIFY2(waitTask(*m_workflow, app::Task::Training, 240000, &message), qPrintable(message));
    const app::Session &s = m_workflow->session();
    QCOMPARE(s.training.state, app::TrainingRecord::State::Finished);
    QVERIFY(s.training.plan.has_value());
    QVERIFY(!m_workflow->clusterPreview().has_value()); // the run's ranking replaced it
    const app::ClusterPlanRecord &p = *s.training.plan;
    // Either node alone, or both (sync). gui-node-1 reports no power (no sensor here, no
    // profile): no cluster with it can be ranked by energy, so the Pi 4 trains alone.
    QCOMPARE(int(p.candidates.size()), 3);
    QCOMPARE(p.chosen, 0);
    QCOMPARE(p.candidates[0].nodes, QStringList{QStringLiteral("gui-node-2")});
    for (int i = 1; i < 3; ++i)
        QVERIFY2(p.candidates[std::size_t(i)].whyNot.contains(QLatin1String("power")),
                 qPrintable(p.candidates[std::size_t(i)].whyNot));
    QCOMPARE(s.training.nodes, QStringList{QStringLiteral("gui-node-2")});
    QCOMPARE(s.training.epochs.back().nodes, 1);
    QVERIFY(p.profilingSeconds > 0);
    QVERIFY(p.measuredSeconds > 0);
    QVERIFY(p.measuredJoules > 0); // the Pi 4's estimated power over its training
    const QList<QStringList> rows = ui::ReportText::clusterPlanRows(s);
    QCOMPARE(rows.size(), 4);
    QCOMPARE(rows[1].last(), QStringLiteral("chosen"));
    QCOMPARE(rows[2][3], QStringLiteral("–")); // gui-node-1 alone: no power figure to show
    QVERIFY(ui::ReportText::clusterPlanSummary(s).contains(QLatin1String("The chosen cluster")));
    screenshot(QStringLiteral("train-planned"));
    // The Plan page shows what the planner compared: the chosen row marked, the measured
    // training next to the prediction; sorting by a figure sorts by its value.
    m_window->showStep(ui::MainWindow::Plan);
    QTableWidget *table = m_window->planPage()->candidateTable();
    QCOMPARE(table->rowCount(), 3);
    QCOMPARE(table->item(0, 1)->text(), QStringLiteral("gui-node-2"));
    QCOMPARE(table->item(0, 7)->text(), QStringLiteral("chosen"));
    QVERIFY(table->item(0, 1)->font().bold());
    QVERIFY(!table->item(1, 1)->font().bold());
    const QString summary = m_window->planPage()->candidateSummary()->text();
    QVERIFY2(summary.contains(QLatin1String("chosen: gui-node-2")) &&
                 summary.contains(QLatin1String("measured")),
             qPrintable(summary));
    table->sortByColumn(3, Qt::DescendingOrder); // the slowest first
    for (int r = 1; r < table->rowCount(); ++r)
        QVERIFY(table->item(r - 1, 3)->data(Qt::UserRole).toDouble() >=
                table->item(r, 3)->data(Qt::UserRole).toDouble());
    screenshot(QStringLiteral("plan-candidates"));
    table->sortByColumn(0, Qt::AscendingOrder);
    QVERIFY2(waitTask(*m_workflow, app::Task::Evaluation, 240000, &message), qPrintable(message));
    if (const QString shots = qEnvironmentVariable("EDGETRAIN_SCREENSHOTS"); !shots.isEmpty()) {
        QStringList written;
        QString error;
        QVERIFY2(m_window->reportPage()->exportTo(m_dir.path() + QStringLiteral("/planned"),
                                                  &written, &error),
                 qPrintable(error));
        QFile::copy(m_dir.path() + QStringLiteral("/planned/report.pdf"),
                    shots + QStringLiteral("/report-planned.pdf"));
    }
}

void TstGui::trainingOutlastsFaults()
{
    // Faults in the window's run (issue #16): while the student trains on both devices,
    // gui-node-2 freezes past the silence limit and thaws, then is killed and started again.
    // Each time it is dropped, the other trains on, and it rejoins; the window never stalls;
    // no epoch loses or doubles a sample; and the session on disk reopens with every epoch and
    // event the window showed.
    QVERIFY(prepareStudentRun(400)); // far more epochs than the test waits for
    m_window->showStep(ui::MainWindow::Train);
    QSignalSpy epochs(m_workflow.get(), &app::Workflow::epochFinished);
    QSignalSpy events(m_workflow.get(), &app::Workflow::clusterEvent);
    const auto count = [&](net::ClusterEventKind kind) {
        return int(std::count_if(events.begin(), events.end(), [kind](const QList<QVariant> &e) {
            return e.at(0).value<net::ClusterEvent>().kind == kind;
        }));
    };
    // An epoch on both devices after the event count `rejoins` was reached.
    const auto bothTrainAgain = [&](int rejoins) {
        QTRY_VERIFY_WITH_TIMEOUT(count(net::ClusterEventKind::Rejoined) == rejoins, 30000);
        const int after = int(epochs.size());
        QTRY_VERIFY_WITH_TIMEOUT(int(epochs.size()) > after &&
                                     epochs.last().at(0).value<net::ClusterEpoch>().nodes == 2,
                                 60000);
    };
    QTest::mouseClick(m_window->trainPage()->startButton(), Qt::LeftButton);
    QVERIFY(epochs.wait(120000));
    Watchdog watchdog;
    watchdog.start();
    NodeProcess &victim = *m_nodes[1];
    const auto thaw = qScopeGuard([&] { ::kill(pid_t(victim.process.processId()), SIGCONT); });
    ::kill(pid_t(victim.process.processId()), SIGSTOP);
    QTRY_VERIFY_WITH_TIMEOUT(count(net::ClusterEventKind::Lost) == 1, 15000);
    QTest::qWait(1000);
    ::kill(pid_t(victim.process.processId()), SIGCONT);
    bothTrainAgain(1);
    if (QTest::currentTestFailed())
        return;
    watchdog.unmeasured([&] {
        victim.kill();
        return true;
    });
    QTRY_VERIFY_WITH_TIMEOUT(count(net::ClusterEventKind::Lost) == 2, 15000);
    QVERIFY(watchdog.unmeasured([&] { return victim.restart(); })); // back, on the same port
    bothTrainAgain(2);
    if (QTest::currentTestFailed())
        return;
    watchdog.stop("training through a freeze and a kill");
    QVERIFY2(watchdog.busy() < 50.0,
             qPrintable(QStringLiteral("GUI thread busy for %1 ms").arg(watchdog.busy())));
    QVERIFY2(watchdog.late() < 100.0,
             qPrintable(QStringLiteral("a timer came %1 ms late").arg(watchdog.late())));
    QCOMPARE(count(net::ClusterEventKind::Failed), 0);
    screenshot(QStringLiteral("train-faults"));
    m_workflow->stopTraining();
    QTRY_VERIFY_WITH_TIMEOUT(!m_workflow->isTraining(), 30000);
    const app::TrainingRecord done = m_workflow->session().training;
    QCOMPARE(done.state, app::TrainingRecord::State::Stopped);
    QVERIFY(done.epochs.size() >= 3);
    for (const auto &e : done.epochs) // every epoch trained the whole set, whoever was there
        QCOMPARE(e.samples, done.epochs.front().samples);
    QVERIFY(nodesIdle(10000));

    // The session on disk is the one the window showed.
    auto reopened = std::make_unique<app::Workflow>();
    QString error;
    QVERIFY2(reopened->openSession(m_session, &error), qPrintable(error));
    const app::TrainingRecord &again = reopened->session().training;
    QCOMPARE(again.state, app::TrainingRecord::State::Stopped);
    QCOMPARE(again.epochs.size(), done.epochs.size());
    QCOMPARE(again.events.size(), done.events.size());
    for (std::size_t i = 0; i < done.events.size(); ++i)
        QCOMPARE(again.events[i].kind, done.events[i].kind);
}

void TstGui::closingMidTrainingStopsTheJob()
{
    QVERIFY(prepareStudentRun(200)); // far more epochs than the test waits for
    m_window->showStep(ui::MainWindow::Train);
    QSignalSpy epochs(m_workflow.get(), &app::Workflow::epochFinished);
    QTest::mouseClick(m_window->trainPage()->startButton(), Qt::LeftButton);
    QVERIFY(epochs.wait(120000));
    QVERIFY(m_workflow->isTraining());
    const QString lost = QStringLiteral("gui-node-2");
    auto seriesNamed = [this](const QString &name) {
        const auto all = m_window->trainPage()->charts().cpu->chart()->series();
        return std::any_of(all.begin(), all.end(),
                           [&](QAbstractSeries *x) { return x->name() == name; });
    };
    // Both devices' readings are on the charts before one of them is lost (a first epoch can
    // end before the first reading of a device arrives: readings come once a second).
    QTRY_VERIFY_WITH_TIMEOUT(seriesNamed(lost), 10000);
    // A device drops out: the other goes on, and the window shows the lost one as such.
    QSignalSpy events(m_workflow.get(), &app::Workflow::clusterEvent);
    m_nodes[1]->kill();
    QTRY_VERIFY_WITH_TIMEOUT(std::any_of(events.begin(), events.end(),
                                         [](const QList<QVariant> &e) {
                                             return e.at(0).value<net::ClusterEvent>().kind ==
                                                    net::ClusterEventKind::Lost;
                                         }),
                             15000);
    QVERIFY(m_workflow->isTraining());
    QTRY_VERIFY_WITH_TIMEOUT(seriesNamed(lost + QStringLiteral(" (lost)")), 5000);
    const int before = int(epochs.size());
    QVERIFY(epochs.wait(60000)); // the survivor trains on alone
    QVERIFY(int(epochs.size()) > before);
    QCOMPARE(epochs.last().at(0).value<net::ClusterEpoch>().nodes, 1);
    screenshot(QStringLiteral("train-node-lost"));
    // Close the window: it waits for the nodes to stop, then closes.
    m_window->close();
    QTRY_VERIFY_WITH_TIMEOUT(!m_window->isVisible(), 20000);
    QVERIFY(!m_workflow->isTraining());
    QCOMPARE(m_workflow->session().training.state, app::TrainingRecord::State::Stopped);
    QVERIFY(nodesIdle(10000));
    const int done = int(m_workflow->session().training.epochs.size());
    QVERIFY(done >= 1);
    m_window.reset();
    m_workflow.reset();

    // Reopening the session shows what was done.
    m_workflow = std::make_unique<app::Workflow>();
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->show();
    QVERIFY(m_window->openSession(m_session));
    const app::Session &again = m_workflow->session();
    QCOMPARE(int(again.training.epochs.size()), done);
    QCOMPARE(again.training.state, app::TrainingRecord::State::Stopped);
    QVERIFY(again.datasetStats.has_value());
    QVERIFY(m_workflow->labels() != nullptr);
    QCOMPARE(again.capture.source, kVideo);
    QVERIFY(m_window->trainPage()->charts().cpu->pointCount() > 0);
}

void TstGui::rehearseWithEmulatedDevices()
{
    // The Nodes step's rehearsal: typed devices, one click, the lab's nodes paired in the table
    // with the profile's facts; a second click takes the lab down and its nodes leave. (As
    // root, which CI is, emulated; otherwise plain local nodes: the same path in the app.)
    auto *page = m_window->findChild<ui::NodesPage *>();
    QVERIFY(page);
    const QString labDir = m_dir.path() + QStringLiteral("/lab");
    m_workflow->lab().setFolder(labDir);
    m_workflow->lab().setNodeProgram(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-node"));
    auto *devices = page->findChild<QLineEdit *>(QStringLiteral("labDevices"));
    auto *button = page->findChild<QPushButton *>(QStringLiteral("labButton"));
    auto *state = page->findChild<QLabel *>(QStringLiteral("labState"));
    QVERIFY(devices && button && state);
    m_window->showStep(ui::MainWindow::Nodes);
    devices->setText(QStringLiteral("pi3:9x")); // a bad count: refused, nothing started
    QTimer::singleShot(200, [] {
        if (auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget()))
            box->accept();
    });
    button->click();
    QVERIFY(!m_workflow->lab().busy() && !m_workflow->lab().isUp());
    devices->setText(QStringLiteral("pi3:2"));
    button->click();
    QTRY_VERIFY_WITH_TIMEOUT(m_workflow->lab().busy(), 2000);
    QCOMPARE(button->text(), QStringLiteral("Cancel"));
    QTRY_VERIFY_WITH_TIMEOUT(m_workflow->lab().isUp(), 90000);
    QTRY_VERIFY_WITH_TIMEOUT(
        m_workflow->nodes().pairedNodes().contains(QStringLiteral("pi3b-1")) &&
            m_workflow->nodes().pairedNodes().contains(QStringLiteral("pi3b-2")),
        10000);
    QTableWidget *table = page->table();
    const int row = rowNamed(table, QStringLiteral("pi3b-1"));
    QVERIFY(row >= 0);
    QCOMPARE(table->item(row, column(table, QStringLiteral("Cores")))->text(), QStringLiteral("4"));
    QCOMPARE(table->item(row, column(table, QStringLiteral("Arch")))->text(),
             QStringLiteral("aarch64"));
    QVERIFY2(state->text().contains(QLatin1String("2 emulated devices up")),
             qPrintable(state->text()));
    QCOMPARE(button->text(), QStringLiteral("Stop the rehearsal"));
    QVERIFY(QFileInfo::exists(labDir + QStringLiteral("/lab.json")));
    screenshot(QStringLiteral("nodes-rehearsal"));
    button->click();
    QTRY_VERIFY_WITH_TIMEOUT(!m_workflow->lab().isUp() && !m_workflow->lab().busy(), 30000);
    QVERIFY(!m_workflow->nodes().pairedNodes().contains(QStringLiteral("pi3b-1")));
    QCOMPARE(rowNamed(table, QStringLiteral("pi3b-1")), -1);
    QVERIFY(!QFileInfo::exists(labDir + QStringLiteral("/lab.json")));
    QVERIFY2(state->text().contains(QLatin1String("taken down")), qPrintable(state->text()));
}

void TstGui::cleanupTestCase()
{
    m_window.reset();
    m_workflow.reset();
    m_nodes.clear();
}

int main(int argc, char **argv)
{
    // The window keeps settings (recent sessions, geometry, the rehearsal's devices): never in
    // the user's own.
    QStandardPaths::setTestModeEnabled(true);
    TimedApplication app(argc, argv);
    app.setAttribute(Qt::AA_Use96Dpi, true);
    TstGui test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "tst_gui.moc"

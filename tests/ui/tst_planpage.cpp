// The Plan step's tiling and input choice. plannerMatchesPlanTiling(): the planner thread's tiled
// alternative (PlannerWorker, PlanView::tiled) is the plan core::planTiling chooses for the same
// budget and process overhead, for budgets between the tiled and untiled floors of ResNet-18 at
// batch 8 (only tiles fit), below both, near the floor and above store-all.
// pageShowsTiling(): the page says in words that tiles make the plan fit and draws the tiled
// schedules beside the checkpointing ones, the tiled plan marked. inputChoice(): a session whose
// camera frames are 768x576 offers the full frame as the student's input with its prediction,
// and choosing it plans that input and sets the dataset's width. No nodes.
// QT_QPA_PLATFORM=offscreen; with EDGETRAIN_SCREENSHOTS=DIR set, DIR/plan-tiling.png.
#include "app/session/plannerworker.h"
#include "app/session/workflow.h"
#include "core/parallel.h"
#include "core/tilingplanner.h"
#include "ui/charts.h"
#include "ui/planchart.h"
#include "ui/planpage.h"
#include "vision/labelresult.h"

#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QLineSeries>
#include <QScatterSeries>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

using namespace edgetrain;

namespace {

constexpr std::int64_t kMiB = 1024 * 1024;
constexpr std::int64_t kSliderStep = 16 * 1024; // the page's budget resolution

/** The planner's answer to `request`, asked on this thread. */
app::PlanView planned(app::PlannerWorker &worker, const app::PlanRequest &request)
{
    std::optional<app::PlanView> answer;
    QObject::connect(&worker, &app::PlannerWorker::ready, &worker,
                     [&answer](const app::PlanView &v) { answer = v; });
    worker.plan(request);
    QObject::disconnect(&worker, &app::PlannerWorker::ready, &worker, nullptr);
    if (!answer)
        qFatal("the planner did not answer");
    return *answer;
}

app::PlanRequest resnet18(std::int64_t budget)
{
    app::PlanRequest r;
    r.model = QStringLiteral("resnet18");
    r.width = r.height = 224;
    r.deviceBatch = 8;
    r.budgetBytes = budget;
    return r;
}

/** A budget between the tiled and the untiled floor of `v`'s chain, on the slider's steps. */
std::int64_t betweenFloors(const app::PlanView &v)
{
    return (v.minimumBudget - 16 * kMiB) / kSliderStep * kSliderStep;
}

} // namespace

class TestPlanPage : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void plannerMatchesPlanTiling_data();
    void plannerMatchesPlanTiling();
    void pageShowsTiling();
    void inputChoice();

private:
    void screenshot(QWidget *widget, const QString &name);
};

void TestPlanPage::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
    core::setThreadCount(1);
}

void TestPlanPage::screenshot(QWidget *widget, const QString &name)
{
    const QString dir = qEnvironmentVariable("EDGETRAIN_SCREENSHOTS");
    if (!dir.isEmpty())
        QVERIFY(widget->grab().save(dir + QLatin1Char('/') + name + QStringLiteral(".png")));
}

void TestPlanPage::plannerMatchesPlanTiling_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::addColumn<qint64>("batch");
    QTest::addColumn<QString>("where"); // the budget against the chain's floors
    QTest::newRow("resnet18, only tiles fit") << "resnet18" << 224 << 224 << qint64(8) << "between";
    QTest::newRow("resnet18, nothing fits") << "resnet18" << 224 << 224 << qint64(8) << "below";
    QTest::newRow("resnet18, store-all fits") << "resnet18" << 224 << 224 << qint64(8) << "above";
    QTest::newRow("detector, near its floor") << "detector" << 256 << 192 << qint64(32) << "near";
}

void TestPlanPage::plannerMatchesPlanTiling()
{
    QFETCH(QString, model);
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(qint64, batch);
    QFETCH(QString, where);
    app::PlanRequest request;
    request.model = model;
    request.width = width;
    request.height = height;
    request.deviceBatch = batch;
    app::PlannerWorker worker;
    const app::PlanView unbudgeted = planned(worker, request);
    QVERIFY2(unbudgeted.error.isEmpty(), qPrintable(unbudgeted.error));
    QVERIFY(!unbudgeted.tiled); // no budget: nothing to weigh
    if (where == QLatin1String("between"))
        request.budgetBytes = betweenFloors(unbudgeted);
    else if (where == QLatin1String("below"))
        request.budgetBytes = unbudgeted.minimumBudget / 2;
    else if (where == QLatin1String("above"))
        request.budgetBytes = unbudgeted.storeAllPeak + unbudgeted.processOverhead + kMiB;
    else
        request.budgetBytes = unbudgeted.minimumBudget + 8 * kMiB;
    const app::PlanView v = planned(worker, request);
    QVERIFY2(v.error.isEmpty(), qPrintable(v.error));
    QVERIFY(v.tiled.has_value());

    core::Model fresh(request.spec(), 1);
    const core::TiledPlan expected =
        core::planTiling(fresh, batch, request.budgetBytes, {}, {}, v.processOverhead);
    const core::TiledPlan &got = *v.tiled;
    QCOMPARE(got.tiling.stages, expected.tiling.stages);
    QCOMPARE(got.tiling.rows, expected.tiling.rows);
    QCOMPARE(got.tiling.cols, expected.tiling.cols);
    QCOMPARE(got.plan.fits, expected.plan.fits);
    QCOMPARE(got.plan.predicted_peak_bytes, expected.plan.predicted_peak_bytes);
    QCOMPARE(got.plan.min_budget_bytes, expected.plan.min_budget_bytes);
    QCOMPARE(got.predicted_step_factor, expected.predicted_step_factor);
    QCOMPARE(got.group_peak_bytes, expected.group_peak_bytes);
    QCOMPARE(got.untiled_group_peak_bytes, expected.untiled_group_peak_bytes);
    // Asked again, the kept answer.
    const app::PlanView again = planned(worker, request);
    QCOMPARE(again.tiled->predicted_step_factor, got.predicted_step_factor);

    if (where == QLatin1String("between")) { // what a user should be told: tiles make it fit
        QVERIFY(!v.plan.fits);
        QVERIFY(got.plan.fits);
        QVERIFY(got.tiling.active());
        QVERIFY(got.group_peak_bytes < got.untiled_group_peak_bytes);
        QVERIFY(!v.tiledSweep.empty());
    }
    if (where == QLatin1String("above")) { // storing everything untiled costs least
        QVERIFY(v.plan.fits);
        QVERIFY(!got.tiling.active());
        QVERIFY(v.tiledSweep.empty());
    }
}

void TestPlanPage::pageShowsTiling()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    app::Workflow workflow;
    QString error;
    QVERIFY2(workflow.newSession(dir.path(), &error), qPrintable(error));
    app::DatasetSettings dataset = workflow.session().dataset;
    dataset.kind = QStringLiteral("crops");
    dataset.width = dataset.height = 224;
    QVERIFY2(workflow.setDatasetSettings(dataset, &error), qPrintable(error));
    // The floors the page will meet (the same planning, on this thread).
    app::PlannerWorker worker;
    const app::PlanView unbudgeted = planned(worker, resnet18(-1));
    app::PlanSettings plan = workflow.session().plan;
    plan.model = QStringLiteral("resnet18");
    plan.batch = 8; // no device paired: one device's batch
    plan.budgetAllBytes = betweenFloors(unbudgeted);
    QVERIFY2(workflow.setPlanSettings(plan, &error), qPrintable(error));

    ui::PlanPage page(&workflow);
    page.resize(1366, 700);
    page.setVisible(true); // PlanPage::show() shows a plan
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QTRY_VERIFY_WITH_TIMEOUT(
        page.lastPlan() && page.lastPlan()->request.budgetBytes == plan.budgetAllBytes, 120000);
    const app::PlanView &v = *page.lastPlan();
    QVERIFY(!v.plan.fits);
    QVERIFY(v.tiled && v.tiled->plan.fits && v.tiled->tiling.active());
    QCOMPARE(page.modelBox()->currentText(), QStringLiteral("resnet18"));
    // The sentence: tiles make it fit, on which grid, the group's activations both ways.
    const QString text = page.tilingLabel()->text();
    QVERIFY2(page.tilingLabel()->isVisible(), qPrintable(text));
    QVERIFY2(text.startsWith(QLatin1String("Tiles make it fit")), qPrintable(text));
    QVERIFY2(text.contains(
                 QStringLiteral("%1×%2 tiles").arg(v.tiled->tiling.rows).arg(v.tiled->tiling.cols)),
             qPrintable(text));
    QVERIFY2(text.contains(ui::formatBytes(double(v.tiled->untiled_group_peak_bytes))),
             qPrintable(text));
    // The chart: the tiled schedules as their own line, the tiled plan marked on it.
    ui::PlanChart *chart = page.chart();
    QVERIFY(chart->tiledLine()->count() > 0);
    QVERIFY(chart->tiledLine()->name().contains(QLatin1String("tiles")));
    QCOMPARE(chart->tiledChoice()->count(), 1);
    QCOMPARE(chart->tiledChoice()->at(0).x(), v.tiled->predicted_step_factor);
    QCOMPARE(chart->tiledChoice()->at(0).y(),
             double(v.tiled->plan.predicted_peak_bytes) / double(kMiB));
    QVERIFY(!page.inputBox()->isVisible()); // crops: no frame size to offer
    QTest::qWait(50);                       // the layout's request for the sentences' room
    screenshot(&page, QStringLiteral("plan-tiling"));

    // With no budget, no tiling to weigh: the sentence and the tiled line go.
    plan.budgetAllBytes = -1;
    QVERIFY2(workflow.setPlanSettings(plan, &error), qPrintable(error));
    QTRY_VERIFY_WITH_TIMEOUT(page.lastPlan()->request.budgetBytes < 0, 60000);
    QVERIFY(!page.tilingLabel()->isVisible());
    QCOMPARE(chart->tiledLine()->count(), 0);
    QCOMPARE(chart->tiledChoice()->count(), 0);
}

void TestPlanPage::inputChoice()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    vision::LabelResult labels; // a camera's labels: only their frame size matters here
    labels.source = dir.filePath(QStringLiteral("camera.avi")).toStdString();
    labels.teacher = "hog";
    labels.frame_size = cv::Size(768, 576);
    labels.save(dir.path().toStdString());
    app::Session s;
    s.dir = dir.path();
    s.capture.source = QString::fromStdString(labels.source);
    s.plan.batch = 2;
    QString error;
    QVERIFY2(s.save(&error), qPrintable(error));
    app::Workflow workflow;
    QVERIFY2(workflow.openSession(dir.path(), &error), qPrintable(error));
    QVERIFY(workflow.labels());

    ui::PlanPage page(&workflow);
    page.resize(1366, 700);
    page.setVisible(true); // PlanPage::show() shows a plan
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QTRY_VERIFY_WITH_TIMEOUT(page.lastPlan() && page.lastPlan()->alternative, 120000);
    QCOMPARE(page.lastPlan()->request.width, 256);
    QCOMPARE(page.lastPlan()->alternative->width, 768);
    QCOMPARE(page.lastPlan()->alternative->height, 576);
    // The choice: today's input and the camera's full frame, with the planner's prediction.
    QComboBox *input = page.inputBox();
    QVERIFY(input->isVisible());
    QCOMPARE(input->count(), 2);
    QCOMPARE(input->currentData().toInt(), 256);
    QVERIFY(input->itemText(1).contains(QStringLiteral("768 × 576, the full frame")));
    const app::PlanView small = *page.lastPlan();
    const double ratio = small.alternative->forwardFlops / small.forwardFlops;
    QVERIFY2(ratio > 8.0 && ratio < 10.0, qPrintable(QString::number(ratio))); // 9x the pixels
    QString note = page.inputNote()->text();
    QVERIFY2(note.startsWith(QStringLiteral("At 768 × 576 a step is about")), qPrintable(note));
    QVERIFY2(note.contains(ui::formatBytes(double(small.alternative->storeAllPeak))),
             qPrintable(note));

    // Choosing the full frame plans it, with today's input beside, and the dataset follows.
    input->setCurrentIndex(1);
    Q_EMIT input->activated(1);
    QCOMPARE(workflow.session().dataset.frameWidth, 768);
    QTRY_VERIFY_WITH_TIMEOUT(page.lastPlan()->request.width == 768, 120000);
    QVERIFY(page.lastPlan()->alternative && page.lastPlan()->alternative->width == 256);
    QCOMPARE(input->currentData().toInt(), 768);
    note = page.inputNote()->text();
    QVERIFY2(note.startsWith(QStringLiteral("At 256 × 192 a step is about")), qPrintable(note));
    QTest::qWait(50);
    screenshot(&page, QStringLiteral("plan-input"));
}

QTEST_MAIN(TestPlanPage)
#include "tst_planpage.moc"

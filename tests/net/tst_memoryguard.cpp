// A job's memory on a node: which budget a step plans within, the plan for a rank's part of a
// batch, the batch evaluation may use, and what the job may allocate beyond its plans.
#include "core/error.h"
#include "core/model.h"
#include "core/zoo.h"
#include "net/training/worker/memoryguard.h"

#include <QTest>

using edgetrain::net::JobSpec;
using edgetrain::net::worker::MemoryGuard;
namespace core = edgetrain::core;

class TestMemoryGuard : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void budgetIsTheJobsElseTheNodes_data();
    void budgetIsTheJobsElseTheNodes();
    void noBudgetHoldsNothingAndPlansNothing();
    void batchThatDoesNotFitIsRefused();
    void evaluationBatchStaysWithinWhatFits();
    void allowanceCountsTheParameters();
};

namespace {

JobSpec lenetJob(std::int64_t budgetBytes)
{
    JobSpec job;
    job.id = QStringLiteral("guard");
    job.model = core::Zoo::resolve("lenet5").toJson();
    job.batch = 64;
    job.memory_budget_bytes = budgetBytes;
    return job;
}

} // namespace

void TestMemoryGuard::budgetIsTheJobsElseTheNodes_data()
{
    QTest::addColumn<qint64>("jobBudget");
    QTest::addColumn<qint64>("nodeLimit");
    QTest::addColumn<qint64>("budget");
    QTest::newRow("the job's") << qint64(50 << 20) << qint64(200 << 20) << qint64(50 << 20);
    QTest::newRow("the job's, above the node's")
        << qint64(300 << 20) << qint64(200 << 20) << qint64(300 << 20);
    QTest::newRow("the node's") << qint64(-1) << qint64(200 << 20) << qint64(200 << 20);
    QTest::newRow("none") << qint64(-1) << qint64(-1) << qint64(-1);
}

void TestMemoryGuard::budgetIsTheJobsElseTheNodes()
{
    QFETCH(qint64, jobBudget);
    QFETCH(qint64, nodeLimit);
    QFETCH(qint64, budget);
    const JobSpec job = lenetJob(jobBudget);
    core::Model model(core::Zoo::resolve("lenet5"), 1);
    const MemoryGuard guard(job, model, nodeLimit);
    QCOMPARE(guard.budgetBytes(), budget);
}

void TestMemoryGuard::noBudgetHoldsNothingAndPlansNothing()
{
    const JobSpec job = lenetJob(-1);
    core::Model model(core::Zoo::resolve("lenet5"), 1);
    MemoryGuard guard(job, model, -1);
    guard.hold();
    QVERIFY(!guard.limit());
    guard.check(); // nothing to exceed
    QCOMPARE(guard.largestLocalBatch(), qint64(-1));
    QCOMPARE(guard.evaluationBatch(), qint64(500));
    guard.planSteps(job.batch + 1);
    QVERIFY(!guard.stepSchedule()); // every activation stored
}

void TestMemoryGuard::batchThatDoesNotFitIsRefused()
{
    const JobSpec job = lenetJob(64 << 10); // 64 KiB: not one sample of LeNet-5's step
    core::Model model(core::Zoo::resolve("lenet5"), 1);
    MemoryGuard guard(job, model, -1);
    QCOMPARE(guard.largestLocalBatch(), qint64(0));
    bool refused = false;
    try {
        guard.planSteps(16);
    } catch (const core::Error &e) {
        refused = true;
        QVERIFY2(QString::fromUtf8(e.what()).contains(QStringLiteral("a batch of 16 does not fit")),
                 e.what());
    }
    QVERIFY(refused);
}

void TestMemoryGuard::evaluationBatchStaysWithinWhatFits()
{
    // A generous budget fits the job's batch + 1; evaluation then uses no more than that.
    const JobSpec job = lenetJob(std::int64_t(512) << 20);
    core::Model model(core::Zoo::resolve("lenet5"), 1);
    MemoryGuard guard(job, model, -1);
    QCOMPARE(guard.evaluationBatch(), qint64(500)); // before the largest batch is known
    QCOMPARE(guard.largestLocalBatch(), job.batch + 1);
    QCOMPARE(guard.evaluationBatch(), job.batch + 1);
    guard.planSteps(job.batch + 1); // fits: no error
}

void TestMemoryGuard::allowanceCountsTheParameters()
{
    const JobSpec job = lenetJob(-1);
    core::Model model(core::Zoo::resolve("lenet5"), 1);
    const MemoryGuard guard(job, model, -1);
    QCOMPARE(guard.allowanceBytes(),
             MemoryGuard::kFixedAllowanceBytes +
                 MemoryGuard::kParameterCopies * model.parameterCount() * 4);
}

QTEST_GUILESS_MAIN(TestMemoryGuard)
#include "tst_memoryguard.moc"

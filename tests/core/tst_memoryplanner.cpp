// The memory planner: the heterogeneous optimum equals an exhaustive search on small chains;
// on every zoo model the chosen schedule fits its budget when really run, with the measured peak
// equal to the prediction; the optimum is never worse than binomial checkpointing; and when
// nothing fits, the planner says what would.

#include "core/bufferpool.h"
#include "core/conv2d.h"
#include "core/error.h"
#include "core/memoryplanner.h"
#include "core/memorysimulation.h"
#include "core/optimalcheckpointing.h"
#include "core/parallel.h"
#include "core/processmemory.h"
#include "core/random.h"
#include "core/sgd.h"
#include "core/zoo.h"
#include "gradcheck.h"

#include <QTest>
#include <queue>

#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

using namespace edgetrain;
using namespace edgetrain::core;

namespace {

/** Cheapest cost of any program under OptimalCheckpointing's memory model (Dijkstra over all
 *  states: stored inputs, cached stages, gradient position), or -1 if none fits. */
double exhaustiveOptimum(const std::vector<StageProfile> &p, std::int64_t budget)
{
    const int L = int(p.size());
    std::vector<std::int64_t> a(std::size_t(L) + 1);
    for (int i = 0; i < L; ++i)
        a[std::size_t(i)] = p[std::size_t(i)].input_bytes;
    a[std::size_t(L)] = p.back().output_bytes;
    struct State
    {
        unsigned x, c;
        int g;
        auto key() const
        {
            return (std::uint64_t(x) << 40) | (std::uint64_t(c) << 8) | std::uint64_t(g);
        }
    };
    auto live = [&](const State &s) {
        std::int64_t b = s.g > 0 ? a[std::size_t(s.g)] : 0;
        for (int k = 1; k <= L; ++k)
            if ((s.x >> k & 1u) || (s.c >> (k - 1) & 1u) || (k < L && (s.c >> k & 1u)))
                b += a[std::size_t(k)];
        for (int k = 0; k < L; ++k)
            if (s.c >> k & 1u)
                b += p[std::size_t(k)].cache_bytes;
        return b;
    };
    using Item = std::pair<double, std::uint64_t>;
    std::priority_queue<Item, std::vector<Item>, std::greater<>> queue;
    std::map<std::uint64_t, double> best;
    std::map<std::uint64_t, State> states;
    const State start{0, 0, L};
    if (live(start) > budget)
        return -1;
    queue.push({0.0, start.key()});
    best[start.key()] = 0.0;
    states[start.key()] = start;
    while (!queue.empty()) {
        const auto [cost, key] = queue.top();
        queue.pop();
        if (cost > best[key])
            continue;
        const State s = states[key];
        if (s.g == 0 && s.c == 0)
            return cost;
        const std::int64_t now = live(s);
        auto push = [&](State n, double add, std::int64_t peak) {
            if (peak > budget || live(n) > budget)
                return;
            const auto k = n.key();
            if (!best.count(k) || cost + add < best[k]) {
                best[k] = cost + add;
                states[k] = n;
                queue.push({cost + add, k});
            }
        };
        for (int i = 0; i < L; ++i) {
            const auto ui = std::size_t(i);
            const bool input = i == 0 || (s.x >> i & 1u);
            if (input && s.g >= i + 1) {
                if (!(s.x >> (i + 1) & 1u))
                    push({s.x | 1u << (i + 1), s.c, s.g}, p[ui].forward_cost,
                         now + a[ui + 1] + p[ui].forward_workspace_bytes);
                if (!(s.c >> i & 1u))
                    push({s.x | 1u << (i + 1), s.c | 1u << i, s.g}, p[ui].forward_cost,
                         now + a[ui + 1] + p[ui].cache_bytes + p[ui].forward_workspace_bytes);
            }
            if ((s.c >> i & 1u) && s.g == i + 1)
                push({s.x & ~(1u << (i + 1)), s.c & ~(1u << i), i}, p[ui].backward_cost,
                     now + (i > 0 ? a[ui] : 0) + p[ui].backward_workspace_bytes);
        }
        for (int i = 1; i <= L; ++i)
            if (s.x >> i & 1u)
                push({s.x & ~(1u << i), s.c, s.g}, 0.0, now);
    }
    return -1;
}

double scheduleCost(const std::vector<StageProfile> &p, const Schedule &s)
{
    double c = 0.0;
    for (const auto &op : s.ops())
        if (op.kind == ScheduleOp::ForwardKeep || op.kind == ScheduleOp::ForwardCache)
            c += p[std::size_t(op.stage)].forward_cost;
        else if (op.kind == ScheduleOp::Backward)
            c += p[std::size_t(op.stage)].backward_cost;
    return c;
}

ModelSpec zooAt(const QString &name, const QString &input)
{
    ModelSpec spec = Zoo::spec(name.toStdString());
    return input.isEmpty() ? spec : spec.withInputShape(parseSampleShape(input.toStdString()));
}

} // namespace

class TestMemoryPlanner : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void optimumEqualsExhaustiveSearch();
    void plansFitWhenRun_data();
    void plansFitWhenRun();
    void optimumAtLeastAsGoodAsBinomial_data();
    void optimumAtLeastAsGoodAsBinomial();
    void nothingFitsSaysWhatWould();
    void processOverheadComesOutOfTheBudget();
    void fittingAProcessBudgetMeasuresAndRestores();
    void byteSizes();
    void threadCountStaysWithItsThread();
};

void TestMemoryPlanner::optimumEqualsExhaustiveSearch()
{
    Rng rng(2024);
    int feasible = 0, compared = 0;
    for (int trial = 0; trial < 400; ++trial) {
        const int L = 1 + int(rng.below(5));
        std::vector<StageProfile> p(static_cast<std::size_t>(L));
        std::int64_t previous = 1 + std::int64_t(rng.below(8));
        for (auto &s : p) {
            s.input_bytes = previous;
            s.output_bytes = previous = 1 + std::int64_t(rng.below(8));
            s.cache_bytes = std::int64_t(rng.below(6));
            s.forward_workspace_bytes = std::int64_t(rng.below(4));
            s.backward_workspace_bytes = std::int64_t(rng.below(4));
            s.forward_cost = double(1 + rng.below(9));
            s.backward_cost = double(1 + rng.below(9));
        }
        const std::int64_t budget = std::int64_t(rng.below(60));
        const double expected = exhaustiveOptimum(p, budget);
        const auto schedule = OptimalCheckpointing::solve(p, budget, 1);
        ++compared;
        if (expected < 0) {
            QVERIFY2(!schedule,
                     qPrintable(
                         QStringLiteral("trial %1: DP found a schedule the search says cannot fit")
                             .arg(trial)));
            continue;
        }
        ++feasible;
        QVERIFY2(schedule,
                 qPrintable(QStringLiteral("trial %1 (L=%2, M=%3): DP found nothing, search %4")
                                .arg(trial)
                                .arg(L)
                                .arg(budget)
                                .arg(expected)));
        QCOMPARE(scheduleCost(p, *schedule), expected);
        QVERIFY(OptimalCheckpointing::modelPeak(p, *schedule) <= budget);
    }
    QVERIFY(feasible > 150 && feasible < compared); // both kinds of case were exercised
}

void TestMemoryPlanner::plansFitWhenRun_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("input");
    QTest::addColumn<int>("batch");
    for (const auto &name : Zoo::names()) {
        const bool imagenet = Zoo::spec(name).inputShape()[1] == 224;
        QTest::newRow(name.c_str())
            << QString::fromStdString(name) << (imagenet ? "3x64x64" : "") << (imagenet ? 2 : 8);
    }
}

void TestMemoryPlanner::plansFitWhenRun()
{
    QFETCH(QString, model);
    QFETCH(QString, input);
    QFETCH(int, batch);
    setThreadCount(2);
    Model m(zooAt(model, input), 1);
    MemoryPlanner planner(m, batch);
    const std::int64_t all =
        planner.evaluate(Schedule::storeAll(int(m.stageCount()))).predicted_peak_bytes;
    const std::int64_t least = planner.minimumBudget();
    QVERIFY(least <= all);
    Sgd sgd(m, {});
    const Tensor x = tests::randomTensor(m.batchShape(batch), 3);
    // Classifiers: class 1; the detector: frames without objects (zeros).
    const std::vector<std::int32_t> labels(std::size_t(batch) * std::size_t(m.spec().labelWidth()),
                                           m.spec().labelWidth() == 1 ? 1 : 0);
    for (const double fraction : {0.0, 0.3, 0.7, 1.0}) {
        const auto budget = std::int64_t(double(least) + fraction * double(all - least));
        const MemoryPlan plan = planner.plan(budget);
        QVERIFY2(plan.fits, qPrintable(QStringLiteral("budget %1").arg(budget)));
        QVERIFY(plan.predicted_peak_bytes <= budget);
        auto &acc = MemoryAccountant::global();
        acc.resetPeaks();
        m.forwardBackward(x, labels.data(), {}, &plan.schedule);
        sgd.step(0.01);
        // Everything the step held at its peak, as the accountant saw it allocated: the input
        // batch, weights, gradients and momentum (live before the step) included. Nothing of the
        // planner's own arithmetic is added in.
        const std::int64_t measured = acc.peakTotalBytes();
        QVERIFY2(measured <= budget,
                 qPrintable(QStringLiteral("%1 > budget %2 (%3)")
                                .arg(measured)
                                .arg(budget)
                                .arg(QString::fromStdString(plan.schedule.name()))));
        QVERIFY2(std::abs(double(measured - plan.predicted_peak_bytes)) <=
                     0.1 * double(plan.predicted_peak_bytes),
                 qPrintable(QStringLiteral("measured %1, predicted %2")
                                .arg(measured)
                                .arg(plan.predicted_peak_bytes)));
    }
}

void TestMemoryPlanner::optimumAtLeastAsGoodAsBinomial_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("input");
    for (const auto &name : Zoo::names()) {
        const bool imagenet = Zoo::spec(name).inputShape()[1] == 224;
        QTest::newRow(name.c_str())
            << QString::fromStdString(name) << (imagenet ? "3x112x112" : "");
    }
}

void TestMemoryPlanner::optimumAtLeastAsGoodAsBinomial()
{
    QFETCH(QString, model);
    QFETCH(QString, input);
    setThreadCount(2);
    MemorySimulation virtualWeights; // planning needs no real weights
    Model m(zooAt(model, input), 1);
    MemoryPlanner planner(m, 16);
    const int L = int(m.stageCount());
    int compared = 0;
    for (int c = 0; c < std::min(L, 8); ++c) {
        const Schedule revolve = Schedule::revolve(L, c);
        const MemoryPlan binomial = planner.evaluate(revolve);
        // Under the dynamic program's own memory model, at the binomial schedule's peak in that
        // model (+2 % for the rounding of its memory steps), the program is no slower.
        const auto &stages = planner.profile().stages();
        const std::int64_t modelPeak = OptimalCheckpointing::modelPeak(stages, revolve);
        const std::int64_t budget = modelPeak + modelPeak / 50;
        const auto dp =
            OptimalCheckpointing::solve(stages, budget, std::max<std::int64_t>(4, budget / 1500));
        QVERIFY2(dp, qPrintable(QStringLiteral("revolve:%1").arg(c)));
        QVERIFY(OptimalCheckpointing::modelPeak(stages, *dp) <= budget);
        QVERIFY2(scheduleCost(stages, *dp) <= scheduleCost(stages, revolve) * (1 + 1e-12),
                 qPrintable(QStringLiteral("revolve:%1 %2, optimal %3")
                                .arg(c)
                                .arg(scheduleCost(stages, revolve))
                                .arg(scheduleCost(stages, *dp))));
        // And the planner, at exactly that peak, never picks anything slower.
        const MemoryPlan chosen = planner.plan(binomial.predicted_peak_bytes);
        QVERIFY(chosen.fits);
        QVERIFY(chosen.predicted_recompute_factor <= binomial.predicted_recompute_factor + 1e-9);
        ++compared;
    }
    QVERIFY(compared > 0);
}

void TestMemoryPlanner::nothingFitsSaysWhatWould()
{
    setThreadCount(1);
    Model m(Zoo::spec("resnet20"), 1);
    MemoryPlanner planner(m, 32);
    const std::int64_t least = planner.minimumBudget();
    const MemoryPlan tight = planner.plan(least - 64 * 1024);
    QVERIFY(!tight.fits);
    QCOMPARE(tight.min_budget_bytes, least);
    QVERIFY(tight.max_batch >= 1 && tight.max_batch < 32);
    MemoryPlanner smaller(m, tight.max_batch);
    QVERIFY(smaller.plan(least - 64 * 1024).fits);
    MemoryPlanner oneMore(m, tight.max_batch + 1);
    QVERIFY(!oneMore.plan(least - 64 * 1024).fits);
    QVERIFY(planner.plan(least).fits);
    // Below the weights themselves no batch fits.
    const MemoryPlan hopeless = planner.plan(1024);
    QVERIFY(!hopeless.fits);
    QCOMPARE(hopeless.max_batch, std::int64_t(0));
}

void TestMemoryPlanner::processOverheadComesOutOfTheBudget()
{
    setThreadCount(1);
    MemorySimulation virtualWeights;
    Model m(Zoo::spec("resnet20"), 1);
    MemoryPlanner planner(m, 32);
    const std::int64_t least = planner.minimumBudget();
    const std::int64_t all =
        planner.evaluate(Schedule::storeAll(int(m.stageCount()))).predicted_peak_bytes;
    const std::int64_t overhead = 3 << 20;
    planner.setProcessOverhead(overhead);
    // The smallest budget moves up by the overhead (within the bisection's resolution).
    const std::int64_t leastWith = planner.minimumBudget();
    QVERIFY2(std::abs(double(leastWith - (least + overhead))) <= 0.01 * double(least),
             qPrintable(QStringLiteral("%1 vs %2 + %3").arg(leastWith).arg(least).arg(overhead)));
    // Store-all fits a budget of its peak only without the overhead.
    QVERIFY(planner.plan(all).schedule.name() != "store-all");
    const MemoryPlan p = planner.plan(all + overhead);
    QVERIFY(p.fits && p.schedule.name() == "store-all");
    QCOMPARE(p.process_overhead_bytes, overhead);
    for (const double fraction : {0.0, 0.4, 0.8}) {
        const auto budget = std::int64_t(double(leastWith) + fraction * double(all - least));
        const MemoryPlan q = planner.plan(budget);
        QVERIFY2(q.fits, qPrintable(QStringLiteral("budget %1").arg(budget)));
        QVERIFY(q.predicted_peak_bytes + overhead <= budget);
    }
    const MemoryPlan none = planner.plan(least);
    QVERIFY(!none.fits);
    QCOMPARE(none.min_budget_bytes, leastWith);
}

void TestMemoryPlanner::fittingAProcessBudgetMeasuresAndRestores()
{
    setThreadCount(1);
    Model m(Zoo::spec("resnet20"), 1);
    const std::int64_t batch = 16;
    const std::int64_t budget = MemoryPlanner(m, batch).minimumBudget() * 2;
    std::vector<float> before;
    for (const NamedBuffer &b : m.buffers())
        if (b.buffer.tensor)
            before.insert(before.end(), b.buffer.tensor->data(),
                          b.buffer.tensor->data() + b.buffer.tensor->numel());
    const std::int64_t limit = BufferPool::instance().limit();
    const ProcessBudgetPlan fit = fitProcessBudget(m, batch, budget);
    // Linux has the counters: the overhead is measured (3 steps: 2 at batch 1, 1 at 16).
    QVERIFY(fit.measured_overhead_bytes >= 0);
    QVERIFY(fit.measuring_steps >= 3);
    QVERIFY(fit.plan.fits);
    QCOMPARE(fit.plan.process_overhead_bytes, fit.measured_overhead_bytes);
    QVERIFY(fit.plan.predicted_peak_bytes + fit.measured_overhead_bytes <= budget);
    QCOMPARE(BufferPool::instance().limit(), budget - fit.measured_overhead_bytes);
    BufferPool::instance().setLimit(limit);
    // The measuring steps left the batch-norm statistics as they were.
    std::vector<float> after;
    for (const NamedBuffer &b : m.buffers())
        if (b.buffer.tensor)
            after.insert(after.end(), b.buffer.tensor->data(),
                         b.buffer.tensor->data() + b.buffer.tensor->numel());
    QVERIFY(!before.empty());
    QVERIFY(before == after);
    // Without a budget nothing is measured.
    QCOMPARE(fitProcessBudget(m, batch, -1).measured_overhead_bytes, std::int64_t(-1));
}

void TestMemoryPlanner::byteSizes()
{
    QCOMPARE(parseByteSize("300MiB"), std::int64_t(300) << 20);
    QCOMPARE(parseByteSize("1.5GiB"), std::int64_t(3) << 29);
    QCOMPARE(parseByteSize("800MB"), std::int64_t(800000000));
    QCOMPARE(parseByteSize("4096"), std::int64_t(4096));
    for (const char *bad : {"", "MiB", "-3MiB", "3 MiB", "3XB", "0"})
        QVERIFY_THROWS_EXCEPTION(SpecError, parseByteSize(bad));
}

QTEST_APPLESS_MAIN(TestMemoryPlanner)
void TestMemoryPlanner::threadCountStaysWithItsThread()
{
    // The app plans memory on its planner thread with one worker while the evaluation runs on
    // another thread with more. A convolution's workspace is one im2col buffer per worker, so a
    // plan sized with the other thread's count would promise the wrong peak. (oneDNN's
    // convolutions need the same workspace on 1 and 2 threads here: the im2col path is the one
    // whose peak shows the count.)
    struct Im2colScope
    {
        ConvBackend previous = convBackend();
        Im2colScope() { setConvBackend(ConvBackend::Im2col); }
        ~Im2colScope() { setConvBackend(previous); }
    } im2col;
    Model m(Zoo::spec("resnet20"), 1);
    const int batch = 8;
    setThreadCount(1);
    const MemoryPlan alone = MemoryPlanner(m, batch).plan(-1);
    setThreadCount(2);
    const MemoryPlan twoWorkers = MemoryPlanner(m, batch).plan(-1);
    // The premise: the worker count changes the plan (else this test could not fail).
    QVERIFY(twoWorkers.predicted_peak_bytes > alone.predicted_peak_bytes);

    setThreadCount(1);
    std::mutex mutex;
    std::condition_variable changed;
    bool evaluating = false, planned = false;
    std::thread evaluation([&] {
        Model other(Zoo::spec("resnet20"), 2);
        setThreadCount(2); // after the planner thread chose 1
        {
            std::lock_guard lock(mutex);
            evaluating = true;
        }
        changed.notify_all();
        const Tensor x = tests::randomTensor(other.batchShape(2), 5);
        std::unique_lock lock(mutex);
        while (!planned) {
            lock.unlock();
            other.forward(x, PassContext{false});
            lock.lock();
        }
    });
    MemoryPlan concurrent;
    {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return evaluating; });
    }
    concurrent = MemoryPlanner(m, batch).plan(-1);
    QCOMPARE(threadCount(), 1);
    {
        std::lock_guard lock(mutex);
        planned = true;
    }
    evaluation.join();
    QCOMPARE(concurrent.predicted_peak_bytes, alone.predicted_peak_bytes);
    QCOMPARE(concurrent.schedule.name(), alone.schedule.name());
}

#include "tst_memoryplanner.moc"

// Checkpointing schedules: every schedule gives the store-all gradients bit for bit; the binomial
// schedule reaches Griewank's optimal forward counts; a memory simulation replays exactly the
// allocations of a real step; bad programs are refused with the op that breaks them.

#include "core/chainexecutor.h"
#include "core/error.h"
#include "core/memorysimulation.h"
#include "core/model.h"
#include "core/parallel.h"
#include "core/zoo.h"
#include "gradcheck.h"

#include <QTest>

using namespace edgetrain;
using namespace edgetrain::core;

namespace {

std::int64_t binomial(std::int64_t n, std::int64_t k)
{
    std::int64_t r = 1;
    for (std::int64_t i = 1; i <= k; ++i)
        r = r * (n - k + i) / i;
    return r;
}

/** Griewank's minimal forward steps for l steps with c checkpoints (the input counts as one). */
std::int64_t griewankForwards(std::int64_t l, std::int64_t c)
{
    std::int64_t r = 0;
    while (binomial(c + r, c) < l)
        ++r;
    return r * l - binomial(c + 1 + r - 1, c + 1);
}

struct Snapshot
{
    double loss = 0.0;
    std::vector<float> grads;
    std::vector<float> state; // batch-norm running statistics
};

Snapshot step(Model &model, const Schedule *schedule, const Tensor &x,
              const std::vector<std::int32_t> &labels)
{
    PassContext ctx;
    ctx.seed = 5;
    Snapshot s;
    s.loss = model.forwardBackward(x, labels.data(), ctx, schedule).loss;
    for (const auto &p : model.parameters())
        s.grads.insert(s.grads.end(), p.parameter->grad.data(),
                       p.parameter->grad.data() + p.parameter->grad.numel());
    for (const auto &b : model.buffers())
        if (b.buffer.tensor)
            s.state.insert(s.state.end(), b.buffer.tensor->data(),
                           b.buffer.tensor->data() + b.buffer.tensor->numel());
    return s;
}

ModelSpec specFor(const QString &name)
{
    if (name == QLatin1String("dropout-mlp"))
        return ModelSpec::fromJson(Json::parse(R"({"name": "dropout-mlp", "input": [20], "stages": [
            {"type": "linear", "out_features": 16}, {"type": "relu"}, {"type": "dropout", "p": 0.3},
            {"type": "linear", "out_features": 16}, {"type": "relu"}, {"type": "dropout", "p": 0.3},
            {"type": "linear", "out_features": 4}]})"));
    return Zoo::spec(name.toStdString());
}

} // namespace

class TestCheckpointing : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void gradientsEqualStoreAll_data();
    void gradientsEqualStoreAll();
    void detectionGradientsEqualStoreAll();
    void revolveMatchesGriewank();
    void sequentialMatchesPyTorch();
    void simulationReplaysRealAllocations_data();
    void simulationReplaysRealAllocations();
    void invalidProgramsAreRefused();
    void parseSchedules();
};

void TestCheckpointing::gradientsEqualStoreAll_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("schedule");
    for (const char *model : {"lenet5", "resnet20", "dropout-mlp"})
        for (const char *schedule :
             {"sequential:2", "sequential:4", "revolve:0", "revolve:1", "revolve:3", "revolve:50"})
            QTest::addRow("%s %s", model, schedule) << model << schedule;
}

void TestCheckpointing::gradientsEqualStoreAll()
{
    QFETCH(QString, model);
    QFETCH(QString, schedule);
    setThreadCount(2);
    const ModelSpec spec = specFor(model);
    Model reference(spec, 3), checkpointed(spec, 3);
    const Tensor x = tests::randomTensor(reference.batchShape(6), 8);
    const std::vector<std::int32_t> labels{0, 1, 2, 3, 1, 2};
    const Snapshot a = step(reference, nullptr, x, labels);
    const Schedule s = Schedule::parse(schedule.toStdString(), int(checkpointed.stageCount()));
    const Snapshot b = step(checkpointed, &s, x, labels);
    QCOMPARE(b.loss, a.loss);
    QVERIFY(a.grads == b.grads); // bit for bit
    QVERIFY(a.state == b.state); // recomputation does not update running statistics twice
    QVERIFY(s.forwardCount() >= std::int64_t(checkpointed.stageCount()));
}

void TestCheckpointing::detectionGradientsEqualStoreAll()
{
    // The centernet loss at the end of the chain: recomputed stages feed it the same output.
    setThreadCount(2);
    const ModelSpec spec = Zoo::spec("detector").withInputShape({3, 32, 48});
    const int width = spec.labelWidth(), maxObjects = spec.loss().centernet.max_objects;
    std::vector<std::int32_t> labels(std::size_t(4 * width));
    for (int n = 0; n < 4; ++n)
        DetectionLoss::encode(
            {{2.0f + n, 3.0f, 20.0f + n, 25.0f, false}, {30.0f, 4.0f, 44.0f, 12.0f, n % 2 == 1}},
            maxObjects, labels.data() + n * width);
    Model reference(spec, 3);
    const Tensor x = tests::randomTensor(reference.batchShape(4), 8);
    const Snapshot a = step(reference, nullptr, x, labels);
    QVERIFY(a.loss > 0.0);
    for (const char *schedule : {"sequential:3", "revolve:1", "revolve:3"}) {
        Model checkpointed(spec, 3);
        const Schedule s = Schedule::parse(schedule, int(checkpointed.stageCount()));
        QVERIFY(s.forwardCount() > std::int64_t(checkpointed.stageCount()));
        const Snapshot b = step(checkpointed, &s, x, labels);
        QCOMPARE(b.loss, a.loss);
        QVERIFY2(a.grads == b.grads, schedule); // bit for bit
        QVERIFY2(a.state == b.state, schedule);
    }
}

void TestCheckpointing::revolveMatchesGriewank()
{
    for (int l = 1; l <= 60; ++l)
        for (int c = 0; c <= 6; ++c) {
            const std::int64_t expected = griewankForwards(l, c + 1) + l;
            QCOMPARE(Schedule::revolveForwards(l, c), expected);
            const Schedule s = Schedule::revolve(l, c);
            QCOMPARE(s.forwardCount(), expected);
            // Never more checkpoints than slots: at every forward, the stored states other
            // than x[0], the op's own input and its output.
            std::vector<char> stored(std::size_t(l) + 1, 0);
            int worst = 0;
            for (const auto &op : s.ops()) {
                const auto i = std::size_t(op.stage);
                if (op.kind == ScheduleOp::ForwardKeep || op.kind == ScheduleOp::ForwardCache) {
                    int live = 0;
                    for (std::size_t k = 1; k < std::size_t(l); ++k)
                        live += stored[k] && k != i;
                    worst = std::max(worst, live);
                    stored[i + 1] = 1;
                } else if (op.kind == ScheduleOp::Discard) {
                    stored[i] = 0;
                } else if (op.kind == ScheduleOp::Backward) {
                    stored[i + 1] = 0;
                }
            }
            QVERIFY2(worst <= c,
                     qPrintable(QStringLiteral("l=%1 c=%2: %3 live").arg(l).arg(c).arg(worst)));
        }
    // Known values: 10 stages, 2 extra slots (3 checkpoints) -> 10 + 15 forwards.
    QCOMPARE(Schedule::revolveForwards(10, 2), std::int64_t(25));
}

void TestCheckpointing::sequentialMatchesPyTorch()
{
    // checkpoint_sequential(ResNet-56 = 29 modules, 4): 3 segments of 7 recomputed.
    const Schedule s = Schedule::sequential(29, 4);
    QCOMPARE(s.forwardCount(), std::int64_t(29 + 3 * 7));
    const auto perStage = s.forwardsPerStage();
    QCOMPARE(perStage[0], 2);
    QCOMPARE(perStage[20], 2);
    QCOMPARE(perStage[21], 1); // the last segment runs once
    QCOMPARE(Schedule::storeAll(29).forwardCount(), std::int64_t(29));
}

void TestCheckpointing::simulationReplaysRealAllocations_data()
{
    QTest::addColumn<QString>("model");
    QTest::addColumn<QString>("schedule");
    QTest::addColumn<int>("threads");
    for (const char *schedule : {"store-all", "sequential:3", "revolve:2"})
        for (int threads : {1, 2}) {
            QTest::addRow("resnet20 %s %dT", schedule, threads)
                << "resnet20" << schedule << threads;
            QTest::addRow("lenet5 %s %dT", schedule, threads) << "lenet5" << schedule << threads;
        }
}

void TestCheckpointing::simulationReplaysRealAllocations()
{
    QFETCH(QString, model);
    QFETCH(QString, schedule);
    QFETCH(int, threads);
    setThreadCount(threads);
    Model m(Zoo::spec(model.toStdString()), 1);
    const Schedule s = Schedule::parse(schedule.toStdString(), int(m.stageCount()));
    const std::vector<std::int32_t> labels(8, 1);

    auto &global = MemoryAccountant::global();
    global.resetPeaks();
    const MemorySnapshot before = global.snapshot();
    {
        Tensor x = tests::randomTensor(m.batchShape(8), 2);
        m.forwardBackward(x, labels.data(), {}, &s);
    }
    const MemorySnapshot after = global.snapshot();

    MemorySimulation sim;
    {
        Tensor x(m.batchShape(8), MemoryCategory::Activations);
        QVERIFY(x.isVirtual());
        m.forwardBackward(x, labels.data(), {}, &s);
    }
    const MemorySnapshot simulated = sim.accountant().snapshot();
    QCOMPARE(simulated.peak_total_bytes, after.peak_total_bytes - before.current_total_bytes);
    for (auto c : {MemoryCategory::Activations, MemoryCategory::Workspace})
        QCOMPARE(simulated.peak_bytes[std::size_t(c)],
                 after.peak_bytes[std::size_t(c)] - before.current_bytes[std::size_t(c)]);
    QCOMPARE(simulated.current_total_bytes, std::int64_t(0)); // everything released again
}

void TestCheckpointing::invalidProgramsAreRefused()
{
    setThreadCount(1);
    Model m(Zoo::spec("lenet5"), 1);
    const int L = int(m.stageCount());
    const Tensor x = tests::randomTensor(m.batchShape(2), 1);
    const std::vector<std::int32_t> labels{1, 2};
    auto expect = [&](std::vector<ScheduleOp> ops, const char *fragment) {
        const Schedule s = Schedule::fromOps("bad", L, std::move(ops));
        try {
            m.forwardBackward(x, labels.data(), {}, &s);
            QFAIL("accepted");
        } catch (const Error &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String(fragment)), e.what());
        }
    };
    expect({{ScheduleOp::ForwardCache, 0}, {ScheduleOp::Backward, 0}},
           "op 1: backward of stage 0 needs the gradient at 1 (no loss yet)");
    expect({{ScheduleOp::ForwardKeep, 1}}, "op 0: stage 1 needs x[1]");
    expect({{ScheduleOp::Loss, L}}, "the loss needs the logits");
    expect({{ScheduleOp::Discard, 0}}, "cannot be discarded");
    expect({{ScheduleOp::ForwardKeep, 0}}, "ends before the gradient reaches the input");
    const Schedule wrongSize = Schedule::storeAll(L + 1);
    QVERIFY_THROWS_EXCEPTION(Error, m.forwardBackward(x, labels.data(), {}, &wrongSize));
}

void TestCheckpointing::parseSchedules()
{
    QCOMPARE(Schedule::parse("sequential:4", 29).name(), std::string("sequential:4"));
    QCOMPARE(Schedule::parse("revolve:3", 29).name(), std::string("revolve:3"));
    QCOMPARE(Schedule::parse("store-all", 29).forwardCount(), std::int64_t(29));
    for (const char *bad :
         {"sequential:0", "sequential:30", "revolve:-1", "revolve", "seq:2", "revolve:2x"})
        QVERIFY_THROWS_EXCEPTION(SpecError, Schedule::parse(bad, 29));
}

QTEST_APPLESS_MAIN(TestCheckpointing)
#include "tst_checkpointing.moc"

// Fused tile groups: a model whose first stages run tile by tile gives the untiled model's loss,
// gradients and batch-norm statistics (max relative error <= 1e-4) for every layer kind a group
// takes, odd map sizes, strides 1 and 2 and grids from 1x2 to 4x4; its peak activation memory
// falls with the grid; the geometry's halos are exactly what the layers' windows need.

#include "core/chainexecutor.h"
#include "core/conv2d.h"
#include "core/detectionloss.h"
#include "core/error.h"
#include "core/memoryplanner.h"
#include "core/memorysimulation.h"
#include "core/model.h"
#include "core/parallel.h"
#include "core/tiledstage.h"
#include "core/tilingplanner.h"
#include "core/zoo.h"
#include "gradcheck.h"

#include <QTest>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <thread>

using namespace edgetrain;
using namespace edgetrain::core;

namespace {

struct Snapshot
{
    double loss = 0.0;
    std::vector<std::vector<float>> grads; // by parameter
    std::vector<std::string> names;
    std::vector<float> state; // batch-norm running statistics
};

Snapshot step(Model &model, const Tensor &x, const std::vector<std::int32_t> &labels,
              const Schedule *schedule = nullptr)
{
    PassContext ctx;
    ctx.seed = 5;
    Snapshot s;
    s.loss = model.forwardBackward(x, labels.data(), ctx, schedule).loss;
    for (const auto &p : model.parameters()) {
        s.names.push_back(p.name);
        s.grads.emplace_back(p.parameter->grad.data(),
                             p.parameter->grad.data() + p.parameter->grad.numel());
    }
    for (const auto &b : model.buffers())
        if (b.buffer.tensor)
            s.state.insert(s.state.end(), b.buffer.tensor->data(),
                           b.buffer.tensor->data() + b.buffer.tensor->numel());
    return s;
}

/** max |a - b| / max |a| over one parameter's gradient (0 for an all-zero reference). */
double relativeError(const std::vector<float> &a, const std::vector<float> &b)
{
    double diff = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, double(std::abs(a[i] - b[i])));
        scale = std::max(scale, double(std::abs(a[i])));
    }
    return scale > 0.0 ? diff / scale : diff;
}

/** Compares every gradient; fails naming the worst parameter. */
void compare(const Snapshot &a, const Snapshot &b, double tolerance)
{
    QCOMPARE(b.grads.size(), a.grads.size());
    QVERIFY(std::abs(a.loss - b.loss) <= tolerance * std::max(1.0, std::abs(a.loss)));
    for (std::size_t i = 0; i < a.grads.size(); ++i) {
        const double e = relativeError(a.grads[i], b.grads[i]);
        QVERIFY2(e <= tolerance, qPrintable(QStringLiteral("%1: relative error %2")
                                                .arg(QString::fromStdString(a.names[i]))
                                                .arg(e)));
    }
    QCOMPARE(b.state.size(), a.state.size());
    for (std::size_t i = 0; i < a.state.size(); ++i)
        QVERIFY2(std::abs(a.state[i] - b.state[i]) <= 1e-4 * std::max(1.0f, std::abs(a.state[i])),
                 "running statistics differ");
}

/** A small classifier whose first stages are `early` (JSON stage entries), then a head. */
ModelSpec classifier(const std::string &early, int height, int width)
{
    return ModelSpec::fromJson(Json::parse(R"({"name": "tiling-case", "input": [3, )" +
                                           std::to_string(height) + ", " + std::to_string(width) +
                                           R"(], "stages": [)" + early +
                                           R"(, {"type": "global_avg_pool"}, {"type": "flatten"},
            {"type": "linear", "out_features": 4}]})"));
}

const char *kConvBnRelu = R"({"type": "sequential", "name": "%1", "layers": [
    {"type": "conv2d", "name": "conv", "out_channels": 6, "kernel": %2, "stride": %3,
     "padding": %4, "dilation": %5, "bias": false},
    {"type": "batchnorm2d", "name": "bn"}, {"type": "relu", "name": "relu"}]})";

std::string convBnRelu(const char *name, int kernel, int stride, int padding, int dilation = 1)
{
    return QString::fromLatin1(kConvBnRelu)
        .arg(QLatin1String(name))
        .arg(kernel)
        .arg(stride)
        .arg(padding)
        .arg(dilation)
        .toStdString();
}

/** Ranks on threads of this process summing through shared slots: gloo's allreduce, in order. */
struct InProcessTeam
{
    explicit InProcessTeam(int n)
        : size(n), sync(n), doubles(std::size_t(n)), floats(std::size_t(n))
    {}
    template <typename T>
    void sum(std::vector<std::vector<T>> &slots, int rank, T *data, std::size_t n)
    {
        slots[std::size_t(rank)].assign(data, data + n);
        sync.arrive_and_wait();
        for (std::size_t i = 0; i < n; ++i) {
            T total = 0;
            for (const auto &slot : slots)
                total += slot[i];
            data[i] = total; // the same order on every rank: the same sums
        }
        sync.arrive_and_wait();
    }
    TiledStage::TileTeam member(int rank)
    {
        return {rank, size, [this, rank](double *d, std::size_t n) { sum(doubles, rank, d, n); },
                [this, rank](float *d, std::size_t n) { sum(floats, rank, d, n); }};
    }
    int size;
    std::barrier<> sync;
    std::vector<std::vector<double>> doubles;
    std::vector<std::vector<float>> floats;
};

} // namespace

class TestTiling : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void gradientsEqualUntiled_data();
    void gradientsEqualUntiled();
    void normParametersAndMovedWeights();
    void inputGradientEqualsUntiled();
    void evaluationEqualsUntiled();
    void detectorAndResnetStemEqualUntiled();
    void checkpointingOverTheGroup();
    void teamSplitsTheTiles_data();
    void teamSplitsTheTiles();
    void memoryFallsWithTheGrid();
    void geometryCoversExactlyTheHalo();
    void refusesWhatItCannotTile();
};

void TestTiling::gradientsEqualUntiled_data()
{
    QTest::addColumn<QString>("early");
    QTest::addColumn<int>("stages");
    QTest::addColumn<int>("height");
    QTest::addColumn<int>("width");
    const auto add = [](const char *name, const std::string &early, int stages, int h, int w) {
        QTest::addRow("%s", name) << QString::fromStdString(early) << stages << h << w;
    };
    add("conv3 s1", convBnRelu("0", 3, 1, 1), 1, 23, 17);
    add("conv3 s2", convBnRelu("0", 3, 2, 1), 1, 23, 17);
    add("conv5 s2 p2", convBnRelu("0", 5, 2, 2), 1, 25, 19);
    add("conv3 dilation 2", convBnRelu("0", 3, 1, 2, 2), 1, 21, 18);
    add("conv3 no padding", convBnRelu("0", 3, 1, 0), 1, 22, 19);
    add("conv s2 then s1", convBnRelu("0", 3, 2, 1) + ", " + convBnRelu("1", 3, 1, 1), 2, 29, 23);
    add("three blocks s2 s2 s1",
        convBnRelu("0", 3, 2, 1) + ", " + convBnRelu("1", 3, 2, 1) + ", " +
            convBnRelu("2", 3, 1, 1),
        3, 35, 27);
    add("maxpool k2 s2", convBnRelu("0", 3, 1, 1) + R"(, {"type": "maxpool2d", "kernel": 2,
        "stride": 2, "padding": 0})",
        2, 21, 19);
    add("maxpool k3 s2 p1", convBnRelu("0", 3, 1, 1) + R"(, {"type": "maxpool2d", "kernel": 3,
        "stride": 2, "padding": 1})",
        2, 22, 17);
    add("avgpool k3 s1 p1", convBnRelu("0", 3, 1, 1) + R"(, {"type": "avgpool2d", "kernel": 3,
        "stride": 1, "padding": 1})",
        2, 19, 21);
    add("avgpool k2 s2", convBnRelu("0", 3, 1, 1) + R"(, {"type": "avgpool2d", "kernel": 2,
        "stride": 2, "padding": 0})",
        2, 20, 23);
    add("group ending in a norm without a ReLU",
        R"({"type": "conv2d", "out_channels": 5, "kernel": 3, "stride": 2, "padding": 1,
        "bias": false}, {"type": "batchnorm2d"})",
        2, 21, 19);
    add("conv with bias, no norm", R"({"type": "conv2d", "out_channels": 5, "kernel": 3,
        "stride": 2, "padding": 1}, {"type": "relu"}, {"type": "conv2d", "out_channels": 5,
        "kernel": 3, "stride": 1, "padding": 1})",
        3, 23, 21);
}

void TestTiling::gradientsEqualUntiled()
{
    QFETCH(QString, early);
    QFETCH(int, stages);
    QFETCH(int, height);
    QFETCH(int, width);
    setThreadCount(2);
    const ModelSpec spec = classifier(early.toStdString(), height, width);
    const std::vector<std::int32_t> labels{0, 1, 2, 3, 1};
    Model reference(spec, 3);
    const Tensor x = tests::randomTensor(reference.batchShape(5), 8);
    const Snapshot a = step(reference, x, labels);
    for (const auto &[rows, cols] :
         {std::pair{1, 2}, std::pair{2, 1}, std::pair{1, 4}, std::pair{4, 1}, std::pair{2, 2},
          std::pair{2, 3}, std::pair{3, 3}, std::pair{3, 4}, std::pair{4, 4}}) {
        Model tiled(spec, 3);
        tiled.setTiling(stages, rows, cols);
        QCOMPARE(int(tiled.stageCount()), int(reference.stageCount()) - stages + 1);
        const Snapshot b = step(tiled, x, labels);
        QVERIFY(b.names == a.names); // the same parameters, by name
        compare(a, b, 1e-4);
        if (QTest::currentTestFailed())
            qWarning("grid %dx%d", rows, cols);
    }
}

void TestTiling::normParametersAndMovedWeights()
{
    // The norms' scale and shift as training leaves them — negative, and small against the
    // shift (x-hat then cannot be read back from the output: the group takes a backward pass for
    // it) — then once more after an SGD step has moved every weight. Where a gradient is a sum
    // that cancels, the untiled engine itself is only so exact: the bar is 1e-4 or ten times
    // what it differs by from itself with the other convolution backend (the same sums in
    // another order, as the tiles' crops give), whichever is larger.
    setThreadCount(2);
    const ModelSpec spec =
        classifier(convBnRelu("0", 3, 2, 1) + ", " + convBnRelu("1", 3, 1, 1), 27, 22);
    const std::vector<std::int32_t> labels{3, 1, 0};
    const Tensor x = tests::randomTensor(Model(spec, 11).batchShape(3), 12);
    for (const auto &[scale, shift] :
         {std::pair{-0.7f, 0.5f}, std::pair{0.05f, 1.5f}, std::pair{1e-2f, 2.0f}}) {
        std::vector<std::unique_ptr<Model>> models; // reference, other backend, tiled
        for (int i = 0; i < 3; ++i) {
            models.push_back(std::make_unique<Model>(spec, 11));
            for (const auto &p : models.back()->parameters())
                if (p.name.find(".bn.") != std::string::npos)
                    for (std::int64_t c = 0; c < p.parameter->value.numel(); ++c)
                        p.parameter->value.data()[c] =
                            p.name.ends_with("weight") ? scale * (c % 2 ? 1.0f : -1.5f) : shift;
        }
        models[2]->setTiling(2, 3, 2);
        for (int round = 0; round < 2; ++round) {
            const Snapshot a = step(*models[0], x, labels);
            const ConvBackend backend = convBackend();
            for (ConvBackend other :
                 {ConvBackend::Im2col, ConvBackend::Dnnl, ConvBackend::Winograd})
                if (other != backend) {
                    try { // a build without oneDNN has im2col alone: then the bar is 1e-4
                        setConvBackend(other);
                        break;
                    } catch (const SpecError &) {
                    }
                }
            const Snapshot layers = step(*models[1], x, labels);
            setConvBackend(backend);
            const Snapshot b = step(*models[2], x, labels);
            for (std::size_t i = 0; i < a.grads.size(); ++i) {
                const double bar =
                    std::max(1e-4, 10.0 * relativeError(a.grads[i], layers.grads[i]));
                const double e = relativeError(a.grads[i], b.grads[i]);
                QVERIFY2(e <= bar, qPrintable(QStringLiteral("gamma %1, beta %2, round %3: %4 "
                                                             "relative error %5 (bar %6)")
                                                  .arg(double(scale))
                                                  .arg(double(shift))
                                                  .arg(round)
                                                  .arg(QString::fromStdString(a.names[i]))
                                                  .arg(e)
                                                  .arg(bar)));
            }
            for (auto &m : models) // a step of plain SGD, each on its own gradients
                for (const auto &p : m->parameters())
                    for (std::int64_t k = 0; k < p.parameter->value.numel(); ++k)
                        p.parameter->value.data()[k] -= 0.5f * p.parameter->grad.data()[k];
        }
    }
}

void TestTiling::inputGradientEqualsUntiled()
{
    // A group that is not first in the chain passes its input gradient on: the tiles' halos
    // overlap and their shares of it add up.
    setThreadCount(1);
    const ModelSpec spec =
        classifier(convBnRelu("0", 3, 2, 1) + ", " + convBnRelu("1", 3, 1, 1), 19, 23);
    Model reference(spec, 4), tiledModel(spec, 4);
    tiledModel.setTiling(2, 3, 2);
    const Tensor x = tests::randomTensor(reference.batchShape(3), 9);
    const Tensor dy = tests::randomTensor(
        reference.stage(1).outputShape(reference.stage(0).outputShape(x.shape())), 10);
    PassContext ctx;
    StageCache c0, c1, ct;
    const Tensor h = reference.stage(0).forward(x, &c0, ctx);
    reference.stage(1).forward(h, &c1, ctx);
    const Tensor g1 = reference.stage(1).backward(dy, c1, ctx, true);
    const Tensor dxRef = reference.stage(0).backward(g1, c0, ctx, true);
    tiledModel.stage(0).forward(x, &ct, ctx);
    const Tensor dx = tiledModel.stage(0).backward(dy, ct, ctx, true);
    QCOMPARE(dx.shape(), dxRef.shape());
    const std::vector<float> a(dxRef.data(), dxRef.data() + dxRef.numel());
    const std::vector<float> b(dx.data(), dx.data() + dx.numel());
    QVERIFY2(relativeError(a, b) <= 1e-4, qPrintable(QString::number(relativeError(a, b))));
}

void TestTiling::evaluationEqualsUntiled()
{
    setThreadCount(2);
    const ModelSpec spec = classifier(convBnRelu("0", 3, 2, 1) + ", " + convBnRelu("1", 3, 1, 1) +
                                          R"(, {"type": "maxpool2d", "kernel": 3, "stride": 2,
                                          "padding": 1})",
                                      31, 26);
    Model reference(spec, 5), tiled(spec, 5);
    tiled.setTiling(3, 4, 3);
    const std::vector<std::int32_t> labels{1, 2, 3};
    const Tensor x = tests::randomTensor(reference.batchShape(3), 2);
    step(reference, x, labels); // running statistics move away from 0 and 1
    step(tiled, x, labels);
    PassContext eval;
    eval.training = false;
    const Tensor a = reference.forward(x, eval), b = tiled.forward(x, eval);
    QVERIFY(relativeError({a.data(), a.data() + a.numel()}, {b.data(), b.data() + b.numel()}) <=
            1e-5);
}

void TestTiling::detectorAndResnetStemEqualUntiled()
{
    setThreadCount(2);
    {
        const ModelSpec spec = Zoo::spec("detector").withInputShape({3, 48, 64});
        const int width = spec.labelWidth(), maxObjects = spec.loss().centernet.max_objects;
        std::vector<std::int32_t> labels(std::size_t(2 * width));
        for (int n = 0; n < 2; ++n)
            DetectionLoss::encode({{4.0f + n, 6.0f, 30.0f, 40.0f, false}}, maxObjects,
                                  labels.data() + n * width);
        Model reference(spec, 3);
        const Tensor x = tests::randomTensor(reference.batchShape(2), 8);
        const Snapshot a = step(reference, x, labels);
        for (int group : {2, 4}) {
            Model tiled(spec, 3);
            tiled.setTiling(group, 2, 2);
            compare(a, step(tiled, x, labels), 1e-4);
        }
    }
    {
        const ModelSpec spec = Zoo::spec("resnet18").withInputShape({3, 64, 48});
        Model reference(spec, 3), tiled(spec, 3);
        tiled.setTiling(1, 4, 4);
        const std::vector<std::int32_t> labels{7, 300};
        const Tensor x = tests::randomTensor(reference.batchShape(2), 8);
        compare(step(reference, x, labels), step(tiled, x, labels), 1e-4);
    }
}

void TestTiling::checkpointingOverTheGroup()
{
    // The group is one stage of the chain: a schedule that recomputes it gives the same step and
    // does not move the running statistics twice.
    setThreadCount(2);
    const ModelSpec spec = classifier(convBnRelu("0", 3, 2, 1) + ", " + convBnRelu("1", 3, 1, 1) +
                                          ", " + convBnRelu("2", 3, 1, 1),
                                      25, 25);
    Model plain(spec, 6), tiled(spec, 6);
    tiled.setTiling(2, 2, 2);
    const std::vector<std::int32_t> labels{0, 3};
    const Tensor x = tests::randomTensor(plain.batchShape(2), 3);
    const Snapshot a = step(plain, x, labels);
    const Schedule s = Schedule::parse("revolve:0", int(tiled.stageCount()));
    QVERIFY(s.forwardsPerStage().front() > 1);
    compare(a, step(tiled, x, labels, &s), 1e-4);
}

void TestTiling::teamSplitsTheTiles_data()
{
    QTest::addColumn<int>("ranks");
    QTest::addColumn<int>("stages");
    QTest::newRow("2 ranks, norm last (its sums from the output)") << 2 << 2;
    QTest::newRow("3 ranks, pooling last") << 3 << 3;
    QTest::newRow("5 ranks, more ranks than some rows of tiles") << 5 << 3;
}

void TestTiling::teamSplitsTheTiles()
{
    // Devices splitting one group's tiles: each gets the whole output, the moments and sums
    // travel through the team, and the ranks' gradients add up to the untiled ones.
    QFETCH(int, ranks);
    QFETCH(int, stages);
    const ModelSpec spec = classifier(convBnRelu("0", 3, 2, 1) + ", " + convBnRelu("1", 3, 1, 1) +
                                          R"(, {"type": "maxpool2d", "kernel": 3, "stride": 2,
                                          "padding": 1})",
                                      37, 29);
    Model reference(spec, 7);
    const Tensor x = tests::randomTensor(reference.batchShape(3), 4);
    Shape outShape = x.shape();
    for (int i = 0; i < stages; ++i)
        outShape = reference.stage(std::size_t(i)).outputShape(outShape);
    const Tensor dy = tests::randomTensor(outShape, 5);
    PassContext ctx;
    std::vector<StageCache> caches(static_cast<std::size_t>(stages));
    std::vector<Tensor> hs{x};
    for (int i = 0; i < stages; ++i)
        hs.push_back(
            reference.stage(std::size_t(i)).forward(hs.back(), &caches[std::size_t(i)], ctx));
    Tensor g = dy;
    for (int i = stages; i-- > 0;)
        g = reference.stage(std::size_t(i)).backward(g, caches[std::size_t(i)], ctx, i > 0);
    const auto named = reference.parameters();
    InProcessTeam team(ranks);
    std::vector<std::unique_ptr<Model>> models;
    for (int r = 0; r < ranks; ++r) {
        models.push_back(std::make_unique<Model>(spec, 7));
        models.back()->setTiling(stages, 3, 3);
        static_cast<TiledStage &>(models.back()->stage(0)).setTeam(team.member(r));
    }
    std::vector<Tensor> outputs(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r)
        threads.emplace_back([&, r] {
            setThreadCount(1);
            StageCache cache;
            Stage &group = models[std::size_t(r)]->stage(0);
            outputs[std::size_t(r)] = group.forward(x, &cache, ctx);
            group.backward(dy, cache, ctx, false);
        });
    for (auto &t : threads)
        t.join();
    const Tensor &y = hs.back();
    for (const Tensor &o : outputs)
        QVERIFY(relativeError({y.data(), y.data() + y.numel()}, {o.data(), o.data() + o.numel()}) <=
                1e-5);
    const std::size_t groupParams = [&] {
        std::size_t n = 0;
        models.front()->stage(0).forEachLayer(
            [&](const std::string &, Layer &l) { n += l.parameters().size(); });
        return n;
    }();
    for (std::size_t i = 0; i < groupParams; ++i) {
        const Tensor &want = named[i].parameter->grad;
        std::vector<float> sum(std::size_t(want.numel()), 0.0f);
        for (const auto &m : models) {
            const Tensor &part = m->parameters()[i].parameter->grad;
            for (std::size_t k = 0; k < sum.size(); ++k)
                sum[k] += part.data()[k];
        }
        const double e = relativeError({want.data(), want.data() + want.numel()}, sum);
        QVERIFY2(
            e <= 1e-4,
            qPrintable(QStringLiteral("%1: %2").arg(QString::fromStdString(named[i].name)).arg(e)));
    }
    for (const auto &m : models) // every rank moved its running statistics alike
        for (std::size_t b = 0; b < m->buffers().size(); ++b)
            if (const Tensor *t = m->buffers()[b].buffer.tensor)
                QVERIFY(relativeError({reference.buffers()[b].buffer.tensor->data(),
                                       reference.buffers()[b].buffer.tensor->data() + t->numel()},
                                      {t->data(), t->data() + t->numel()}) <= 1e-5);
}

void TestTiling::memoryFallsWithTheGrid()
{
    // Under a memory simulation (the planner's own prediction): the early group's peak, beyond
    // its input and output, falls with the grid — at 4x4 more than fourfold for the detector's
    // first two blocks at 768x576 and ResNet-18's stem at 224x224.
    setThreadCount(1);
    for (const auto &[name, input, stages] : {std::tuple{"detector", Shape{3, 576, 768}, 2},
                                              std::tuple{"resnet18", Shape{3, 224, 224}, 1}}) {
        Model model(Zoo::spec(name).withInputShape(input), 1);
        auto peak = [&](int rows, int cols) {
            model.setTiling(stages, rows, cols);
            return groupPeakBytes(model, stages, 2);
        };
        const std::int64_t plain = peak(1, 1), two = peak(2, 2), four = peak(4, 4);
        QVERIFY2(two < plain && four < two && 4 * four <= plain,
                 qPrintable(QStringLiteral("%1: %2 %3 %4")
                                .arg(QLatin1String(name))
                                .arg(plain)
                                .arg(two)
                                .arg(four)));
    }
    // The plan as a whole: tiling is chosen only where it pays — never for a budget the untiled
    // step fits, and where a budget is below what any untiled schedule needs (ResNet-18's stem
    // at batch 8 sets that floor), it makes it fit.
    Model resnet(Zoo::spec("resnet18"), 1);
    const TiledPlan roomy =
        planTiling(resnet, 8, std::int64_t(4) << 30, std::nullopt, std::nullopt);
    QVERIFY(!roomy.tiling.active());
    QVERIFY(!resnet.tiling().active());
    MemoryPlanner untiled(resnet, 8);
    const std::int64_t floor = untiled.minimumBudget();
    const TiledPlan tight = planTiling(resnet, 8, floor * 9 / 10, std::nullopt, std::nullopt);
    QVERIFY(tight.plan.fits);
    QVERIFY(tight.tiling.active());
    QVERIFY(resnet.tiling().active());
    QVERIFY(tight.group_peak_bytes < tight.untiled_group_peak_bytes);
    QVERIFY(tight.predicted_step_factor > 1.0);
}

void TestTiling::geometryCoversExactlyTheHalo()
{
    // Three 3x3 convolutions at stride 1: a core needs one more row on each side per layer.
    const TileLayerWindow conv{{3, 1, 1, 1}, {3, 1, 1, 1}, false};
    const TileGeometry g({conv, conv, conv}, 40, 40, 4, 4);
    for (const TileSteps &t : g.tiles()) {
        const Span core = splitSpan(40, t.row, 4);
        QCOMPARE(t.rows.back().output, core);
        QCOMPARE(t.rows.front().input.begin, std::max<std::int64_t>(0, core.begin - 3));
        QCOMPARE(t.rows.front().input.end, std::min<std::int64_t>(40, core.end + 3));
    }
    QCOMPARE(g.inputOverlap(), (13.0 + 16 + 16 + 13) * (13.0 + 16 + 16 + 13) / (40.0 * 40.0));
    // Stride 2: a crop starts on a multiple of the stride, so its outputs line up with the map's.
    const TileLayerWindow down{{3, 2, 1, 1}, {3, 2, 1, 1}, false};
    const TileGeometry s({down, down}, 37, 29, 3, 2);
    for (const TileSteps &t : s.tiles())
        for (std::size_t l = 0; l < 2; ++l) {
            QCOMPARE(t.rows[l].input.begin % 2, 0);
            QCOMPARE(t.rows[l].outputOrigin * 2, t.rows[l].input.begin);
            QVERIFY(t.rows[l].output.begin >= t.rows[l].outputOrigin);
        }
    // Owned parts of a batch norm partition its map.
    const TileLayerWindow norm{{}, {}, true};
    const TileGeometry n({down, norm, down}, 33, 33, 3, 3);
    std::int64_t owned = 0;
    for (const TileSteps &t : n.tiles())
        owned += t.rows[1].owned.size() * t.cols[1].owned.size();
    QCOMPARE(owned, n.height(1) * n.width(1));
    QVERIFY_THROWS_EXCEPTION(SpecError, TileGeometry({down, down}, 16, 16, 5, 1));
}

void TestTiling::refusesWhatItCannotTile()
{
    Model resnet(Zoo::spec("resnet20"), 1);
    try {
        resnet.setTiling(2, 2, 2);
        QFAIL("a residual block was tiled");
    } catch (const SpecError &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("basic_block")), e.what());
    }
    QCOMPARE(int(resnet.stageCount()), int(Model(Zoo::spec("resnet20"), 1).stageCount()));
    Model mlp(Zoo::spec("mlp"), 1);
    QVERIFY_THROWS_EXCEPTION(SpecError, mlp.setTiling(1, 2, 2));
    Model detector(Zoo::spec("detector").withInputShape({3, 16, 16}), 1);
    QVERIFY_THROWS_EXCEPTION(SpecError, detector.setTiling(4, 4, 4)); // output 2x2
    detector.setTiling(2, 2, 2);
    QVERIFY(detector.tiling().active());
    detector.setTiling(0, 1, 1);
    QVERIFY(!detector.tiling().active());
    QCOMPARE(int(detector.stageCount()), 9);
}

QTEST_APPLESS_MAIN(TestTiling)
#include "tst_tiling.moc"

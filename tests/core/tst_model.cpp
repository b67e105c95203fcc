// Whole models: the zoo matches ../shared/bench/models.py, every zoo model trains a step,
// gradients of small whole models match finite differences, results are deterministic, and
// weights survive a safetensors round trip.

#include "core/error.h"
#include "core/model.h"
#include "core/parallel.h"
#include "core/safetensors.h"
#include "core/sgd.h"
#include "core/tensordataset.h"
#include "core/trainer.h"
#include "core/weightaverage.h"
#include "core/zoo.h"
#include "gradcheck.h"

#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace edgetrain;
using namespace edgetrain::core;

namespace {

/** A small spec touching every layer type, for whole-model checks. */
ModelSpec tinySpec()
{
    return ModelSpec::fromJson(Json::parse(R"({"name": "tiny", "input": [3, 9, 9], "stages": [
        {"type": "conv2d", "out_channels": 4, "kernel": 3, "padding": 1, "bias": false},
        {"type": "batchnorm2d"}, {"type": "relu"},
        {"type": "basic_block", "out_channels": 4},
        {"type": "basic_block", "out_channels": 6, "stride": 2, "shortcut": "pad"},
        {"type": "bottleneck", "out_channels": 8, "width": 2, "stride": 1},
        {"type": "avgpool2d", "kernel": 3, "stride": 1, "padding": 1},
        {"type": "maxpool2d", "kernel": 2},
        {"type": "sequential", "name": "head", "layers": [
            {"type": "flatten"}, {"type": "dropout", "p": 0.2},
            {"type": "linear", "out_features": 5, "name": "fc"}]}]})",
                                           "tiny"),
                               "tiny");
}

std::vector<float> flatWeights(Model &m)
{
    std::vector<float> out;
    for (const auto &p : m.parameters())
        out.insert(out.end(), p.parameter->value.data(),
                   p.parameter->value.data() + p.parameter->value.numel());
    return out;
}

/** Loss of a full-batch forward in training mode; used for the whole-model finite differences. */
double trainLoss(Model &m, const Tensor &x, const std::vector<std::int32_t> &labels)
{
    PassContext ctx;
    ctx.recompute = true;
    ctx.seed = 1; // the same dropout masks as the analytic pass
    const Tensor logits = m.forward(x, ctx);
    double loss = 0.0;
    for (std::int64_t n = 0; n < logits.dim(0); ++n) {
        const float *z = logits.data() + n * logits.dim(1);
        double mx = z[0], sum = 0.0;
        for (std::int64_t k = 1; k < logits.dim(1); ++k)
            mx = std::max(mx, double(z[k]));
        for (std::int64_t k = 0; k < logits.dim(1); ++k)
            sum += std::exp(double(z[k]) - mx);
        loss += std::log(sum) + mx - z[labels[std::size_t(n)]];
    }
    return loss / double(logits.dim(0));
}

} // namespace

class TestModel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void zooMatchesPyTorchReference_data();
    void zooMatchesPyTorchReference();
    void everyZooModelTrainsAStep_data();
    void everyZooModelTrainsAStep();
    void wholeModelGradients();
    void deterministicForSeedAndThreads();
    void weightAverageFollowsTheSteps();
    void finishAfterEndsARunFinished();
    void safetensorsRoundTrip_data();
    void safetensorsRoundTrip();
    void specRoundTrip();
    void activationsAreReleasedAfterAStep();
};

void TestModel::zooMatchesPyTorchReference_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<qint64>("parameters");
    QTest::addColumn<qint64>("macsPerImage"); // conv + linear, as models.py counts them
    QTest::addColumn<QString>("firstName");
    QTest::addColumn<QString>("lastName");
    // Figures printed by `/usr/bin/python3 ../shared/bench/models.py`; torchvision's ImageNet
    // ResNet parameter counts (resnet18 11,689,512, resnet50 25,557,032, resnet152 60,192,808).
    QTest::newRow("mlp") << "mlp" << qint64(535818) << qint64(535040) << "1.weight"
                         << "5.bias";
    QTest::newRow("lenet5") << "lenet5" << qint64(61706) << qint64(416520) << "0.weight"
                            << "11.bias";
    QTest::newRow("resnet20") << "resnet20" << qint64(269722) << qint64(40551040) << "0.0.weight"
                              << "10.fc.bias";
    QTest::newRow("resnet32") << "resnet32" << qint64(464154) << qint64(68862592) << "0.0.weight"
                              << "16.fc.bias";
    QTest::newRow("resnet56") << "resnet56" << qint64(853018) << qint64(125485696) << "0.0.weight"
                              << "28.fc.bias";
    QTest::newRow("resnet110") << "resnet110" << qint64(1727962) << qint64(252887680)
                               << "0.0.weight"
                               << "55.fc.bias";
    QTest::newRow("resnet18") << "resnet18" << qint64(11689512) << qint64(0) << "conv1.weight"
                              << "fc.bias";
    QTest::newRow("resnet50") << "resnet50" << qint64(25557032) << qint64(0) << "conv1.weight"
                              << "fc.bias";
    QTest::newRow("resnet152") << "resnet152" << qint64(60192808) << qint64(0) << "conv1.weight"
                               << "fc.bias";
}

void TestModel::zooMatchesPyTorchReference()
{
    QFETCH(QString, name);
    QFETCH(qint64, parameters);
    QFETCH(qint64, macsPerImage);
    QFETCH(QString, firstName);
    QFETCH(QString, lastName);
    Model model(Zoo::spec(name.toStdString()), 0);
    QCOMPARE(model.parameterCount(), parameters);
    const auto params = model.parameters();
    QCOMPARE(QString::fromStdString(params.front().name), firstName);
    QCOMPARE(QString::fromStdString(params.back().name), lastName);
    if (macsPerImage) {
        // forwardFlops also counts batch norm, ReLU and pooling; the conv + linear MACs dominate.
        const double flops = model.forwardFlops(1);
        QVERIFY2(flops >= 2.0 * double(macsPerImage) && flops < 2.0 * double(macsPerImage) * 1.02,
                 qPrintable(QStringLiteral("%1 FLOPs vs %2 MACs").arg(flops).arg(macsPerImage)));
    }
}

void TestModel::everyZooModelTrainsAStep_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("input");
    for (const auto &name : Zoo::names()) {
        // ImageNet ResNets at 64x64 here: the same code at a size a unit test can afford.
        const bool imagenet = Zoo::spec(name).inputShape()[1] == 224;
        QTest::newRow(name.c_str()) << QString::fromStdString(name) << (imagenet ? "3x64x64" : "");
    }
}

void TestModel::everyZooModelTrainsAStep()
{
    QFETCH(QString, name);
    QFETCH(QString, input);
    setThreadCount(2);
    ModelSpec spec = Zoo::spec(name.toStdString());
    if (!input.isEmpty())
        spec = spec.withInputShape(parseSampleShape(input.toStdString()));
    Model model(spec, 1);
    const Tensor x = tests::randomTensor(model.batchShape(4), 2);
    std::vector<std::int32_t> labels{0, 1, 2, 3};
    for (auto &l : labels)
        l %= model.classCount(); // the student has two classes
    if (spec.labelWidth() > 1) { // the detector: one box per frame
        const int maxObjects = spec.loss().centernet.max_objects;
        labels.assign(std::size_t(4 * spec.labelWidth()), 0);
        for (int n = 0; n < 4; ++n)
            DetectionLoss::encode({{20.0f + 10 * n, 30.0f, 60.0f + 10 * n, 90.0f, false}},
                                  maxObjects, labels.data() + n * spec.labelWidth());
    }
    Sgd sgd(model, {});
    PassContext ctx;
    const StepResult first = model.forwardBackward(x, labels.data(), ctx);
    QVERIFY(std::isfinite(first.loss) && first.loss > 0.0);
    for (const auto &p : model.parameters())
        for (std::int64_t i = 0; i < p.parameter->grad.numel(); ++i)
            QVERIFY2(std::isfinite(p.parameter->grad.data()[i]), p.name.c_str());
    sgd.step(0.01);
    const StepResult second = model.forwardBackward(x, labels.data(), ctx);
    QVERIFY2(second.loss < first.loss,
             qPrintable(QStringLiteral("%1 -> %2").arg(first.loss).arg(second.loss)));
}

void TestModel::wholeModelGradients()
{
    setThreadCount(2);
    Model model(tinySpec(), 3);
    const Tensor x = tests::randomTensor(model.batchShape(4), 5);
    const std::vector<std::int32_t> labels{0, 4, 2, 1};
    PassContext ctx;
    ctx.seed = 1;
    model.forwardBackward(x, labels.data(), ctx);
    Rng pick(9);
    int checked = 0, kinks = 0;
    double worst = 0.0;
    std::string where;
    for (const auto &p : model.parameters()) {
        Tensor &w = p.parameter->value;
        for (int k = 0; k < 6; ++k) {
            const auto i = std::int64_t(pick.below(std::uint64_t(w.numel())));
            const float saved = w.data()[i];
            const double eps = 1e-3;
            const double base = trainLoss(model, x, labels);
            w.data()[i] = saved + float(eps);
            const double plus = trainLoss(model, x, labels);
            w.data()[i] = saved - float(eps);
            const double minus = trainLoss(model, x, labels);
            w.data()[i] = saved;
            const double numeric = (plus - minus) / (2 * eps);
            const double tol = 2e-3 + 3e-2 * std::fabs(numeric);
            if (std::fabs((plus - base) - (base - minus)) / eps > tol) {
                ++kinks;
                continue;
            }
            const double err = std::fabs(p.parameter->grad.data()[i] - numeric) / tol;
            ++checked;
            if (err > worst) {
                worst = err;
                where = p.name + ": analytic " + std::to_string(p.parameter->grad.data()[i]) +
                        " numeric " + std::to_string(numeric);
            }
        }
    }
    QVERIFY(checked > 3 * kinks);
    QVERIFY2(worst <= 1.0, where.c_str());
}

void TestModel::deterministicForSeedAndThreads()
{
    auto train = [](int threads, std::uint64_t seed) {
        setThreadCount(threads);
        Model model(Zoo::spec("resnet20"), seed);
        Sgd sgd(model, {0.9, 5e-4, false});
        const Tensor x = tests::randomTensor(model.batchShape(8), 4);
        const std::vector<std::int32_t> labels{0, 1, 2, 3, 4, 5, 6, 7};
        for (int i = 0; i < 3; ++i) {
            model.forwardBackward(x, labels.data(), PassContext{});
            sgd.step(0.1);
        }
        return flatWeights(model);
    };
    const auto a = train(2, 7);
    const auto b = train(2, 7);
    QVERIFY(a == b); // bit for bit
    const auto c = train(2, 8);
    QVERIFY(a != c);
    const auto d = train(1, 7); // another thread count: same maths, other summation order
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, double(std::fabs(a[i] - d[i])));
    QVERIFY2(worst < 1e-3, qPrintable(QString::number(worst)));
}

void TestModel::finishAfterEndsARunFinished()
{
    // Early stopping's seam: finishAfter ends the run after the epoch it answers true for, and
    // the run is finished (not cancelled), every epoch it ran reported and evaluated.
    const Tensor x = tests::randomTensor(Shape{64, 1, 28, 28}, 5);
    std::vector<std::int32_t> labels(64);
    for (std::size_t i = 0; i < labels.size(); ++i)
        labels[i] = std::int32_t(i % 10);
    const std::vector<float> images(x.data(), x.data() + x.shape().numel());
    const TensorDataset data("random", Shape{1, 28, 28}, 10, images, labels);
    Model model(Zoo::spec("mlp"), 3);
    TrainOptions o;
    o.epochs = 6;
    o.batch = 16;
    o.lr = 0.05;
    std::vector<int> reported, asked;
    Trainer::Callbacks c;
    c.onEpoch = [&](const EpochStats &e) { reported.push_back(e.epoch); };
    c.finishAfter = [&](const EpochStats &e) {
        asked.push_back(e.epoch);
        return e.epoch == 3;
    };
    const TrainResult r = Trainer::run(model, data, &data, o, c);
    QVERIFY(!r.cancelled);
    QCOMPARE(int(r.epochs.size()), 3);
    QCOMPARE(reported, (std::vector<int>{1, 2, 3}));
    QCOMPARE(asked, (std::vector<int>{1, 2, 3}));
    QCOMPARE(r.images, std::int64_t(3 * 64));
    for (const EpochStats &e : r.epochs)
        QVERIFY(e.test_accuracy >= 0.0);
    // Never asked: every epoch.
    c.finishAfter = {};
    QCOMPARE(int(Trainer::run(model, data, &data, o, c).epochs.size()), 6);
}

void TestModel::weightAverageFollowsTheSteps()
{
    // Three SGD steps of the tiny model (batch norm: its running statistics are averaged too),
    // the average kept by hand alongside: a_1 = w_1, a_n = d_n a_(n-1) + (1 - d_n) w_n with
    // d_n = min(0.5, n / (9 + n)): the early steps' smaller decay (2/11 and 3/12 here).
    Model model(tinySpec(), 3);
    Sgd sgd(model, {0.9, 0.0, false});
    WeightAverage average(0.5);
    QVERIFY_THROWS_EXCEPTION(SpecError, WeightAverage(1.0));
    QVERIFY_THROWS_EXCEPTION(SpecError, WeightAverage(0.0));
    auto state = [](Model &m) {
        std::vector<float> out = flatWeights(m);
        for (const auto &b : m.buffers())
            if (b.buffer.tensor)
                out.insert(out.end(), b.buffer.tensor->data(),
                           b.buffer.tensor->data() + b.buffer.tensor->numel());
        return out;
    };
    const Tensor x = tests::randomTensor(model.batchShape(4), 5);
    const std::vector<std::int32_t> labels{0, 1, 2, 3};
    std::vector<double> expected;
    for (int n = 1; n <= 3; ++n) {
        model.forwardBackward(x, labels.data(), PassContext{});
        sgd.step(0.2);
        average.update(model);
        const std::vector<float> w = state(model);
        if (n == 1) {
            expected.assign(w.begin(), w.end());
        } else {
            const double d = std::min(0.5, double(n) / double(9 + n));
            for (std::size_t i = 0; i < w.size(); ++i)
                expected[i] = d * expected[i] + (1 - d) * w[i];
        }
    }
    QCOMPARE(average.updates(), std::int64_t(3));
    const std::vector<float> own = state(model);
    average.swap(model);
    const std::vector<float> averaged = state(model);
    QCOMPARE(averaged.size(), expected.size());
    double worst = 0.0, moved = 0.0;
    for (std::size_t i = 0; i < averaged.size(); ++i) {
        worst = std::max(worst, std::abs(double(averaged[i]) - expected[i]));
        moved = std::max(moved, std::abs(double(averaged[i]) - double(own[i])));
    }
    QVERIFY2(worst < 1e-6, qPrintable(QString::number(worst)));
    QVERIFY2(moved > 1e-4, "the average is the weights: the test would not see a mistake");
    average.swap(model); // back: the model's own weights, bit for bit
    QVERIFY(state(model) == own);
    Model other(tinySpec(), 4);
    average.copyTo(other);
    QVERIFY(state(other) == averaged);
    Model wrong(Zoo::spec("lenet5"), 1);
    QVERIFY_THROWS_EXCEPTION(ShapeError, average.update(wrong));
}

void TestModel::safetensorsRoundTrip_data()
{
    QTest::addColumn<QString>("name");
    QTest::newRow("tiny (every layer type)") << "tiny";
    QTest::newRow("lenet5") << "lenet5";
    QTest::newRow("resnet20") << "resnet20";
}

void TestModel::safetensorsRoundTrip()
{
    QFETCH(QString, name);
    setThreadCount(1);
    const ModelSpec spec =
        name == QLatin1String("tiny") ? tinySpec() : Zoo::spec(name.toStdString());
    Model trained(spec, 1);
    // Move the batch-norm running statistics away from their initial values first.
    const Tensor x = tests::randomTensor(trained.batchShape(4), 3);
    std::vector<std::int32_t> labels{0, 1, 2, 3};
    trained.forwardBackward(x, labels.data(), PassContext{});
    QTemporaryDir dir;
    const std::string path = (dir.path() + QStringLiteral("/w.safetensors")).toStdString();
    Safetensors::saveModel(trained, path);
    Model loaded(spec, 99); // other initial weights
    Safetensors::loadModel(loaded, path);
    QVERIFY(flatWeights(loaded) == flatWeights(trained));
    PassContext eval;
    eval.training = false;
    const Tensor a = trained.forward(x, eval), b = loaded.forward(x, eval);
    for (std::int64_t i = 0; i < a.numel(); ++i)
        QCOMPARE(a.data()[i], b.data()[i]);
    // The file carries the spec, so other tools know what the tensors are.
    const Safetensors file = Safetensors::read(path);
    QVERIFY(file.metadata().count("edgetrain.model_spec"));
    // Every parameter and buffer is in it under its PyTorch state_dict name.
    for (const auto &p : trained.parameters())
        QVERIFY2(file.find(p.name), p.name.c_str());
    for (const auto &buffer : trained.buffers())
        QVERIFY2(file.find(buffer.name), buffer.name.c_str());
    if (name == QLatin1String("lenet5")) // nn.Sequential's names, as ../shared/bench/models.py
        QVERIFY(file.find("0.weight") && file.find("0.bias"));
}

void TestModel::specRoundTrip()
{
    for (const auto &name : Zoo::names()) {
        const ModelSpec spec = Zoo::spec(name);
        const ModelSpec again = ModelSpec::fromJson(Json::parse(spec.toJson().dump(2)), name);
        QCOMPARE(again.toJson().dump(), spec.toJson().dump());
    }
}

void TestModel::activationsAreReleasedAfterAStep()
{
    setThreadCount(2);
    Model model(Zoo::spec("resnet20"), 1);
    Sgd sgd(model, {});
    auto &acc = MemoryAccountant::global();
    const Tensor x = tests::randomTensor(model.batchShape(8), 3);
    const auto before = acc.currentBytes(MemoryCategory::Activations);
    acc.resetPeaks();
    const std::vector<std::int32_t> labels(8, 1);
    model.forwardBackward(x, labels.data(), PassContext{});
    sgd.step(0.1);
    QCOMPARE(acc.currentBytes(MemoryCategory::Activations), before);
    QCOMPARE(acc.currentBytes(MemoryCategory::Workspace), std::int64_t(0));
    // Stored activations of ResNet-20 at batch 8: at least the 19 conv outputs of 8 x 16x32x32
    // .. 8 x 64x8x8 floats, well under 20x the input stack.
    const auto peak = acc.peakBytes(MemoryCategory::Activations) - before;
    QVERIFY2(peak > 8 * 16 * 32 * 32 * 4 * 7 && peak < 8 * 16 * 32 * 32 * 4 * 60,
             qPrintable(QString::number(peak)));
    // Weight memory is exactly the parameters plus the batch-norm running statistics.
    std::int64_t stateFloats = 0;
    for (const auto &b : model.buffers())
        if (b.buffer.tensor)
            stateFloats += b.buffer.tensor->numel();
    QCOMPARE(acc.currentBytes(MemoryCategory::Weights), (model.parameterCount() + stateFloats) * 4);
}

QTEST_APPLESS_MAIN(TestModel)
#include "tst_model.moc"

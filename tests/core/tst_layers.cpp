// Every layer: finite-difference gradient check, forward computed by hand, kernels against
// naive references.

#include "core/avgpool2d.h"
#include "core/batchnorm2d.h"
#include "core/conv2d.h"
#include "core/dnnlconvolution.h"
#include "core/dropout.h"
#include "core/error.h"
#include "core/flatten.h"
#include "core/globalavgpool.h"
#include "core/linear.h"
#include "core/maxpool2d.h"
#include "core/memoryaccountant.h"
#include "core/parallel.h"
#include "core/relu.h"
#include "core/residualblock.h"
#include "core/upsample2d.h"
#include "gradcheck.h"

#include <QScopeGuard>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <tuple>

using namespace edgetrain;
using namespace edgetrain::core;

namespace {

std::unique_ptr<Stage> single(std::unique_ptr<Layer> layer, std::uint64_t seed = 7)
{
    Rng rng(seed);
    layer->initialize(rng);
    std::vector<std::unique_ptr<Layer>> layers;
    layers.push_back(std::move(layer));
    return std::make_unique<SequentialStage>("s", std::move(layers), true);
}

Conv2dOptions convOptions(int out, int kernel, int stride, int padding, bool bias, int dilation = 1)
{
    Conv2dOptions o;
    o.out_channels = out;
    o.kernel = kernel;
    o.stride = stride;
    o.padding = padding;
    o.bias = bias;
    o.dilation = dilation;
    return o;
}

/** The residual blocks the tests build on 4 input channels, by kind: "basic-block-identity",
 *  "basic-block-pad", "basic-block-projection", "bottleneck". */
ResidualBlock::Options blockOptions(const std::string &kind)
{
    ResidualBlock::Options o;
    o.out_channels = 4;
    if (kind == "basic-block-pad") {
        o.out_channels = 8;
        o.stride = 2;
        o.shortcut = Shortcut::PadA;
    } else if (kind == "basic-block-projection") {
        o.out_channels = 6;
        o.stride = 2;
        o.shortcut = Shortcut::Projection;
    } else if (kind == "bottleneck") {
        o.kind = ResidualBlock::Kind::Bottleneck;
        o.out_channels = 8;
        o.width = 3;
        o.stride = 2;
        o.shortcut = Shortcut::Projection;
    }
    return o;
}

/** Direct 7-loop convolution in double. */
std::vector<double> naiveConv(const Tensor &x, const Tensor &w, const float *bias, int stride,
                              int pad, int dilation = 1)
{
    const auto N = x.dim(0), C = x.dim(1), H = x.dim(2), W = x.dim(3);
    const auto O = w.dim(0), K = w.dim(2);
    const auto reach = dilation * (K - 1) + 1;
    const auto OH = (H + 2 * pad - reach) / stride + 1, OW = (W + 2 * pad - reach) / stride + 1;
    std::vector<double> y(std::size_t(N * O * OH * OW));
    for (std::int64_t n = 0; n < N; ++n)
        for (std::int64_t o = 0; o < O; ++o)
            for (std::int64_t i = 0; i < OH; ++i)
                for (std::int64_t j = 0; j < OW; ++j) {
                    double s = bias ? bias[o] : 0.0;
                    for (std::int64_t c = 0; c < C; ++c)
                        for (std::int64_t ki = 0; ki < K; ++ki)
                            for (std::int64_t kj = 0; kj < K; ++kj) {
                                const auto ih = i * stride - pad + ki * dilation,
                                           iw = j * stride - pad + kj * dilation;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                                    continue;
                                s += double(x.data()[((n * C + c) * H + ih) * W + iw]) *
                                     double(w.data()[((o * C + c) * K + ki) * K + kj]);
                            }
                    y[std::size_t(((n * O + o) * OH + i) * OW + j)] = s;
                }
    return y;
}

/** Selects a convolution backend for one test row and restores the process's afterwards. */
class ConvBackendScope
{
public:
    explicit ConvBackendScope(const QString &name) : m_previous(convBackend())
    {
        if (!name.isEmpty())
            setConvBackend(parseConvBackend(name.toStdString()));
    }
    ~ConvBackendScope() { setConvBackend(m_previous); }
    ConvBackendScope(const ConvBackendScope &) = delete;
    ConvBackendScope &operator=(const ConvBackendScope &) = delete;

private:
    ConvBackend m_previous;
};

bool hasConvolution(const char *kind)
{
    const std::string k = kind;
    return k.rfind("conv", 0) == 0 || k.find("block") != std::string::npos || k == "bottleneck";
}

/** y, and after a backward pass dx, dw, db, of one convolution under the current backend. */
struct ConvPass
{
    std::vector<float> y, dx, dw, db;
};

ConvPass runConv(int channels, const Conv2dOptions &options, const Shape &input, bool inputGrad)
{
    Conv2d conv("c", channels, options);
    Rng rng(21);
    conv.initialize(rng);
    const Tensor x = tests::randomTensor(input, 23);
    LayerCache cache;
    const Tensor y = conv.forward(x, &cache, {});
    const Tensor dy = tests::randomTensor(y.shape(), 29);
    auto params = conv.parameters();
    for (Parameter *p : params) // stale values a backward pass must overwrite
        p->grad.fill(7.0f);
    const Tensor dx = conv.backward(dy, cache, {}, inputGrad);
    ConvPass pass;
    pass.y.assign(y.data(), y.data() + y.numel());
    if (inputGrad)
        pass.dx.assign(dx.data(), dx.data() + dx.numel());
    pass.dw.assign(params[0]->grad.data(), params[0]->grad.data() + params[0]->grad.numel());
    if (options.bias)
        pass.db.assign(params[1]->grad.data(), params[1]->grad.data() + params[1]->grad.numel());
    return pass;
}

/** The first element where two results differ by more than float rounding of sums of
 *  `terms` products, or an empty string. */
QString firstDifference(const char *what, const std::vector<float> &a, const std::vector<float> &b,
                        double terms, const char *left = "dnnl", const char *right = "im2col")
{
    if (a.size() != b.size())
        return QStringLiteral("%1: %2 values against %3").arg(what).arg(a.size()).arg(b.size());
    double scale = 0.0;
    for (float v : b)
        scale = std::max(scale, double(std::fabs(v)));
    const double tolerance = 1e-6 * std::sqrt(terms) * (1.0 + scale) * 4.0;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::fabs(double(a[i]) - double(b[i])) > tolerance)
            return QStringLiteral("%1[%2]: %6 %3, %7 %4 (tolerance %5)")
                .arg(what)
                .arg(i)
                .arg(double(a[i]), 0, 'g', 9)
                .arg(double(b[i]), 0, 'g', 9)
                .arg(tolerance)
                .arg(QLatin1String(left), QLatin1String(right));
    return {};
}

} // namespace

class TestLayers : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void gradientsMatchFiniteDifferences_data();
    void gradientsMatchFiniteDifferences();
    void convForwardByHand();
    void convMatchesNaiveReference_data();
    void convMatchesNaiveReference();
    void dnnlConvMatchesIm2col_data();
    void dnnlConvMatchesIm2col();
    void dnnlConvolutionCacheStaysUsable();
    void dnnlConvolutionFromTwoThreads();
    void poolingForwardByHand();
    void upsampleForwardByHand();
    void batchNormRunningStatistics();
    void fusedStagesMatchLayerByLayer_data();
    void fusedStagesMatchLayerByLayer();
    void dropoutMaskIsReproducible();
    void wrongInputShapeIsRefused();
};

void TestLayers::gradientsMatchFiniteDifferences_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<int>("threads");
    QTest::addColumn<QString>("conv");
    for (const char *kind : {"conv3x3-s1-p1-bias",
                             "conv3x3-winograd",
                             "conv5x5-p2",
                             "conv3x3-s2-p1-nobias",
                             "conv1x1",
                             "conv3x3-d2-p2",
                             "conv3x3-d3-s2-p1",
                             "conv7x7-s2-p3",
                             "linear",
                             "linear-from-4d",
                             "batchnorm-train",
                             "batchnorm-eval",
                             "relu",
                             "maxpool2",
                             "maxpool3-s2-p1",
                             "avgpool3-s2-p1",
                             "global-avg-pool",
                             "flatten",
                             "dropout",
                             "upsample2",
                             "upsample3",
                             "basic-block-identity",
                             "basic-block-pad",
                             "basic-block-projection",
                             "bottleneck"})
        for (int threads : {1, 2}) {
            if (!hasConvolution(kind)) {
                QTest::addRow("%s %dT", kind, threads)
                    << QString::fromLatin1(kind) << threads << QString();
                continue;
            }
            for (ConvBackend backend : availableConvBackends()) {
                const QString name = QString::fromLatin1(convBackendName(backend).data());
                QTest::addRow("%s %dT %s", kind, threads, qPrintable(name))
                    << QString::fromLatin1(kind) << threads << name;
            }
        }
}

void TestLayers::gradientsMatchFiniteDifferences()
{
    QFETCH(QString, kind);
    QFETCH(int, threads);
    QFETCH(QString, conv);
    const ConvBackendScope backend(conv);
    setThreadCount(threads);
    std::unique_ptr<Stage> stage;
    Shape input{3, 4, 7, 7};
    PassContext ctx;
    ctx.training = true;
    ctx.seed = 3;
    const std::string k = kind.toStdString();
    if (k == "conv3x3-s1-p1-bias")
        stage = single(std::make_unique<Conv2d>("c", 4, convOptions(5, 3, 1, 1, true)));
    else if (k == "conv3x3-winograd") { // oneDNN's Winograd rule: >= 24 channels in and out
        input = Shape{2, 24, 6, 6};
        stage = single(std::make_unique<Conv2d>("c", 24, convOptions(24, 3, 1, 1, true)));
    } else if (k == "conv5x5-p2")
        stage = single(std::make_unique<Conv2d>("c", 4, convOptions(3, 5, 1, 2, true)));
    else if (k == "conv3x3-s2-p1-nobias")
        stage = single(std::make_unique<Conv2d>("c", 4, convOptions(6, 3, 2, 1, false)));
    else if (k == "conv1x1")
        stage = single(std::make_unique<Conv2d>("c", 4, convOptions(5, 1, 1, 0, true)));
    else if (k == "conv3x3-d2-p2") // the detector's later blocks: taps two pixels apart
        stage = single(std::make_unique<Conv2d>("c", 4, convOptions(5, 3, 1, 2, true, 2)));
    else if (k == "conv3x3-d3-s2-p1")
        stage = single(std::make_unique<Conv2d>("c", 4, convOptions(3, 3, 2, 1, false, 3)));
    else if (k == "conv7x7-s2-p3")
        stage = single(std::make_unique<Conv2d>("c", 4, convOptions(2, 7, 2, 3, false)));
    else if (k == "linear") {
        input = Shape{5, 11};
        stage = single(std::make_unique<Linear>("l", 11, 6));
    } else if (k == "linear-from-4d")
        stage = single(std::make_unique<Linear>("l", 4 * 7 * 7, 3));
    else if (k == "batchnorm-train")
        stage = single(std::make_unique<BatchNorm2d>("b", 4));
    else if (k == "batchnorm-eval") {
        auto bn = std::make_unique<BatchNorm2d>("b", 4);
        // Non-trivial running statistics, then evaluation mode.
        bn->forward(tests::randomTensor(input, 99, 2.0f), nullptr, ctx);
        ctx.training = false;
        stage = single(std::move(bn));
    } else if (k == "relu")
        stage = single(std::make_unique<ReLU>("r"));
    else if (k == "maxpool2")
        stage = single(std::make_unique<MaxPool2d>("m", Pool2dOptions{2, 2, 0}));
    else if (k == "maxpool3-s2-p1")
        stage = single(std::make_unique<MaxPool2d>("m", Pool2dOptions{3, 2, 1}));
    else if (k == "avgpool3-s2-p1")
        stage = single(std::make_unique<AvgPool2d>("a", Pool2dOptions{3, 2, 1}));
    else if (k == "global-avg-pool")
        stage = single(std::make_unique<GlobalAvgPool>("g"));
    else if (k == "flatten")
        stage = single(std::make_unique<Flatten>("f"));
    else if (k == "dropout")
        stage = single(std::make_unique<Dropout>("d", 0.3));
    else if (k == "upsample2")
        stage = single(std::make_unique<Upsample2d>("u", 2));
    else if (k == "upsample3")
        stage = single(std::make_unique<Upsample2d>("u", 3));
    else {
        stage = std::make_unique<ResidualBlock>("blk", 4, blockOptions(k));
        Rng rng(5);
        stage->forEachLayer([&](const std::string &, Layer &l) { l.initialize(rng); });
        // Batch-norm gammas away from 1 so that the test sees them.
        stage->forEachLayer([&](const std::string &, Layer &l) {
            for (Parameter *p : l.parameters())
                if (l.type() == "batchnorm2d")
                    for (std::int64_t i = 0; i < p->value.numel(); ++i)
                        p->value.data()[i] += rng.uniform(-0.3f, 0.3f);
        });
    }
    const auto report = tests::gradCheck(*stage, input, ctx, 1234);
    QVERIFY(report.checked > 0);
    QVERIFY2(
        report.skipped * 3 <= report.checked,
        qPrintable(QStringLiteral("%1 of %2 coordinates sat on a kink: the check would be blind")
                       .arg(report.skipped)
                       .arg(report.checked + report.skipped)));
    QVERIFY2(report.worst <= 1.0, report.where.c_str());
}

void TestLayers::fusedStagesMatchLayerByLayer_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<bool>("training");
    QTest::addColumn<int>("threads");
    for (const char *kind :
         {"bn-relu", "conv-bn-relu (the detector's block)", "basic-block-identity",
          "basic-block-pad", "basic-block-projection", "bottleneck"})
        for (bool training : {true, false})
            for (int threads : {1, 2})
                QTest::addRow("%s %s %dT", kind, training ? "train" : "eval", threads)
                    << QString::fromLatin1(kind) << training << threads;
}

void TestLayers::fusedStagesMatchLayerByLayer()
{
    // A batch norm and the ReLU after it (and a residual block's end) run as one pass by
    // default: against the layer-by-layer path on twin stages, the output, dL/dx, every
    // parameter gradient and the running statistics agree within float rounding, and the fused
    // pass never needs more memory.
    QFETCH(QString, kind);
    QFETCH(bool, training);
    QFETCH(int, threads);
    setThreadCount(threads);
    const std::string k = kind.toStdString();
    Shape input{3, 4, 9, 7}; // odd sizes: the vector loops' tails
    const auto build = [&]() -> std::unique_ptr<Stage> {
        std::vector<std::unique_ptr<Layer>> layers;
        if (k == "bn-relu") {
            layers.push_back(std::make_unique<BatchNorm2d>("bn", 4));
        } else if (k.rfind("conv-bn-relu", 0) == 0) {
            layers.push_back(std::make_unique<Conv2d>("conv", 4, convOptions(6, 3, 2, 1, false)));
            layers.push_back(std::make_unique<BatchNorm2d>("bn", 6));
        }
        std::unique_ptr<Stage> stage;
        if (!layers.empty()) {
            layers.push_back(std::make_unique<ReLU>("relu"));
            stage = std::make_unique<SequentialStage>("s", std::move(layers), false);
        } else {
            stage = std::make_unique<ResidualBlock>("blk", 4, blockOptions(k));
        }
        // Batch norms away from the identity, running statistics too, so that every term shows.
        Rng rng(41);
        stage->forEachLayer([&](const std::string &, Layer &l) {
            l.initialize(rng);
            if (l.type() != "batchnorm2d")
                return;
            for (Parameter *p : l.parameters())
                for (std::int64_t i = 0; i < p->value.numel(); ++i)
                    p->value.data()[i] += rng.uniform(-0.4f, 0.4f);
            for (const LayerBuffer &b : l.buffers())
                if (b.tensor)
                    for (std::int64_t i = 0; i < b.tensor->numel(); ++i)
                        b.tensor->data()[i] = b.name == "running_var" ? rng.uniform(0.5f, 2.0f)
                                                                      : rng.uniform(-0.5f, 0.5f);
        });
        return stage;
    };
    struct Pass
    {
        std::vector<float> y, dx, grads, state;
        std::int64_t peak = 0;
    };
    // Fused again after this test, whatever happens in it.
    const auto fusedAgain = qScopeGuard([] { setFusedStages(true); });
    const auto run = [&](bool fused) {
        setFusedStages(fused);
        std::unique_ptr<Stage> stage = build();
        PassContext ctx;
        ctx.training = training;
        const Tensor x = tests::randomTensor(input, 43, 1.5f);
        Pass p;
        MemoryAccountant &memory = MemoryAccountant::current();
        const std::int64_t before = memory.currentTotalBytes();
        memory.resetPeaks();
        {
            StageCache cache;
            const Tensor y = stage->forward(x, &cache, ctx);
            const Tensor dy = tests::randomTensor(y.shape(), 47);
            const Tensor dx = stage->backward(dy, cache, ctx, true);
            p.y.assign(y.data(), y.data() + y.numel());
            p.dx.assign(dx.data(), dx.data() + dx.numel());
        }
        p.peak = memory.peakTotalBytes() - before;
        stage->forEachLayer([&](const std::string &, Layer &l) {
            for (Parameter *q : l.parameters())
                p.grads.insert(p.grads.end(), q->grad.data(), q->grad.data() + q->grad.numel());
            for (const LayerBuffer &b : l.buffers())
                if (b.tensor)
                    p.state.insert(p.state.end(), b.tensor->data(),
                                   b.tensor->data() + b.tensor->numel());
        });
        return p;
    };
    const Pass reference = run(false), fused = run(true);
    QVERIFY(std::any_of(reference.y.begin(), reference.y.end(), [](float v) { return v == 0.0f; }));
    QVERIFY(std::any_of(reference.y.begin(), reference.y.end(), [](float v) { return v > 0.0f; }));
    const double terms = double(input.numel());
    for (const auto &[what, a, b] :
         {std::tuple{"y", &fused.y, &reference.y}, std::tuple{"dx", &fused.dx, &reference.dx},
          std::tuple{"parameter gradients", &fused.grads, &reference.grads},
          std::tuple{"running statistics", &fused.state, &reference.state}}) {
        const QString d = firstDifference(what, *a, *b, terms, "fused", "layer by layer");
        QVERIFY2(d.isEmpty(), qPrintable(d));
    }
    // One activation less in each direction: the peak of a pair alone drops; where a
    // convolution's backward sets the peak, it stays.
    const QString peaks = QStringLiteral("peak %1 bytes fused, %2 layer by layer")
                              .arg(fused.peak)
                              .arg(reference.peak);
    QVERIFY2(k == "bn-relu" ? fused.peak < reference.peak : fused.peak <= reference.peak,
             qPrintable(peaks));
}

void TestLayers::convForwardByHand()
{
    setThreadCount(1);
    // 3x3 image 1..9, 2x2 kernel [[1, 0], [0, -1]], bias 0.5: every output is a - e + 0.5 = -3.5.
    Conv2d conv("c", 1, convOptions(1, 2, 1, 0, true));
    auto params = conv.parameters();
    const float w[] = {1, 0, 0, -1};
    std::copy(w, w + 4, params[0]->value.data());
    params[1]->value.data()[0] = 0.5f;
    Tensor x({1, 1, 3, 3}, MemoryCategory::Activations);
    for (int i = 0; i < 9; ++i)
        x.data()[i] = float(i + 1);
    Tensor y = conv.forward(x, nullptr, {});
    QCOMPARE(y.shape(), (Shape{1, 1, 2, 2}));
    for (int i = 0; i < 4; ++i)
        QCOMPARE(y.data()[i], -3.5f);

    // All-ones 3x3 kernel, padding 1, stride 2 on the same image: sums of the clipped windows
    // centred at (0,0), (0,2), (2,0), (2,2): 1+2+4+5, 2+3+5+6, 4+5+7+8, 5+6+8+9.
    Conv2d sum("s", 1, convOptions(1, 3, 2, 1, false));
    sum.parameters()[0]->value.fill(1.0f);
    Tensor z = sum.forward(x, nullptr, {});
    QCOMPARE(z.shape(), (Shape{1, 1, 2, 2}));
    QCOMPARE(z.data()[0], 12.0f);
    QCOMPARE(z.data()[1], 16.0f);
    QCOMPARE(z.data()[2], 24.0f);
    QCOMPARE(z.data()[3], 28.0f);
}

void TestLayers::convMatchesNaiveReference_data()
{
    QTest::addColumn<int>("channels");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("padding");
    QTest::addColumn<int>("size");
    QTest::addColumn<int>("threads");
    QTest::addColumn<QString>("backendName");
    QTest::addColumn<int>("dilation");
    for (ConvBackend backend : availableConvBackends()) {
        const QString b = QString::fromLatin1(convBackendName(backend).data());
        const char *n = convBackendName(backend).data();
        QTest::addRow("lenet conv1 %s", n) << 1 << 6 << 5 << 1 << 2 << 28 << 2 << b << 1;
        QTest::addRow("lenet conv2 %s", n) << 6 << 16 << 5 << 1 << 0 << 14 << 1 << b << 1;
        QTest::addRow("resnet 3x3 %s", n) << 16 << 16 << 3 << 1 << 1 << 12 << 2 << b << 1;
        QTest::addRow("resnet 3x3 stride 2 %s", n) << 16 << 32 << 3 << 2 << 1 << 13 << 2 << b << 1;
        QTest::addRow("imagenet stem 7x7 s2 p3 %s", n)
            << 3 << 8 << 7 << 2 << 3 << 23 << 1 << b << 1;
        QTest::addRow("1x1 stride 2 %s", n) << 8 << 4 << 1 << 2 << 0 << 9 << 2 << b << 1;
        QTest::addRow("detector 3x3 dilation 2 %s", n)
            << 48 << 48 << 3 << 1 << 2 << 12 << 2 << b << 2;
        QTest::addRow("5x5 dilation 3 s2 p1 %s", n) << 5 << 4 << 5 << 2 << 1 << 17 << 1 << b << 3;
    }
}

void TestLayers::convMatchesNaiveReference()
{
    QFETCH(int, channels);
    QFETCH(int, out);
    QFETCH(int, kernel);
    QFETCH(int, stride);
    QFETCH(int, padding);
    QFETCH(int, size);
    QFETCH(int, threads);
    QFETCH(QString, backendName);
    QFETCH(int, dilation);
    const ConvBackendScope backend(backendName);
    setThreadCount(threads);
    Conv2d conv("c", channels, convOptions(out, kernel, stride, padding, true, dilation));
    Rng rng(11);
    conv.initialize(rng);
    const Tensor x = tests::randomTensor({3, channels, size, size}, 17);
    const Tensor y = conv.forward(x, nullptr, {});
    const auto expected = naiveConv(x, conv.parameters()[0]->value,
                                    conv.parameters()[1]->value.data(), stride, padding, dilation);
    QCOMPARE(std::size_t(y.numel()), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
        QVERIFY2(
            std::fabs(y.data()[i] - expected[i]) < 1e-4 * (1.0 + std::fabs(expected[i])),
            qPrintable(
                QStringLiteral("output %1: %2 vs %3").arg(i).arg(y.data()[i]).arg(expected[i])));
}

void TestLayers::dnnlConvMatchesIm2col_data()
{
    QTest::addColumn<int>("channels");
    QTest::addColumn<int>("out");
    QTest::addColumn<int>("kernel");
    QTest::addColumn<int>("stride");
    QTest::addColumn<int>("padding");
    QTest::addColumn<int>("batch");
    QTest::addColumn<int>("height");
    QTest::addColumn<int>("width");
    QTest::addColumn<bool>("bias");
    QTest::addColumn<bool>("inputGrad");
    QTest::addColumn<int>("threads");
    QTest::addColumn<int>("dilation");
    // The detector's layers (channels 3, 16, 24, 48, 32, 5 — not all multiples of oneDNN's
    // blocks), ResNet's, and odd sizes, strides and paddings the planner may meet.
    QTest::newRow("detector stem 3-16 s2")
        << 3 << 16 << 3 << 2 << 1 << 2 << 48 << 64 << false << false << 2 << 1;
    QTest::newRow("detector 16-24 s2")
        << 16 << 24 << 3 << 2 << 1 << 3 << 24 << 32 << false << true << 2 << 1;
    QTest::newRow("detector 24-24")
        << 24 << 24 << 3 << 1 << 1 << 2 << 12 << 16 << false << true << 1 << 1;
    QTest::newRow("detector head 1x1 32-5")
        << 32 << 5 << 1 << 1 << 0 << 2 << 12 << 16 << true << true << 2 << 1;
    QTest::newRow("resnet 16-32 s2")
        << 16 << 32 << 3 << 2 << 1 << 4 << 16 << 16 << false << true << 2 << 1;
    QTest::newRow("odd 5-7 k3 s2 p0")
        << 5 << 7 << 3 << 2 << 0 << 3 << 13 << 11 << true << true << 2 << 1;
    QTest::newRow("odd 17-9 k5 s1 p2")
        << 17 << 9 << 5 << 1 << 2 << 1 << 9 << 14 << true << true << 1 << 1;
    QTest::newRow("odd 4-6 k3 s3 p2")
        << 4 << 6 << 3 << 3 << 2 << 5 << 10 << 7 << true << true << 2 << 1;
    QTest::newRow("7x7 s2 p3") << 3 << 8 << 7 << 2 << 3 << 2 << 23 << 19 << false << true << 1 << 1;
    QTest::newRow("1x1 s2") << 8 << 4 << 1 << 2 << 0 << 3 << 9 << 9 << true << true << 2 << 1;
    QTest::newRow("batch 1, 1 channel")
        << 1 << 6 << 5 << 1 << 2 << 1 << 28 << 28 << true << true << 2 << 1;
    // Winograd F(4x4, 3x3): sizes not multiples of its 4x4 tiles, with and without bias.
    QTest::newRow("winograd 48-32 13x17")
        << 48 << 32 << 3 << 1 << 1 << 2 << 13 << 17 << false << true << 2 << 1;
    QTest::newRow("winograd 32-64 bias 8x8")
        << 32 << 64 << 3 << 1 << 1 << 3 << 8 << 8 << true << true << 1 << 1;
    // Dilated: the detector's blocks at 1/8 (taps two apart; never Winograd), and odd ones.
    QTest::newRow("detector 48-48 dilation 2")
        << 48 << 48 << 3 << 1 << 2 << 2 << 24 << 32 << false << true << 2 << 2;
    QTest::newRow("odd 6-5 k3 d3 s2 p1")
        << 6 << 5 << 3 << 2 << 1 << 3 << 17 << 14 << true << true << 1 << 3;
    QTest::newRow("odd 4-4 k5 d2 s1 p0")
        << 4 << 4 << 5 << 1 << 0 << 2 << 15 << 12 << true << true << 2 << 2;
}

void TestLayers::dnnlConvMatchesIm2col()
{
    if (!Internal::DnnlConvolution::available())
        QSKIP("oneDNN is not built in: im2col + GEMM is the only convolution");
    QFETCH(int, channels);
    QFETCH(int, out);
    QFETCH(int, kernel);
    QFETCH(int, stride);
    QFETCH(int, padding);
    QFETCH(int, batch);
    QFETCH(int, height);
    QFETCH(int, width);
    QFETCH(bool, bias);
    QFETCH(bool, inputGrad);
    QFETCH(int, threads);
    QFETCH(int, dilation);
    setThreadCount(threads);
    const Conv2dOptions options = convOptions(out, kernel, stride, padding, bias, dilation);
    const Shape input{batch, channels, height, width};
    ConvPass reference;
    {
        const ConvBackendScope backend(QStringLiteral("im2col"));
        reference = runConv(channels, options, input, inputGrad);
    }
    const bool rule = kernel == 3 && stride == 1 && dilation == 1 && std::min(channels, out) >= 24;
    for (const char *name : {"dnnl", "winograd"}) {
        ConvPass dnnl;
        {
            const ConvBackendScope backend(QString::fromLatin1(name));
            dnnl = runConv(channels, options, input, inputGrad);
        }
        const double k2 = double(kernel) * kernel;
        for (const QString &difference :
             {firstDifference("y", dnnl.y, reference.y, channels * k2),
              firstDifference("dx", dnnl.dx, reference.dx, out * k2),
              firstDifference("dw", dnnl.dw, reference.dw, double(batch) * height * width),
              firstDifference("db", dnnl.db, reference.db, double(batch) * height * width)})
            QVERIFY2(difference.isEmpty(), qPrintable(difference));
        QVERIFY(!dnnl.dw.empty());
        QCOMPARE(dnnl.dx.empty(), !inputGrad);
        // ... and oneDNN really ran (a shape it has no primitive for would compare im2col twice).
        Internal::ConvShape shape = Conv2d("c", channels, options).convShape(input);
        shape.winograd = std::string(name) == "winograd" && rule;
        QCOMPARE(Internal::DnnlConvolution::winogradSuits(shape), rule);
        const auto convolution = Internal::DnnlConvolution::forShape(shape, threads);
        QVERIFY(convolution != nullptr);
        // Winograd only where asked for; there where this CPU has the kernels (AVX-512).
        if (!shape.winograd)
            QVERIFY(!convolution->winograd());
        qInfo("%s: %s", name, convolution->implementation().c_str());
    }
}

void TestLayers::dnnlConvolutionCacheStaysUsable()
{
    if (!Internal::DnnlConvolution::available())
        QSKIP("oneDNN is not built in");
    // More shapes than the cache keeps (512): it is cleared on the way, a convolution held
    // from before still runs, and a shape asked for again is made again.
    auto shapeOf = [](int n) {
        Internal::ConvShape s;
        s.N = n;
        s.C = 2;
        s.H = s.W = 4;
        s.O = 3;
        s.OH = s.OW = 4;
        s.kernel = 1;
        return s;
    };
    const auto held = Internal::DnnlConvolution::forShape(shapeOf(1), 1);
    QVERIFY(held);
    for (int n = 2; n <= 600; ++n)
        QVERIFY(Internal::DnnlConvolution::forShape(shapeOf(n), 1));
    const auto again = Internal::DnnlConvolution::forShape(shapeOf(1), 1);
    QVERIFY(again);
    const Tensor x = tests::randomTensor({1, 2, 4, 4}, 3);
    const Tensor w = tests::randomTensor({3, 2, 1, 1}, 5);
    Tensor a({1, 3, 4, 4}, MemoryCategory::Activations),
        b({1, 3, 4, 4}, MemoryCategory::Activations);
    held->forward(x, w, nullptr, a);
    again->forward(x, w, nullptr, b);
    for (int i = 0; i < 48; ++i) {
        QCOMPARE(a.data()[i], b.data()[i]);
        const int o = i / 16, p = i % 16;
        const float expected =
            w.data()[o * 2] * x.data()[p] + w.data()[o * 2 + 1] * x.data()[16 + p];
        QVERIFY(std::fabs(a.data()[i] - expected) < 1e-5f);
    }
}

void TestLayers::dnnlConvolutionFromTwoThreads()
{
    if (!Internal::DnnlConvolution::available())
        QSKIP("oneDNN is not built in");
    // Two engine threads train the same layer shape at once (the app evaluates on one thread
    // while a node trains on another): each gets what it gets alone.
    const ConvBackendScope backend(QStringLiteral("dnnl"));
    const Conv2dOptions options = convOptions(24, 3, 1, 1, false);
    const Shape input{4, 16, 24, 32};
    setThreadCount(1);
    const ConvPass alone = runConv(16, options, input, true);
    std::vector<ConvPass> passes(2);
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
        threads.emplace_back([&, t] {
            setThreadCount(1);
            for (int round = 0; round < 20; ++round)
                passes[std::size_t(t)] = runConv(16, options, input, true);
        });
    for (auto &thread : threads)
        thread.join();
    for (const ConvPass &pass : passes) {
        QVERIFY(pass.y == alone.y);
        QVERIFY(pass.dx == alone.dx);
        QVERIFY(pass.dw == alone.dw);
    }
}

void TestLayers::poolingForwardByHand()
{
    setThreadCount(1);
    Tensor x({1, 1, 4, 4}, MemoryCategory::Activations);
    for (int i = 0; i < 16; ++i)
        x.data()[i] = float((i * 7) % 16); // 0 7 14 5 / 12 3 10 1 / 8 15 6 13 / 4 11 2 9
    MaxPool2d maxPool("m", Pool2dOptions{2, 2, 0});
    LayerCache cache;
    Tensor m = maxPool.forward(x, &cache, {});
    QCOMPARE(m.shape(), (Shape{1, 1, 2, 2}));
    QCOMPARE(m.data()[0], 12.0f);
    QCOMPARE(m.data()[1], 14.0f);
    QCOMPARE(m.data()[2], 15.0f);
    QCOMPARE(m.data()[3], 13.0f);
    // The gradient goes to the argmax only.
    Tensor g({1, 1, 2, 2}, MemoryCategory::Activations);
    g.fill(1.0f);
    Tensor dx = maxPool.backward(g, cache, {}, true);
    float total = 0.0f;
    for (int i = 0; i < 16; ++i)
        total += dx.data()[i];
    QCOMPARE(total, 4.0f);
    QCOMPARE(dx.data()[4], 1.0f); // 12 at (1, 0)

    // 3x3 windows, stride 2, padding 1, padding counted in the divisor (PyTorch's default).
    AvgPool2d avgPool("a", Pool2dOptions{3, 2, 1});
    Tensor a = avgPool.forward(x, nullptr, {});
    QCOMPARE(a.shape(), (Shape{1, 1, 2, 2}));
    QCOMPARE(a.data()[0], (0 + 7 + 12 + 3) / 9.0f);
    QCOMPARE(a.data()[3], (3 + 10 + 1 + 15 + 6 + 13 + 11 + 2 + 9) / 9.0f);
}

void TestLayers::upsampleForwardByHand()
{
    setThreadCount(2);
    Tensor x({1, 2, 2, 3}, MemoryCategory::Activations);
    for (int i = 0; i < 12; ++i)
        x.data()[i] = float(i + 1); // plane 0: 1 2 3 / 4 5 6; plane 1: 7 8 9 / 10 11 12
    Upsample2d up("u", 2);
    LayerCache cache;
    const Tensor y = up.forward(x, &cache, {});
    QCOMPARE(y.shape(), (Shape{1, 2, 4, 6}));
    const float plane0[24] = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3,
                              4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6};
    for (int i = 0; i < 24; ++i)
        QCOMPARE(y.data()[i], plane0[i]);
    QCOMPARE(y.data()[24], 7.0f);
    QCOMPARE(y.data()[47], 12.0f);
    // Backward sums each 2x2 block: dy = its own index -> dx[0] = 0 + 1 + 6 + 7.
    Tensor g(y.shape(), MemoryCategory::Activations);
    for (int i = 0; i < 48; ++i)
        g.data()[i] = float(i);
    const Tensor dx = up.backward(g, cache, {}, true);
    QCOMPARE(dx.shape(), x.shape());
    QCOMPARE(dx.data()[0], 0.0f + 1 + 6 + 7);
    QCOMPARE(dx.data()[5], 16.0f + 17 + 22 + 23);
    QCOMPARE(dx.data()[6], 24.0f + 25 + 30 + 31);
    QCOMPARE(QString::fromStdString(up.spec().dump()),
             QStringLiteral(R"({"type":"upsample2d","factor":2})"));
    QVERIFY_THROWS_EXCEPTION(SpecError, Upsample2d("bad", 0));
}

void TestLayers::batchNormRunningStatistics()
{
    setThreadCount(1);
    BatchNorm2d bn("b", 1, 1e-5, 0.1);
    Tensor x({2, 1, 1, 2}, MemoryCategory::Activations);
    const float v[] = {1, 2, 3, 6}; // mean 3, biased var 3.5, unbiased 14/3
    std::copy(v, v + 4, x.data());
    PassContext train;
    Tensor y = bn.forward(x, nullptr, train);
    QVERIFY(std::fabs(y.data()[0] - (1 - 3) / std::sqrt(3.5f + 1e-5f)) < 1e-5f);
    auto buffers = bn.buffers();
    QVERIFY(std::fabs(buffers[0].tensor->data()[0] - 0.3f) < 1e-6f); // 0.9*0 + 0.1*3
    QVERIFY(std::fabs(buffers[1].tensor->data()[0] - (0.9f + 0.1f * 14.0f / 3.0f)) < 1e-5f);
    QCOMPARE(bn.batchesTracked(), std::int64_t(1));
    // A recomputed pass (checkpointing) leaves the statistics alone.
    PassContext recompute;
    recompute.recompute = true;
    bn.forward(x, nullptr, recompute);
    QCOMPARE(bn.batchesTracked(), std::int64_t(1));
    QVERIFY(std::fabs(buffers[0].tensor->data()[0] - 0.3f) < 1e-6f);
}

void TestLayers::dropoutMaskIsReproducible()
{
    Dropout d("d", 0.5);
    const Tensor x = tests::randomTensor({4, 1000}, 3);
    PassContext ctx;
    ctx.seed = 9;
    ctx.step = 4;
    const Tensor a = d.forward(x, nullptr, ctx);
    const Tensor b = d.forward(x, nullptr, ctx);
    int zeros = 0;
    for (std::int64_t i = 0; i < a.numel(); ++i) {
        QCOMPARE(a.data()[i], b.data()[i]);
        zeros += a.data()[i] == 0.0f;
    }
    QVERIFY2(zeros > 1800 && zeros < 2200, qPrintable(QString::number(zeros)));
    ctx.step = 5;
    const Tensor c = d.forward(x, nullptr, ctx);
    int same = 0;
    for (std::int64_t i = 0; i < a.numel(); ++i)
        same += (a.data()[i] == 0.0f) == (c.data()[i] == 0.0f);
    QVERIFY(same < 2300); // another step, another mask
    ctx.training = false;
    const Tensor e = d.forward(x, nullptr, ctx);
    QCOMPARE(e.data()[0], x.data()[0]);
}

void TestLayers::wrongInputShapeIsRefused()
{
    Conv2d conv("features.0", 3, convOptions(4, 3, 1, 1, true));
    const Tensor x({2, 1, 8, 8}, MemoryCategory::Activations);
    try {
        conv.forward(x, nullptr, {});
        QFAIL("no exception");
    } catch (const ShapeError &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("features.0")), e.what());
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("[2, 1, 8, 8]")), e.what());
    }
    Linear linear("fc", 10, 2);
    QVERIFY_THROWS_EXCEPTION(
        ShapeError, linear.forward(Tensor({2, 11}, MemoryCategory::Activations), nullptr, {}));
}

QTEST_APPLESS_MAIN(TestLayers)
#include "tst_layers.moc"

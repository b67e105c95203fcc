// The detector's engine side: DetectionLoss (gradients against finite differences, a case
// computed by hand, ignore regions, the label codec, decoding), the "centernet" loss and
// "upsample2d"/"bias_init" in a ModelSpec, and the zoo's detector learning a synthetic scene.

#include "core/detectionloss.h"
#include "core/error.h"
#include "core/model.h"
#include "core/parallel.h"
#include "core/safetensors.h"
#include "core/sgd.h"
#include "core/tensordataset.h"
#include "core/trainer.h"
#include "core/zoo.h"
#include "gradcheck.h"

#include <QTemporaryDir>
#include <QTest>

#include <chrono>
#include <cmath>

using namespace edgetrain;
using namespace edgetrain::core;

namespace {

DetectionLossOptions lossOptions(int maxObjects = 4)
{
    DetectionLossOptions o;
    o.stride = 4;
    o.max_objects = maxObjects;
    return o;
}

std::vector<std::int32_t> encodeAll(const std::vector<std::vector<LabelBox>> &frames,
                                    int maxObjects)
{
    const int width = DetectionLoss::labelWidth(maxObjects);
    std::vector<std::int32_t> labels(frames.size() * std::size_t(width));
    for (std::size_t n = 0; n < frames.size(); ++n)
        DetectionLoss::encode(frames[n], maxObjects, labels.data() + n * std::size_t(width));
    return labels;
}

float iou(const DecodedBox &a, const LabelBox &b)
{
    const float ix = std::max(0.0f, std::min(a.x1, b.x1) - std::max(a.x0, b.x0));
    const float iy = std::max(0.0f, std::min(a.y1, b.y1) - std::max(a.y0, b.y0));
    const float inter = ix * iy;
    const float uni = (a.x1 - a.x0) * (a.y1 - a.y0) + (b.x1 - b.x0) * (b.y1 - b.y0) - inter;
    return uni > 0 ? inter / uni : 0.0f;
}

void expectSpecError(const char *json, const char *mustName)
{
    try {
        ModelSpec::fromJson(Json::parse(json), "test.json");
        QFAIL(qPrintable(QStringLiteral("accepted: %1").arg(QString::fromUtf8(json))));
    } catch (const SpecError &e) {
        const QString what = QString::fromUtf8(e.what());
        QVERIFY2(what.contains(QLatin1String(mustName)) &&
                     what.contains(QLatin1String("test.json")),
                 qPrintable(what));
    }
}

/** A small detector chain for the spec tests: [3, 16, 24] in, [5, 4, 6] out. */
const char *kSmallDetector = R"({"name": "small", "input": [3, 16, 24],
    "loss": {"type": "centernet", "stride": 4, "max_objects": 3},
    "stages": [
      {"type": "conv2d", "out_channels": 4, "kernel": 3, "stride": 2, "padding": 1},
      {"type": "relu"},
      {"type": "conv2d", "out_channels": 6, "kernel": 3, "stride": 2, "padding": 1},
      {"type": "maxpool2d", "kernel": 2},
      {"type": "upsample2d"},
      {"type": "conv2d", "out_channels": 5, "kernel": 1, "bias_init": [-2.19, 0, 0, 0, 0.5]}]})";

} // namespace

class TestDetection : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void lossGradientMatchesFiniteDifferences();
    void lossComputedByHand();
    void ignoreRegionHasNoHeatmapLoss();
    void labelsRoundTrip();
    void decodeFindsPlantedBoxes();
    void specFieldsAreValidatedAndWrittenBack();
    void detectorZooModel();
    void safetensorsRoundTrip();
    void trainerChecksLabelWidth();
    void detectorLearnsSyntheticScene();
};

void TestDetection::lossGradientMatchesFiniteDifferences()
{
    const DetectionLossOptions o = lossOptions(4);
    // Two frames of 24x32 input pixels (6x8 cells): two objects and an ignore region.
    const auto labels =
        encodeAll({{{4, 4, 20, 16, false}, {18, 0, 32, 12, true}}, {{9.5f, 6.25f, 30, 22, false}}},
                  o.max_objects);
    Tensor out = tests::randomTensor({2, 5, 6, 8}, 11);
    Tensor dout;
    const auto r = DetectionLoss::compute(out, labels.data(), o, &dout);
    QCOMPARE(r.objects, std::int64_t(2));
    QVERIFY(r.loss > 0 && r.heatmap_loss > 0 && r.size_loss > 0 && r.offset_loss > 0);
    QCOMPARE(r.loss, r.heatmap_loss + r.size_loss + r.offset_loss);
    double worst = 0.0;
    int checked = 0;
    for (std::int64_t i = 0; i < out.numel(); ++i) {
        const float keep = out.data()[i];
        const float step = 1e-2f;
        out.data()[i] = keep + step;
        const float up = out.data()[i];
        const double lossUp = DetectionLoss::compute(out, labels.data(), o, nullptr).loss;
        out.data()[i] = keep - step;
        const float down = out.data()[i];
        const double lossDown = DetectionLoss::compute(out, labels.data(), o, nullptr).loss;
        out.data()[i] = keep;
        const double numeric = (lossUp - lossDown) / double(up - down);
        const double analytic = dout.data()[i];
        worst = std::max(worst, std::abs(analytic - numeric) / (1e-4 + 1e-2 * std::abs(numeric)));
        ++checked;
    }
    QCOMPARE(checked, 480);
    QVERIFY2(worst <= 1.0, qPrintable(QString::number(worst)));
    // The L1 terms do reach the output: the gradient is not only the heatmap's.
    double sizeGrad = 0.0;
    for (std::int64_t i = 48; i < 96; ++i)
        sizeGrad += std::abs(dout.data()[i]);
    QVERIFY(sizeGrad > 0.1);
}

void TestDetection::lossComputedByHand()
{
    // One 14x16 px box centred at (16, 13) px = cell (4, 3.25) at stride 4.
    const DetectionLossOptions o = lossOptions(2);
    const auto labels = encodeAll({{{9, 5, 23, 21, false}}}, o.max_objects);
    Tensor out = Tensor::zeros({1, 5, 6, 8}, MemoryCategory::Activations); // p = 0.5 everywhere
    Tensor dout;
    const auto r = DetectionLoss::compute(out, labels.data(), o, &dout);

    // Box 4x4 cells: CenterNet's radius 1.09 -> 1, sigma 3/6: neighbours e^-2, corners e^-4.
    QVERIFY(std::abs(DetectionLoss::gaussianRadius(4, 4) - 1.0935) < 1e-3);
    const auto heat =
        DetectionLoss::heatmapTarget(DetectionLoss::decodeLabels(labels.data(), 2), 6, 8, 4);
    QCOMPARE(heat[3 * 8 + 4], 1.0f);
    QVERIFY(std::abs(heat[3 * 8 + 5] - std::exp(-2.0f)) < 1e-6f);
    QVERIFY(std::abs(heat[2 * 8 + 4] - std::exp(-2.0f)) < 1e-6f);
    QVERIFY(std::abs(heat[2 * 8 + 3] - std::exp(-4.0f)) < 1e-6f);
    QCOMPARE(heat[3 * 8 + 6], 0.0f);

    const double ln2 = std::log(2.0), e2 = 1 - std::exp(-2.0), e4 = 1 - std::exp(-4.0);
    const double heatmap = 0.25 * ln2 * (1 + 4 * std::pow(e2, 4) + 4 * std::pow(e4, 4) + 39);
    const double size = std::log(3.5) + std::log(4.0);
    const double offset = 0.0 + 0.25;
    QVERIFY(std::abs(r.heatmap_loss - heatmap) < 1e-6); // the target is float
    QVERIFY(std::abs(r.size_loss - size) < 1e-6);
    QVERIFY(std::abs(r.offset_loss - offset) < 1e-6);
    QVERIFY(std::abs(r.loss - (heatmap + size + offset)) < 1e-6);
    QCOMPARE(r.objects, std::int64_t(1));
    QCOMPARE(r.hits, std::int64_t(1)); // sigmoid 0.5, a (tied) 3x3 maximum
    // d/dz of -(1-p)^2 log p at p = 1/2: (1-p)^2 (2 p log p - (1-p)) = (-ln2 - 0.5) / 4.
    const std::int64_t centre = 3 * 8 + 4, plane = 48;
    QVERIFY(std::abs(dout.data()[centre] - (-ln2 - 0.5) / 4) < 1e-6);
    QCOMPARE(dout.data()[plane + centre], -1.0f);     // log w: 0 < log 3.5
    QCOMPARE(dout.data()[2 * plane + centre], -1.0f); // log h
    QCOMPARE(dout.data()[3 * plane + centre], 0.0f);  // offset x: exactly 0
    QCOMPARE(dout.data()[4 * plane + centre], -1.0f); // offset y: 0 < 0.25
    QCOMPARE(dout.data()[plane + centre + 1], 0.0f);  // only the centre cell regresses

    // A confident, right prediction: low loss, a hit; a peak elsewhere is not a hit.
    Tensor good = Tensor::zeros({1, 5, 6, 8}, MemoryCategory::Activations);
    good.fill(-6.0f);
    good.data()[centre] = 6.0f;
    for (std::int64_t i = plane; i < 5 * plane; ++i)
        good.data()[i] = 0.0f;
    good.data()[plane + centre] = float(std::log(3.5));
    good.data()[2 * plane + centre] = float(std::log(4.0));
    good.data()[4 * plane + centre] = 0.25f;
    const auto g = DetectionLoss::compute(good, labels.data(), o, nullptr);
    QVERIFY2(g.loss < 0.05, qPrintable(QString::number(g.loss)));
    QCOMPARE(g.hits, std::int64_t(1));
    good.data()[centre + 1] = 7.0f; // a stronger neighbour: the centre is no longer a peak
    QCOMPARE(DetectionLoss::compute(good, labels.data(), o, nullptr).hits, std::int64_t(0));
}

void TestDetection::ignoreRegionHasNoHeatmapLoss()
{
    const DetectionLossOptions o = lossOptions(2);
    // No objects; confident false positives in the top-left 4x3 cells (16x12 px).
    Tensor out({1, 5, 6, 8}, MemoryCategory::Activations);
    out.fill(-4.0f);
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x)
            out.data()[y * 8 + x] = 3.0f;
    const auto plain = encodeAll({{}}, o.max_objects);
    const auto ignored = encodeAll({{{0, 0, 16, 12, true}}}, o.max_objects);
    Tensor dPlain, dIgnored;
    const auto a = DetectionLoss::compute(out, plain.data(), o, &dPlain);
    const auto b = DetectionLoss::compute(out, ignored.data(), o, &dIgnored);
    QCOMPARE(a.objects, std::int64_t(0));
    QCOMPARE(b.objects, std::int64_t(0)); // an ignore region is not an object
    QVERIFY(a.heatmap_loss > 12 * 2.5);   // each false positive costs p^2 * 3.05
    // What is left is exactly the 36 cells outside: -p^2 log(1-p) at logit -4 each.
    const double p = 1 / (1 + std::exp(4.0));
    QVERIFY2(std::abs(b.heatmap_loss - 36 * p * p * -std::log1p(-p)) < 1e-9,
             qPrintable(QString::number(b.heatmap_loss)));
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x) {
            QVERIFY(dPlain.data()[y * 8 + x] > 0.1f);
            QCOMPARE(dIgnored.data()[y * 8 + x], 0.0f);
        }
    QVERIFY(dIgnored.data()[5 * 8 + 7] > 0.0f);

    // An object's centre inside an ignore region still counts as positive.
    const auto both = encodeAll({{{0, 0, 16, 12, true}, {4, 4, 12, 8, false}}}, o.max_objects);
    Tensor dBoth;
    const auto c = DetectionLoss::compute(out, both.data(), o, &dBoth);
    QCOMPARE(c.objects, std::int64_t(1));
    QVERIFY(dBoth.data()[1 * 8 + 2] < 0.0f); // centre (8, 6) px = cell (2, 1): pushed up
}

void TestDetection::labelsRoundTrip()
{
    const std::vector<LabelBox> boxes{
        {1.5f, 2.25f, 40.0625f, 60, false}, {100, 20, 140.5f, 90.75f, false}, {0, 0, 30, 30, true}};
    std::vector<std::int32_t> label(std::size_t(DetectionLoss::labelWidth(4)), -7);
    DetectionLoss::encode(boxes, 4, label.data());
    QCOMPARE(label[0], 3);
    QCOMPARE(label[1], std::int32_t(std::lround(100 * 16))); // largest object first
    QCOMPARE(label[1 + 2 * 5 + 4], DetectionLoss::kIgnore);  // ignore regions last
    QCOMPARE(label[16], 0);                                  // unused entries are zero
    QCOMPARE(label[20], 0);
    auto back = DetectionLoss::decodeLabels(label.data(), 4);
    QCOMPARE(back.size(), std::size_t(3));
    const LabelBox &small = back[1];
    QCOMPARE(small.x0, 1.5f);
    QCOMPARE(small.y0, 2.25f);
    QCOMPARE(small.x1, 40.0625f);
    QCOMPARE(small.y1, 60.0f);
    QVERIFY(!small.ignore && back[2].ignore);

    // More boxes than room: the two largest objects stay.
    std::vector<std::int32_t> two(std::size_t(DetectionLoss::labelWidth(2)));
    DetectionLoss::encode(boxes, 2, two.data());
    back = DetectionLoss::decodeLabels(two.data(), 2);
    QCOMPARE(back.size(), std::size_t(2));
    QVERIFY(!back[0].ignore && !back[1].ignore);
    QCOMPARE(back[0].x0, 100.0f);

    label[5] = 3; // kind of box 0
    QVERIFY_THROWS_EXCEPTION(Error, DetectionLoss::decodeLabels(label.data(), 4));
    label[5] = 1;
    label[0] = 5; // count beyond max_objects
    QVERIFY_THROWS_EXCEPTION(Error, DetectionLoss::decodeLabels(label.data(), 4));
}

void TestDetection::decodeFindsPlantedBoxes()
{
    const int h = 48, w = 64;
    const std::int64_t plane = std::int64_t(h) * w;
    std::vector<float> out(std::size_t(5 * plane), 0.0f);
    std::fill(out.begin(), out.begin() + plane, -5.0f);
    struct Plant
    {
        int x, y;
        float logit, offX, offY, widthPx, heightPx;
    };
    const Plant plants[] = {{10, 5, 3.0f, 0.25f, 0.5f, 24, 60},
                            {40, 30, 1.0f, 0.0f, 0.75f, 40, 32},
                            {60, 44, -0.5f, 0.5f, 0.5f, 12, 12},  // sigmoid 0.38
                            {20, 40, -2.0f, 0.5f, 0.5f, 12, 12}}; // sigmoid 0.12: below 0.3
    for (const Plant &p : plants) {
        const std::int64_t at = std::int64_t(p.y) * w + p.x;
        out[std::size_t(at)] = p.logit;
        out[std::size_t(at + 1)] = p.logit - 1.0f; // a shoulder, suppressed by the 3x3 NMS
        out[std::size_t(plane + at)] = std::log(p.widthPx / 4);
        out[std::size_t(2 * plane + at)] = std::log(p.heightPx / 4);
        out[std::size_t(3 * plane + at)] = p.offX;
        out[std::size_t(4 * plane + at)] = p.offY;
    }
    DecodeOptions o;
    o.stride = 4;
    const auto boxes = DetectionLoss::decode(out.data(), h, w, o);
    QCOMPARE(boxes.size(), std::size_t(3));
    for (std::size_t i = 0; i < 3; ++i) {
        const Plant &p = plants[i]; // already in score order
        const float cx = (float(p.x) + p.offX) * 4, cy = (float(p.y) + p.offY) * 4;
        QVERIFY(std::abs(boxes[i].x0 - (cx - p.widthPx / 2)) < 1e-3f);
        QVERIFY(std::abs(boxes[i].x1 - (cx + p.widthPx / 2)) < 1e-3f);
        QVERIFY(std::abs(boxes[i].y0 - (cy - p.heightPx / 2)) < 1e-3f);
        QVERIFY(std::abs(boxes[i].y1 - (cy + p.heightPx / 2)) < 1e-3f);
        QVERIFY(std::abs(boxes[i].score - 1 / (1 + std::exp(-p.logit))) < 1e-6f);
    }
    o.top_k = 1;
    QCOMPARE(DetectionLoss::decode(out.data(), h, w, o).size(), std::size_t(1));
    o.top_k = 100;
    o.threshold = 0.1f;
    QCOMPARE(DetectionLoss::decode(out.data(), h, w, o).size(), std::size_t(4));

    // Speed: one 64x48 frame, well under a millisecond.
    o.threshold = 0.3f;
    const auto start = std::chrono::steady_clock::now();
    std::size_t found = 0;
    for (int i = 0; i < 1000; ++i)
        found += DetectionLoss::decode(out.data(), h, w, o).size();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count() /
        1000;
    QCOMPARE(found, std::size_t(3000));
    qInfo("decode of 64x48 cells: %.4f ms", ms);
    QVERIFY2(ms < 0.5, qPrintable(QString::number(ms)));
}

void TestDetection::specFieldsAreValidatedAndWrittenBack()
{
    const ModelSpec small = ModelSpec::fromJson(Json::parse(kSmallDetector), "small");
    QCOMPARE(small.labelWidth(), 16);
    QVERIFY(small.loss().type == LossSpec::Type::CenterNet);
    const std::string written = small.toJson().dump();
    QVERIFY(written.find(R"("loss":{"type":"centernet","stride":4,"max_objects":3})") !=
            std::string::npos);
    const ModelSpec again = ModelSpec::fromJson(Json::parse(written), "again");
    QCOMPARE(again.toJson().dump(), written);
    QVERIFY(again.loss() == small.loss());
    // The built layers write back their options too (upsample2d, bias_init).
    auto stages = small.buildStages();
    QCOMPARE(stages[4]->spec().dump(), std::string(R"({"type":"upsample2d","factor":2})"));
    QVERIFY(stages[5]->spec().dump().find(R"("bias_init":[-2.19,0,0,0,0.5])") != std::string::npos);
    // A classifier does not grow a "loss" field; an explicit default is accepted and dropped.
    const ModelSpec lenet = Zoo::spec("lenet5");
    QVERIFY(lenet.toJson().dump().find("loss") == std::string::npos);
    QCOMPARE(lenet.labelWidth(), 1);
    Json explicitDefault = lenet.toJson();
    explicitDefault.set("loss", Json::parse(R"({"type": "softmax_cross_entropy"})"));
    QCOMPARE(ModelSpec::fromJson(explicitDefault).toJson().dump(), lenet.toJson().dump());

    auto with = [](const char *from, const char *to) {
        std::string s = kSmallDetector;
        const auto at = s.find(from);
        if (at == std::string::npos)
            qFatal("the test's spec has no %s", from);
        s.replace(at, std::strlen(from), to);
        return s;
    };
    expectSpecError(with(R"("type": "centernet")", R"("type": "yolo")").c_str(), "yolo");
    expectSpecError(with(R"("stride": 4,)", R"("stride": 0,)").c_str(), "\"stride\"");
    expectSpecError(with(R"("max_objects": 3)", R"("max_objects": 3, "iou": 1)").c_str(),
                    "\"iou\"");
    expectSpecError(with(R"("max_objects": 3)", R"("max_objects": "many")").c_str(),
                    "\"max_objects\"");
    expectSpecError(with(R"("stride": 4,)", R"("stride": 8,)").c_str(), "[5, 2, 3]");
    expectSpecError(with(R"(0, 0, 0, 0.5])", R"(0, 0.5])").c_str(), "bias_init");
    expectSpecError(with(R"([-2.19, 0, 0, 0, 0.5])", R"("low")").c_str(), "bias_init");
    expectSpecError(
        with(R"({"type": "upsample2d"})", R"({"type": "upsample2d", "factor": 0})").c_str(),
        "\"factor\"");
    expectSpecError(R"({"name": "c", "input": [1, 8, 8], "loss": {"type": "centernet"},
        "stages": [{"type": "flatten"}, {"type": "linear", "out_features": 3}]})",
                    "loss centernet");
    expectSpecError(R"({"name": "c", "input": [4], "loss": "centernet",
        "stages": [{"type": "linear", "out_features": 3}]})",
                    "loss");
}

void TestDetection::detectorZooModel()
{
    QVERIFY(std::find(Zoo::names().begin(), Zoo::names().end(), "detector") != Zoo::names().end());
    const ModelSpec spec = Zoo::spec("detector");
    QCOMPARE(spec.inputShape(), (Shape{3, 192, 256}));
    QCOMPARE(spec.labelWidth(), 1 + 5 * 32);
    QCOMPARE(spec.loss().centernet.stride, 4);
    QVERIFY(spec.stages().toArray().size() >= 8); // a chain to checkpoint
    Model model(spec.withInputShape({3, 64, 96}), 1);
    QCOMPARE(model.classCount(), 5);
    const auto params = model.parameters();
    const Parameter &bias = *params.back().parameter;
    QCOMPARE(bias.name, std::string("bias"));
    QCOMPARE(bias.value.data()[0], -2.19f);
    for (int c = 1; c < 5; ++c)
        QCOMPARE(bias.value.data()[c], 0.0f);
    PassContext eval;
    eval.training = false;
    const Tensor y = model.forward(tests::randomTensor(model.batchShape(2), 1), eval);
    QCOMPARE(y.shape(), (Shape{2, 5, 16, 24}));
    QVERIFY_THROWS_EXCEPTION(SpecError, spec.withInputShape({3, 60, 96}));
}

void TestDetection::safetensorsRoundTrip()
{
    setThreadCount(1);
    const ModelSpec spec = ModelSpec::fromJson(Json::parse(kSmallDetector), "small");
    Model trained(spec, 1);
    const Tensor x = tests::randomTensor(trained.batchShape(2), 3);
    const auto labels = encodeAll({{{2, 2, 10, 12, false}}, {}}, 3);
    trained.forwardBackward(x, labels.data(), PassContext{});
    Sgd(trained, {}).step(0.1);
    QTemporaryDir dir;
    const std::string path = (dir.path() + QStringLiteral("/d.safetensors")).toStdString();
    Safetensors::saveModel(trained, path);
    Model loaded(spec, 99);
    Safetensors::loadModel(loaded, path);
    PassContext eval;
    eval.training = false;
    const Tensor a = trained.forward(x, eval), b = loaded.forward(x, eval);
    for (std::int64_t i = 0; i < a.numel(); ++i)
        QCOMPARE(a.data()[i], b.data()[i]);
    const Safetensors file = Safetensors::read(path);
    const std::string &meta = file.metadata().at("edgetrain.model_spec");
    const ModelSpec back = ModelSpec::fromJson(Json::parse(meta), "metadata");
    QVERIFY(back.loss() == spec.loss());
    QCOMPARE(back.toJson().dump(), spec.toJson().dump());
}

void TestDetection::trainerChecksLabelWidth()
{
    const ModelSpec spec = ModelSpec::fromJson(Json::parse(kSmallDetector), "small");
    Model model(spec, 1);
    const std::int64_t n = 4, numel = spec.inputShape().numel();
    TensorDataset classes("class data", spec.inputShape(), 2,
                          std::vector<float>(std::size_t(n * numel)), {0, 1, 0, 1});
    try {
        Trainer::run(model, classes, nullptr, TrainOptions{}, {});
        QFAIL("a dataset of class labels was accepted for a detector");
    } catch (const ShapeError &e) {
        const QString what = QString::fromUtf8(e.what());
        QVERIFY2(what.contains(QLatin1String("class data")) &&
                     what.contains(QLatin1String(" 1 ")) && what.contains(QLatin1String("16")) &&
                     what.contains(QLatin1String("centernet")),
                 qPrintable(what));
    }
    // The wide dataset itself: sizes checked, gather copies whole records, views forward it.
    QVERIFY_THROWS_EXCEPTION(Error,
                             TensorDataset("bad", spec.inputShape(), 1,
                                           std::vector<float>(std::size_t(n * numel)),
                                           std::vector<std::int32_t>(std::size_t(n * 16 - 1)), 16));
    std::vector<std::int32_t> wide(std::size_t(n * 16));
    for (std::size_t i = 0; i < wide.size(); ++i)
        wide[i] = std::int32_t(i);
    const TensorDataset boxes("box data", spec.inputShape(), 1,
                              std::vector<float>(std::size_t(n * numel)), wide, 16);
    QCOMPARE(boxes.size(), n);
    QCOMPARE(boxes.labelWidth(), 16);
    const RangeView view(boxes, 1, 4);
    QCOMPARE(view.labelWidth(), 16);
    const std::int64_t pick[2] = {2, 0};
    std::vector<float> images(std::size_t(2 * numel));
    std::vector<std::int32_t> got(32, -1);
    view.gather(pick, 2, images.data(), got.data());
    QCOMPARE(got[0], 48);  // sample 3's first value
    QCOMPARE(got[31], 31); // sample 1's last
    QCOMPARE(boxes.slice(1, 3).labels().front(), 16);
    QCOMPARE(boxes.slice(1, 3).size(), std::int64_t(2));
}

void TestDetection::detectorLearnsSyntheticScene()
{
    setThreadCount(2);
    const auto start = std::chrono::steady_clock::now();
    const ModelSpec spec = Zoo::spec("detector").withInputShape({3, 64, 96});
    const int maxObjects = spec.loss().centernet.max_objects;
    // 48 frames: noise, and 1-3 bright rectangles of 10-28 px.
    const std::int64_t frames = 48, numel = spec.inputShape().numel(), plane = 64 * 96;
    std::vector<float> images(std::size_t(frames * numel));
    std::vector<std::vector<LabelBox>> truth(static_cast<std::size_t>(frames));
    Rng rng(42);
    for (std::int64_t n = 0; n < frames; ++n) {
        float *img = images.data() + n * numel;
        for (std::int64_t i = 0; i < numel; ++i)
            img[i] = rng.uniform(-0.5f, 0.5f);
        const int count = 1 + int(rng.below(3));
        for (int k = 0; k < count; ++k) {
            const int bw = 10 + int(rng.below(19)), bh = 10 + int(rng.below(19));
            const int x0 = int(rng.below(std::uint64_t(96 - bw))),
                      y0 = int(rng.below(std::uint64_t(64 - bh)));
            LabelBox b{float(x0), float(y0), float(x0 + bw), float(y0 + bh), false};
            bool overlaps = false;
            for (const LabelBox &o : truth[std::size_t(n)])
                overlaps |=
                    b.x0 < o.x1 + 4 && o.x0 < b.x1 + 4 && b.y0 < o.y1 + 4 && o.y0 < b.y1 + 4;
            if (overlaps)
                continue;
            for (int c = 0; c < 3; ++c)
                for (int y = y0; y < y0 + bh; ++y)
                    for (int x = x0; x < x0 + bw; ++x)
                        img[c * plane + y * 96 + x] = 1.5f + rng.uniform(-0.3f, 0.3f);
            truth[std::size_t(n)].push_back(b);
        }
    }
    const TensorDataset data("rectangles", spec.inputShape(), 1, images,
                             encodeAll(truth, maxObjects), spec.labelWidth());
    Model model(spec, 3);
    TrainOptions o;
    o.epochs = 15; // 6 batches of 8: 90 steps
    o.batch = 8;
    o.lr = 0.05;
    o.sgd.momentum = 0.9;
    std::vector<double> losses;
    const TrainResult r =
        Trainer::run(model, data, nullptr, o,
                     {[&](const BatchProgress &p) { losses.push_back(p.loss); }, {}, {}});
    QCOMPARE(losses.size(), std::size_t(90));
    const double first = (losses[0] + losses[1] + losses[2]) / 3;
    const double last = (losses[87] + losses[88] + losses[89]) / 3;
    qInfo("loss %.3f -> %.3f; centre recall in the last epoch %.2f", first, last,
          r.epochs.back().train_accuracy);
    QVERIFY2(last < first / 4, qPrintable(QStringLiteral("%1 -> %2").arg(first).arg(last)));

    // Decoded boxes match the rectangles of the frames it learned from.
    PassContext eval;
    eval.training = false;
    Tensor x(model.batchShape(frames), MemoryCategory::Activations);
    std::copy(images.begin(), images.end(), x.data());
    const Tensor y = model.forward(x, eval);
    DecodeOptions d;
    d.stride = 4;
    int matched = 0, total = 0, extra = 0;
    for (std::int64_t n = 0; n < frames; ++n) {
        const auto found = DetectionLoss::decode(y.data() + n * y.dim(1) * y.dim(2) * y.dim(3),
                                                 int(y.dim(2)), int(y.dim(3)), d);
        for (const LabelBox &t : truth[std::size_t(n)]) {
            ++total;
            bool hit = false;
            for (const DecodedBox &b : found)
                hit |= iou(b, t) > 0.5f;
            matched += hit ? 1 : 0;
        }
        extra += std::max(0, int(found.size()) - int(truth[std::size_t(n)].size()));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    qInfo("%d of %d rectangles found at IoU > 0.5, %d extra boxes, %.1f s", matched, total, extra,
          seconds);
    QVERIFY2(matched >= total * 8 / 10,
             qPrintable(QStringLiteral("%1 / %2").arg(matched).arg(total)));
    QVERIFY2(extra <= total / 4, qPrintable(QString::number(extra)));
}

QTEST_APPLESS_MAIN(TestDetection)
#include "tst_detection.moc"

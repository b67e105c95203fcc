#include "zoo.h"

#include "error.h"

#include <array>
#include <filesystem>

namespace edgetrain::core {

namespace {

Json layer(const char *type)
{
    Json j;
    j.set("type", type);
    return j;
}

Json conv(int out, int kernel, int stride, int padding, bool bias)
{
    Json j = layer("conv2d");
    j.set("out_channels", out).set("kernel", kernel).set("stride", stride);
    j.set("padding", padding).set("bias", bias);
    return j;
}

Json linear(int out)
{
    Json j = layer("linear");
    j.set("out_features", out);
    return j;
}

Json pool(const char *type, int kernel, int stride, int padding)
{
    Json j = layer(type);
    j.set("kernel", kernel).set("stride", stride).set("padding", padding);
    return j;
}

Json named(Json j, const char *name)
{
    j.set("name", name);
    return j;
}

Json sequential(const std::string &name, Json::Array layers)
{
    Json j = layer("sequential");
    j.set("name", name).set("layers", Json(std::move(layers)));
    return j;
}

Json document(const char *name, std::vector<std::int64_t> input, Json::Array stages)
{
    Json shape = Json::array();
    for (auto d : input)
        shape.push(d);
    Json j;
    j.set("name", name).set("input", std::move(shape)).set("stages", Json(std::move(stages)));
    return j;
}

Json mlp()
{
    return document(
        "mlp", {1, 28, 28},
        {layer("flatten"), linear(512), layer("relu"), linear(256), layer("relu"), linear(10)});
}

Json lenet5()
{
    return document("lenet5", {1, 28, 28},
                    {conv(6, 5, 1, 2, true), layer("relu"), pool("maxpool2d", 2, 2, 0),
                     conv(16, 5, 1, 0, true), layer("relu"), pool("maxpool2d", 2, 2, 0),
                     layer("flatten"), linear(120), layer("relu"), linear(84), layer("relu"),
                     linear(10)});
}

/** The viewpoint student: a small CNN for object-vs-background crops (colour, 48x24 by
 *  default; vision/ changes the input size with withInputShape). */
Json student()
{
    return document("student", {3, 48, 24},
                    {conv(16, 5, 1, 2, true), layer("relu"), pool("maxpool2d", 2, 2, 0),
                     conv(32, 3, 1, 1, true), layer("relu"), pool("maxpool2d", 2, 2, 0),
                     conv(32, 3, 1, 1, true), layer("relu"), pool("maxpool2d", 2, 2, 0),
                     layer("flatten"), linear(64), layer("relu"), linear(2)});
}

/** The viewpoint detector: a CenterNet-style one-class detector over a whole (downscaled) frame,
 *  [3, 192, 256] by default (vision/ sets its frame size with withInputShape, multiples of 8).
 *  Three stride-2 3x3 convolutions down to 1/8, one nearest upsampling back to 1/4, and a 1x1
 *  head of 5 channels whose heatmap bias starts at -2.19 (prior 0.1, as CenterNet does). */
Json detector()
{
    auto block = [](const char *name, int out, int stride) {
        return sequential(name, {named(conv(out, 3, stride, 1, false), "conv"),
                                 named(layer("batchnorm2d"), "bn"), named(layer("relu"), "relu")});
    };
    Json head = conv(5, 1, 1, 0, true);
    Json prior = Json::array();
    for (double b : {-2.19, 0.0, 0.0, 0.0, 0.0})
        prior.push(b);
    head.set("bias_init", std::move(prior));
    Json doc = document("detector", {3, 192, 256},
                        {block("0", 16, 2), block("1", 24, 2), block("2", 24, 1), block("3", 48, 2),
                         block("4", 48, 1), block("5", 48, 1), named(layer("upsample2d"), "6"),
                         block("7", 32, 1), named(std::move(head), "8")});
    Json loss;
    loss.set("type", "centernet").set("stride", 4).set("max_objects", 32);
    doc.set("loss", std::move(loss));
    return doc;
}

/** CIFAR ResNet (He et al. 2016), option-A shortcuts, as a flat chain: stem, 3n blocks, head. */
Json cifarResnet(int depth, const char *name)
{
    const int n = (depth - 2) / 6;
    Json::Array stages;
    stages.push_back(
        sequential("0", {conv(16, 3, 1, 1, false), layer("batchnorm2d"), layer("relu")}));
    int in = 16, index = 1;
    for (const auto &[out, stride] : {std::pair{16, 1}, std::pair{32, 2}, std::pair{64, 2}}) {
        for (int i = 0; i < n; ++i) {
            const int s = i == 0 ? stride : 1;
            Json block = layer("basic_block");
            block.set("name", std::to_string(index++)).set("out_channels", out).set("stride", s);
            block.set("shortcut", (s == 1 && in == out) ? "identity" : "pad");
            stages.push_back(std::move(block));
            in = out;
        }
    }
    stages.push_back(sequential(std::to_string(index),
                                {named(layer("global_avg_pool"), "pool"),
                                 named(layer("flatten"), "flatten"), named(linear(10), "fc")}));
    return document(name, {3, 32, 32}, std::move(stages));
}

/** ImageNet ResNet with torchvision's parameter names. */
Json imagenetResnet(const char *name, bool bottleneck, std::array<int, 4> blocks)
{
    Json::Array stages;
    stages.push_back(sequential(
        "", {named(conv(64, 7, 2, 3, false), "conv1"), named(layer("batchnorm2d"), "bn1"),
             named(layer("relu"), "relu"), named(pool("maxpool2d", 3, 2, 1), "maxpool")}));
    const int expansion = bottleneck ? 4 : 1;
    int in = 64;
    for (int stageIndex = 0; stageIndex < 4; ++stageIndex) {
        const int width = 64 << stageIndex;
        const int out = width * expansion;
        for (int i = 0; i < blocks[std::size_t(stageIndex)]; ++i) {
            const int stride = (i == 0 && stageIndex > 0) ? 2 : 1;
            Json block = layer(bottleneck ? "bottleneck" : "basic_block");
            block.set("name", "layer" + std::to_string(stageIndex + 1) + "." + std::to_string(i));
            block.set("out_channels", out).set("stride", stride);
            if (bottleneck)
                block.set("width", width);
            block.set("shortcut", (stride == 1 && in == out) ? "identity" : "projection");
            stages.push_back(std::move(block));
            in = out;
        }
    }
    stages.push_back(
        sequential("", {named(layer("global_avg_pool"), "avgpool"),
                        named(layer("flatten"), "flatten"), named(linear(1000), "fc")}));
    return document(name, {3, 224, 224}, std::move(stages));
}

Json zooDocument(const std::string &name)
{
    if (name == "mlp")
        return mlp();
    if (name == "lenet5")
        return lenet5();
    if (name == "student")
        return student();
    if (name == "detector")
        return detector();
    for (int depth : {20, 32, 44, 56, 110})
        if (name == "resnet" + std::to_string(depth))
            return cifarResnet(depth, name.c_str());
    if (name == "resnet18")
        return imagenetResnet("resnet18", false, {2, 2, 2, 2});
    if (name == "resnet34")
        return imagenetResnet("resnet34", false, {3, 4, 6, 3});
    if (name == "resnet50")
        return imagenetResnet("resnet50", true, {3, 4, 6, 3});
    if (name == "resnet101")
        return imagenetResnet("resnet101", true, {3, 4, 23, 3});
    if (name == "resnet152")
        return imagenetResnet("resnet152", true, {3, 8, 36, 3});
    return Json();
}

} // namespace

std::vector<std::string> Zoo::names()
{
    return {"mlp",      "lenet5",    "student",  "detector", "resnet20", "resnet32",  "resnet44",
            "resnet56", "resnet110", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152"};
}

bool Zoo::contains(const std::string &name)
{
    return !zooDocument(name).isNull();
}

ModelSpec Zoo::spec(const std::string &name)
{
    const Json doc = zooDocument(name);
    if (doc.isNull()) {
        std::string known;
        for (const auto &n : names())
            known += (known.empty() ? "" : ", ") + n;
        throw SpecError("unknown model '" + name + "' (the zoo has " + known +
                        "; or give a ModelSpec .json file)");
    }
    return ModelSpec::fromJson(doc, "zoo model '" + name + "'");
}

ModelSpec Zoo::resolve(const std::string &nameOrPath)
{
    if (Zoo::contains(nameOrPath))
        return spec(nameOrPath);
    if (nameOrPath.find('/') != std::string::npos || nameOrPath.ends_with(".json") ||
        std::filesystem::exists(nameOrPath))
        return ModelSpec::load(nameOrPath);
    return spec(nameOrPath); // throws with the list of known names
}

} // namespace edgetrain::core

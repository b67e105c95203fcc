#include "modelspec.h"

#include "avgpool2d.h"
#include "batchnorm2d.h"
#include "conv2d.h"
#include "dropout.h"
#include "error.h"
#include "fieldcheck.h"
#include "flatten.h"
#include "globalavgpool.h"
#include "linear.h"
#include "maxpool2d.h"
#include "memorysimulation.h"
#include "relu.h"
#include "residualblock.h"
#include "upsample2d.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

namespace edgetrain::core {

namespace {

/** Reads the fields of one JSON object, naming it in every error. */
class Fields
{
public:
    Fields(const Json &object, std::string where) : m_object(object), m_where(std::move(where))
    {
        if (!object.isObject())
            fail("expected an object");
    }

    [[noreturn]] void fail(const std::string &what) const
    {
        throw SpecError(m_where + ": " + what);
    }

    void allowOnly(std::initializer_list<std::string_view> keys) const
    {
        for (const auto &[key, value] : m_object.toObject())
            if (std::find(keys.begin(), keys.end(), key) == keys.end())
                fail("unknown field \"" + key + "\"");
    }

    std::int64_t integer(std::string_view key, std::optional<std::int64_t> fallback,
                         std::int64_t lo, std::int64_t hi) const
    {
        const Json *v = m_object.find(key);
        if (!v) {
            if (!fallback)
                fail(FieldCheck::missing(key));
            return *fallback;
        }
        if (!v->isNumber() || !FieldCheck::isIntegral(v->toDouble()))
            fail(FieldCheck::mustBe(key, FieldCheck::integerFrom(lo, hi)));
        const auto i = std::int64_t(v->toDouble());
        if (const std::string problem = FieldCheck::integerIn(key, i, lo, hi); !problem.empty())
            fail(problem);
        return i;
    }

    double number(std::string_view key, double fallback) const
    {
        const Json *v = m_object.find(key);
        if (!v)
            return fallback;
        if (!v->isNumber())
            fail(FieldCheck::mustBe(key, "a number"));
        return v->toDouble();
    }

    bool boolean(std::string_view key, bool fallback) const
    {
        const Json *v = m_object.find(key);
        if (!v)
            return fallback;
        if (!v->isBool())
            fail(FieldCheck::mustBe(key, "true or false"));
        return v->toBool();
    }

    std::string string(std::string_view key, std::optional<std::string> fallback) const
    {
        const Json *v = m_object.find(key);
        if (!v) {
            if (!fallback)
                fail(FieldCheck::missing(key));
            return *fallback;
        }
        if (!v->isString())
            fail(FieldCheck::mustBe(key, "a string"));
        return v->toString();
    }

    /** Errors from layer constructors lack the file and index: add them (once). */
    [[noreturn]] void rethrowWithLocation(const Error &e) const
    {
        const std::string what = e.what();
        if (what.rfind(m_where, 0) == 0)
            throw SpecError(what);
        fail(what);
    }

    const Json *find(std::string_view key) const { return m_object.find(key); }
    const std::string &where() const { return m_where; }

private:
    const Json &m_object;
    std::string m_where;
};

constexpr std::int64_t kMaxChannels = 1 << 16;

bool isLayerType(const std::string &type)
{
    static const char *const kTypes[] = {"conv2d",    "linear",    "batchnorm2d",     "relu",
                                         "maxpool2d", "avgpool2d", "global_avg_pool", "flatten",
                                         "dropout",   "upsample2d"};
    return std::find(std::begin(kTypes), std::end(kTypes), type) != std::end(kTypes);
}

Pool2dOptions poolOptions(const Fields &f)
{
    f.allowOnly({"type", "name", "kernel", "stride", "padding"});
    Pool2dOptions o;
    o.kernel = int(f.integer("kernel", 2, 1, 64));
    o.stride = int(f.integer("stride", o.kernel, 1, 64));
    o.padding = int(f.integer("padding", 0, 0, 32));
    return o;
}

/** Builds one layer for `input` (a batch shape); the shape is updated to the output. */
std::unique_ptr<Layer> makeLayer(const Json &entry, const std::string &name, Shape &input,
                                 const std::string &where)
{
    const Fields f(entry, where);
    const std::string type = f.string("type", std::nullopt);
    std::unique_ptr<Layer> layer;
    try {
        if (type == "conv2d") {
            f.allowOnly({"type", "name", "out_channels", "kernel", "stride", "padding", "dilation",
                         "bias", "bias_init"});
            if (input.rank() != 4)
                f.fail("conv2d needs an image input [C, H, W]; it gets " +
                       input.sample().toString());
            Conv2dOptions o;
            o.out_channels = int(f.integer("out_channels", std::nullopt, 1, kMaxChannels));
            o.kernel = int(f.integer("kernel", std::nullopt, 1, 31));
            o.stride = int(f.integer("stride", 1, 1, 16));
            o.padding = int(f.integer("padding", 0, 0, 15));
            o.dilation = int(f.integer("dilation", 1, 1, 16));
            o.bias = f.boolean("bias", true);
            if (const Json *init = f.find("bias_init")) {
                if (init->isNumber()) {
                    o.bias_init = {init->toDouble()};
                } else if (init->isArray() && !init->toArray().empty()) {
                    for (const Json &v : init->toArray()) {
                        if (!v.isNumber())
                            f.fail("field \"bias_init\" must be a number or a list of numbers");
                        o.bias_init.push_back(v.toDouble());
                    }
                } else {
                    f.fail("field \"bias_init\" must be a number or a list of numbers");
                }
            }
            layer = std::make_unique<Conv2d>(name, int(input[1]), o);
        } else if (type == "linear") {
            f.allowOnly({"type", "name", "out_features", "bias"});
            const std::int64_t out = f.integer("out_features", std::nullopt, 1, 1 << 24);
            layer = std::make_unique<Linear>(name, input.numel() / input[0], out,
                                             f.boolean("bias", true));
        } else if (type == "batchnorm2d") {
            f.allowOnly({"type", "name", "eps", "momentum"});
            if (input.rank() != 4)
                f.fail("batchnorm2d needs an image input [C, H, W]; it gets " +
                       input.sample().toString());
            layer = std::make_unique<BatchNorm2d>(name, int(input[1]), f.number("eps", 1e-5),
                                                  f.number("momentum", 0.1));
        } else if (type == "relu") {
            f.allowOnly({"type", "name"});
            layer = std::make_unique<ReLU>(name);
        } else if (type == "maxpool2d") {
            layer = std::make_unique<MaxPool2d>(name, poolOptions(f));
        } else if (type == "avgpool2d") {
            layer = std::make_unique<AvgPool2d>(name, poolOptions(f));
        } else if (type == "global_avg_pool") {
            f.allowOnly({"type", "name"});
            layer = std::make_unique<GlobalAvgPool>(name);
        } else if (type == "flatten") {
            f.allowOnly({"type", "name"});
            layer = std::make_unique<Flatten>(name);
        } else if (type == "upsample2d") {
            f.allowOnly({"type", "name", "factor"});
            layer = std::make_unique<Upsample2d>(name, int(f.integer("factor", 2, 1, 16)));
        } else if (type == "dropout") {
            f.allowOnly({"type", "name", "p"});
            layer = std::make_unique<Dropout>(name, f.number("p", 0.5));
        } else {
            f.fail("unknown layer type \"" + type + "\"");
        }
        input = layer->outputShape(input);
    } catch (const Error &e) {
        f.rethrowWithLocation(e);
    }
    return layer;
}

LossSpec parseLoss(const Json &json, const std::string &where)
{
    const Fields f(json, where);
    LossSpec loss;
    const std::string type = f.string("type", std::nullopt);
    if (type == "softmax_cross_entropy") {
        f.allowOnly({"type"});
    } else if (type == "centernet") {
        f.allowOnly({"type", "stride", "max_objects", "size_weight", "offset_weight"});
        loss.type = LossSpec::Type::CenterNet;
        DetectionLossOptions &o = loss.centernet;
        o.stride = int(f.integer("stride", 4, 1, 64));
        o.max_objects = int(f.integer("max_objects", 32, 1, 4096));
        o.size_weight = f.number("size_weight", 1.0);
        o.offset_weight = f.number("offset_weight", 1.0);
        if (!(o.size_weight >= 0.0 && o.size_weight <= 1000.0))
            f.fail("field \"size_weight\" must be in [0, 1000]");
        if (!(o.offset_weight >= 0.0 && o.offset_weight <= 1000.0))
            f.fail("field \"offset_weight\" must be in [0, 1000]");
    } else {
        f.fail("field \"type\": unknown loss \"" + type +
               "\" (softmax_cross_entropy or centernet)");
    }
    return loss;
}

std::string stageName(const Fields &f, std::size_t index)
{
    return f.string("name", std::to_string(index));
}

} // namespace

ModelSpec ModelSpec::fromJson(const Json &json, const std::string &source)
{
    const Fields top(json, source);
    top.allowOnly({"name", "input", "stages", "description", "loss"});
    ModelSpec spec;
    spec.m_source = source;
    spec.m_name = top.string("name", std::nullopt);
    const Json *input = top.find("input");
    if (!input || !input->isArray() || input->toArray().empty() || input->toArray().size() > 3)
        top.fail("field \"input\" must be the sample shape, e.g. [1, 28, 28]");
    std::vector<std::int64_t> dims;
    for (const Json &d : input->toArray()) {
        if (!d.isNumber() || d.toDouble() < 1 || d.toDouble() > 65536 ||
            d.toDouble() != double(std::int64_t(d.toDouble())))
            top.fail("field \"input\" must hold positive integers");
        dims.push_back(std::int64_t(d.toDouble()));
    }
    spec.m_input = Shape(std::move(dims));
    const Json *stages = top.find("stages");
    if (!stages || !stages->isArray() || stages->toArray().empty())
        top.fail("field \"stages\" must be a non-empty array");
    spec.m_stages = *stages;
    if (const Json *loss = top.find("loss"))
        spec.m_loss = parseLoss(*loss, source + ": loss");
    spec.validate();
    return spec;
}

ModelSpec ModelSpec::load(const std::string &path)
{
    return fromJson(Json::parseFile(path, "cannot open model spec"), path);
}

Json ModelSpec::toJson() const
{
    Json input = Json::array();
    for (auto d : m_input.dims())
        input.push(d);
    Json j;
    j.set("name", m_name).set("input", std::move(input));
    if (m_loss.type == LossSpec::Type::CenterNet) {
        const DetectionLossOptions &o = m_loss.centernet;
        Json loss;
        loss.set("type", "centernet").set("stride", o.stride).set("max_objects", o.max_objects);
        if (o.size_weight != 1.0)
            loss.set("size_weight", o.size_weight);
        if (o.offset_weight != 1.0)
            loss.set("offset_weight", o.offset_weight);
        j.set("loss", std::move(loss));
    }
    j.set("stages", m_stages);
    return j;
}

ModelSpec ModelSpec::withInputShape(const Shape &sample) const
{
    ModelSpec spec = *this;
    spec.m_input = sample;
    spec.m_source = m_source + " at input " + sample.toString();
    spec.validate();
    return spec;
}

void ModelSpec::validate() const
{
    // Every field and shape is checked now, not at first use; with virtual tensors, so that
    // checking ResNet-152 costs microseconds, not half a gigabyte of zeroed weights.
    MemorySimulation virtualWeights;
    buildStages();
}

std::vector<std::unique_ptr<Stage>> ModelSpec::buildStages() const
{
    std::vector<std::unique_ptr<Stage>> built;
    std::vector<std::int64_t> dims{2}; // a batch of 2: every layer's shape rules apply
    dims.insert(dims.end(), m_input.dims().begin(), m_input.dims().end());
    Shape shape(std::move(dims));
    const auto &entries = m_stages.toArray();
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const std::string where = m_source + ": stages[" + std::to_string(i) + "]";
        const Fields f(entries[i], where);
        const std::string type = f.string("type", std::nullopt);
        const std::string name = stageName(f, i);
        if (isLayerType(type)) {
            std::vector<std::unique_ptr<Layer>> layers;
            layers.push_back(makeLayer(entries[i], "", shape, where));
            built.push_back(std::make_unique<SequentialStage>(name, std::move(layers), true));
        } else if (type == "sequential") {
            f.allowOnly({"type", "name", "layers"});
            const Json *list = f.find("layers");
            if (!list || !list->isArray() || list->toArray().empty())
                f.fail("field \"layers\" must be a non-empty array");
            std::vector<std::unique_ptr<Layer>> layers;
            const auto &items = list->toArray();
            for (std::size_t k = 0; k < items.size(); ++k) {
                const std::string itemWhere = where + ".layers[" + std::to_string(k) + "]";
                const Fields lf(items[k], itemWhere);
                layers.push_back(
                    makeLayer(items[k], lf.string("name", std::to_string(k)), shape, itemWhere));
            }
            built.push_back(std::make_unique<SequentialStage>(name, std::move(layers), false));
        } else if (type == "basic_block" || type == "bottleneck") {
            f.allowOnly({"type", "name", "out_channels", "stride", "width", "shortcut"});
            if (shape.rank() != 4)
                f.fail(type + " needs an image input [C, H, W]; it gets " +
                       shape.sample().toString());
            ResidualBlock::Options o;
            o.kind = type == "basic_block" ? ResidualBlock::Kind::Basic
                                           : ResidualBlock::Kind::Bottleneck;
            o.out_channels = int(f.integer("out_channels", std::nullopt, 1, kMaxChannels));
            o.stride = int(f.integer("stride", 1, 1, 16));
            o.width = int(f.integer("width", 0, 0, kMaxChannels));
            const bool same = shape[1] == o.out_channels && o.stride == 1;
            const std::string shortcut = f.string("shortcut", same ? "identity" : "projection");
            if (shortcut == "identity")
                o.shortcut = Shortcut::Identity;
            else if (shortcut == "pad")
                o.shortcut = Shortcut::PadA;
            else if (shortcut == "projection")
                o.shortcut = Shortcut::Projection;
            else
                f.fail("field \"shortcut\" must be identity, pad or projection");
            try {
                auto block = std::make_unique<ResidualBlock>(name, int(shape[1]), o);
                shape = block->outputShape(shape);
                built.push_back(std::move(block));
            } catch (const Error &e) {
                f.rethrowWithLocation(e);
            }
        } else {
            f.fail("unknown stage type \"" + type + "\"");
        }
    }
    if (m_loss.type == LossSpec::Type::CenterNet) {
        const int stride = m_loss.centernet.stride;
        const std::string where = m_source + ": loss centernet";
        if (m_input.rank() != 3 || m_input[1] % stride != 0 || m_input[2] % stride != 0)
            throw SpecError(where + ": the input " + m_input.toString() +
                            " must be [C, H, W] with H and W multiples of the stride " +
                            std::to_string(stride));
        const Shape expected{shape.rank() > 0 ? shape[0] : 2, DetectionLoss::kChannels,
                             m_input[1] / stride, m_input[2] / stride};
        if (shape != expected)
            throw SpecError(where + ": the last stage must produce " +
                            expected.sample().toString() + " (heatmap, log size, offset at 1/" +
                            std::to_string(stride) + " of the input); it produces " +
                            shape.sample().toString());
        return built;
    }
    if (shape.rank() != 2)
        throw SpecError(m_source +
                        ": the last stage must produce class scores [N, classes]; it "
                        "produces " +
                        shape.toString() + " (add flatten + linear)");
    return built;
}

} // namespace edgetrain::core

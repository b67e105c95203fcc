#include "onnxexport.h"

#include "core/error.h"
#include "core/fileio.h"

#include <cstring>
#include <onnx/onnx_pb.h>

namespace edgetrain::vision {

namespace {

/** The graph under construction: each layer adds its node and initializers and moves the name
 *  of the running value on. */
class GraphBuilder
{
public:
    explicit GraphBuilder(onnx::GraphProto &graph) : m_graph(graph) {}

    const std::string &value() const { return m_value; }
    void setValue(std::string name) { m_value = std::move(name); }

    std::string initializer(const std::string &name, const core::Tensor &t)
    {
        onnx::TensorProto *p = m_graph.add_initializer();
        p->set_name(name);
        p->set_data_type(onnx::TensorProto::FLOAT);
        for (std::int64_t d : t.shape().dims())
            p->add_dims(d);
        // raw_data is little-endian, as the engine's floats are on every platform it runs on.
        p->set_raw_data(reinterpret_cast<const char *>(t.data()),
                        std::size_t(t.numel()) * sizeof(float));
        return name;
    }

    std::string constant(const std::string &name, const std::vector<float> &values)
    {
        onnx::TensorProto *p = m_graph.add_initializer();
        p->set_name(name);
        p->set_data_type(onnx::TensorProto::FLOAT);
        p->add_dims(std::int64_t(values.size()));
        for (float v : values)
            p->add_float_data(v);
        return name;
    }

    /** A node reading the running value (then `extra` inputs) and becoming it. */
    onnx::NodeProto &node(const std::string &name, const char *op,
                          const std::vector<std::string> &extra = {})
    {
        onnx::NodeProto *n = m_graph.add_node();
        n->set_name(name);
        n->set_op_type(op);
        n->add_input(m_value);
        for (const std::string &in : extra)
            n->add_input(in);
        m_value = name; // layer names are unique: they prefix the parameter names
        n->add_output(m_value);
        return *n;
    }

private:
    onnx::GraphProto &m_graph;
    std::string m_value = OnnxExport::kInputName;
};

void ints(onnx::NodeProto &n, const char *name, std::initializer_list<std::int64_t> values)
{
    onnx::AttributeProto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t v : values)
        a->add_ints(v);
}

void integer(onnx::NodeProto &n, const char *name, std::int64_t value)
{
    onnx::AttributeProto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
}

void real(onnx::NodeProto &n, const char *name, float value)
{
    onnx::AttributeProto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(value);
}

void text(onnx::NodeProto &n, const char *name, const char *value)
{
    onnx::AttributeProto *a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(value);
}

int field(const core::Json &spec, const char *key, int fallback)
{
    const core::Json *v = spec.find(key);
    return v ? int(v->toInt()) : fallback;
}

const core::Tensor &parameter(core::Layer &layer, const std::string &name)
{
    for (core::Parameter *p : layer.parameters())
        if (p->name == name)
            return p->value;
    throw core::SpecError("layer '" + layer.name() + "' has no parameter '" + name + "'");
}

const core::Tensor &buffer(core::Layer &layer, const std::string &name)
{
    for (const core::LayerBuffer &b : layer.buffers())
        if (b.name == name && b.tensor)
            return *b.tensor;
    throw core::SpecError("layer '" + layer.name() + "' has no buffer '" + name + "'");
}

void pooling(GraphBuilder &g, const std::string &name, const char *op, const core::Json &spec)
{
    const int k = field(spec, "kernel", 2), s = field(spec, "stride", k);
    const int p = field(spec, "padding", 0);
    onnx::NodeProto &n = g.node(name, op);
    ints(n, "kernel_shape", {k, k});
    ints(n, "strides", {s, s});
    ints(n, "pads", {p, p, p, p});
    if (std::strcmp(op, "AveragePool") == 0)
        integer(n, "count_include_pad", 1); // the engine divides by k * k at the border too
}

/** The node(s) of one layer; `name` is its full name ("0.conv"). */
void addLayer(GraphBuilder &g, const std::string &name, core::Layer &layer)
{
    const std::string type(layer.type());
    const core::Json spec = layer.spec();
    const std::string prefix = name.empty() ? name : name + ".";
    if (type == "conv2d") {
        const int k = field(spec, "kernel", 1), s = field(spec, "stride", 1);
        const int p = field(spec, "padding", 0), d = field(spec, "dilation", 1);
        std::vector<std::string> in{g.initializer(prefix + "weight", parameter(layer, "weight"))};
        if (spec.find("bias") && spec.find("bias")->toBool())
            in.push_back(g.initializer(prefix + "bias", parameter(layer, "bias")));
        onnx::NodeProto &n = g.node(name, "Conv", in);
        ints(n, "kernel_shape", {k, k});
        ints(n, "strides", {s, s});
        ints(n, "pads", {p, p, p, p});
        ints(n, "dilations", {d, d});
    } else if (type == "batchnorm2d") {
        onnx::NodeProto &n =
            g.node(name, "BatchNormalization",
                   {g.initializer(prefix + "weight", parameter(layer, "weight")),
                    g.initializer(prefix + "bias", parameter(layer, "bias")),
                    g.initializer(prefix + "running_mean", buffer(layer, "running_mean")),
                    g.initializer(prefix + "running_var", buffer(layer, "running_var"))});
        real(n, "epsilon", float(spec.find("eps")->toDouble()));
    } else if (type == "relu") {
        g.node(name, "Relu");
    } else if (type == "maxpool2d") {
        pooling(g, name, "MaxPool", spec);
    } else if (type == "avgpool2d") {
        pooling(g, name, "AveragePool", spec);
    } else if (type == "global_avg_pool") {
        g.node(name, "GlobalAveragePool");
    } else if (type == "flatten") {
        integer(g.node(name, "Flatten"), "axis", 1);
    } else if (type == "linear") {
        std::vector<std::string> in{g.initializer(prefix + "weight", parameter(layer, "weight"))};
        if (spec.find("bias") && spec.find("bias")->toBool())
            in.push_back(g.initializer(prefix + "bias", parameter(layer, "bias")));
        integer(g.node(name, "Gemm", in), "transB", 1);
    } else if (type == "upsample2d") {
        const float f = float(field(spec, "factor", 2));
        // Resize's inputs: X, roi (unused by asymmetric), scales per axis.
        onnx::NodeProto &n =
            g.node(name, "Resize",
                   {g.constant(prefix + "roi", {}), g.constant(prefix + "scales", {1, 1, f, f})});
        text(n, "mode", "nearest");
        text(n, "coordinate_transformation_mode", "asymmetric");
        text(n, "nearest_mode", "floor");
    } else if (type == "dropout") {
        // Identity in inference: no node.
    } else {
        throw core::SpecError("layer '" + name + "' (" + type +
                              ") has no ONNX form in EdgeTrain's export (it exports conv2d, "
                              "batchnorm2d, relu, maxpool2d, avgpool2d, upsample2d, "
                              "global_avg_pool, flatten, linear, dropout)");
    }
}

void valueInfo(onnx::ValueInfoProto *v, const std::string &name, const core::Shape &sample)
{
    v->set_name(name);
    onnx::TypeProto_Tensor *t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    onnx::TensorShapeProto *shape = t->mutable_shape();
    shape->add_dim()->set_dim_param("batch");
    for (std::int64_t d : sample.dims())
        shape->add_dim()->set_dim_value(d);
}

} // namespace

std::string OnnxExport::serialise(core::Model &model,
                                  const std::map<std::string, std::string> &metadata)
{
    onnx::ModelProto proto;
    proto.set_ir_version(7); // the IR of opset 13
    proto.set_producer_name("EdgeTrain");
    proto.set_model_version(1);
    onnx::OperatorSetIdProto *opset = proto.add_opset_import();
    opset->set_domain("");
    opset->set_version(kOpset);
    for (const auto &[key, value] : metadata) {
        onnx::StringStringEntryProto *p = proto.add_metadata_props();
        p->set_key(key);
        p->set_value(value);
    }
    onnx::GraphProto *graph = proto.mutable_graph();
    graph->set_name(model.spec().name());
    GraphBuilder g(*graph);
    for (std::size_t i = 0; i < model.stageCount(); ++i) {
        core::Stage &stage = model.stage(i);
        if (stage.type() != "sequential")
            throw core::SpecError("stage '" + stage.name() + "' (" + std::string(stage.type()) +
                                  ") has no ONNX form in EdgeTrain's export (residual blocks "
                                  "are not exported)");
        stage.forEachLayer(
            [&](const std::string &name, core::Layer &layer) { addLayer(g, name, layer); });
    }
    if (graph->node_size() == 0)
        throw core::SpecError("model '" + model.spec().name() + "' has no layer to export");
    // The last node's output is the graph's output, under its public name.
    onnx::NodeProto *last = graph->mutable_node(graph->node_size() - 1);
    last->set_output(0, kOutputName);
    const core::Shape in = model.sampleShape();
    valueInfo(graph->add_input(), kInputName, in);
    core::Shape shape = model.batchShape(1);
    for (std::size_t i = 0; i < model.stageCount(); ++i)
        shape = model.stage(i).outputShape(shape);
    valueInfo(graph->add_output(), kOutputName,
              core::Shape(std::vector<std::int64_t>(shape.dims().begin() + 1, shape.dims().end())));
    std::string bytes;
    if (!proto.SerializeToString(&bytes))
        throw core::Error("model '" + model.spec().name() + "' could not be serialised as ONNX");
    return bytes;
}

void OnnxExport::write(core::Model &model, const std::map<std::string, std::string> &metadata,
                       const std::string &path)
{
    core::writeFileAtomically(path, serialise(model, metadata));
}

std::map<std::string, std::string> OnnxExport::readMetadata(const std::string &path)
{
    const std::string bytes = core::readFile(path);
    onnx::ModelProto proto;
    if (!proto.ParseFromString(bytes) || !proto.has_graph())
        throw core::FormatError(path + ": not an ONNX model (no ModelProto with a graph)");
    std::map<std::string, std::string> out;
    for (const onnx::StringStringEntryProto &p : proto.metadata_props())
        out[p.key()] = p.value();
    return out;
}

} // namespace edgetrain::vision

#pragma once

#include "json.h"
#include "random.h"
#include "tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edgetrain::core {

/** A trainable tensor and its gradient (both allocated by the layer that owns them). */
struct Parameter
{
    std::string name; // local: "weight", "bias"
    Tensor value;     // MemoryCategory::Weights
    Tensor grad;      // MemoryCategory::Gradients; backward() overwrites it
};

/** Non-trainable state saved with the weights (batch-norm running statistics and counter). */
struct LayerBuffer
{
    std::string name;                // local: "running_mean", "num_batches_tracked"
    Tensor *tensor = nullptr;        // float32 state, or
    std::int64_t *counter = nullptr; // an int64 counter (stored as I64 in safetensors)
};

/** How a pass runs. */
struct PassContext
{
    bool training = true;
    /** A forward pass re-run for checkpointing: identical result, no side effects (running
     *  statistics are not updated a second time). */
    bool recompute = false;
    std::uint64_t seed = 0; // with step: the dropout masks, reproducible on recompute
    std::uint64_t step = 0;
};

/** What a layer keeps from forward for its backward pass. */
struct LayerCache
{
    std::vector<Tensor> tensors;
    Shape inputShape;
};

/**
 * One operation with an explicit forward and backward pass.
 *
 * forward(x, cache, ctx): computes the output; if cache is non-null, stores in it what backward
 * needs (usually tensors that share buffers with x or the output, so no bytes are copied).
 * backward(dy, cache, ctx, needInputGrad): writes the parameter gradients (overwriting them) and
 * returns dL/dx, or an undefined tensor when needInputGrad is false (the first layer).
 * Shapes are checked: a wrong input shape throws ShapeError naming the layer.
 */
class Layer
{
public:
    explicit Layer(std::string name) : m_name(std::move(name)) {}
    virtual ~Layer() = default;
    Layer(const Layer &) = delete;
    Layer &operator=(const Layer &) = delete;

    const std::string &name() const { return m_name; }
    virtual std::string_view type() const = 0;

    virtual Shape outputShape(const Shape &input) const = 0;
    virtual Tensor forward(const Tensor &x, LayerCache *cache, const PassContext &ctx) = 0;
    virtual Tensor backward(const Tensor &dy, const LayerCache &cache, const PassContext &ctx,
                            bool needInputGrad) = 0;

    virtual std::vector<Parameter *> parameters() { return {}; }
    virtual std::vector<LayerBuffer> buffers() { return {}; }
    /** PyTorch's default initialisation for the layer type. */
    virtual void initialize(Rng &) {}
    /** Forward multiply-adds x 2 for one batch of the given input shape. */
    virtual double forwardFlops(const Shape &) const { return 0.0; }
    /** The layer's ModelSpec entry (type and options), so a built model can be written back. */
    virtual Json spec() const = 0;

protected:
    /** Throws ShapeError "layer 'name' (type): what; got shape [..]". */
    [[noreturn]] void shapeError(const std::string &what, const Shape &got) const;

private:
    std::string m_name;
};

} // namespace edgetrain::core

#pragma once

#include "layer.h"

#include <functional>
#include <memory>

namespace edgetrain::core {

/** What a stage keeps from forward for its backward pass. */
struct StageCache
{
    std::vector<LayerCache> layers;
    std::vector<Tensor> tensors; // stage-level tensors (a residual block's input and output)
};

/**
 * One link of the model's chain: the unit the checkpointing scheduler stores or recomputes.
 * A stage can be re-run from its stored input: forward with a cache after forward without one
 * gives the same output (ctx.recompute suppresses side effects such as running statistics).
 */
class Stage
{
public:
    explicit Stage(std::string name) : m_name(std::move(name)) {}
    virtual ~Stage() = default;
    Stage(const Stage &) = delete;
    Stage &operator=(const Stage &) = delete;

    /** Prefix of the stage's parameter names ("3" -> "3.conv1.weight"); may be empty. */
    const std::string &name() const { return m_name; }
    virtual std::string_view type() const = 0;

    virtual Shape outputShape(const Shape &input) const = 0;
    virtual Tensor forward(const Tensor &x, StageCache *cache, const PassContext &ctx) = 0;
    /** Writes parameter gradients; returns dL/dx unless needInputGrad is false. */
    virtual Tensor backward(const Tensor &dy, const StageCache &cache, const PassContext &ctx,
                            bool needInputGrad) = 0;

    /** Visits every layer with its full name prefix ("3.conv1"), in a fixed order. */
    virtual void forEachLayer(const std::function<void(const std::string &, Layer &)> &fn) = 0;
    virtual double forwardFlops(const Shape &input) const = 0;
    virtual Json spec() const = 0;

protected:
    std::string childName(const std::string &layer) const;

private:
    std::string m_name;
};

/**
 * Whether stages run a batch norm and the ReLU after it as one pass over memory
 * (BatchNorm2d::forwardRelu / backwardRelu; a residual block's end with its sum too) — the
 * default — or layer by layer: the reference the fused path is tested and benchmarked against.
 * The results agree within float rounding (sums taken in another order; a compiler may contract
 * a multiply and an add); the fused path allocates one activation less per pair in each
 * direction. Per thread, like threadCount(): a thread that never set it fuses.
 */
bool fusedStages();
void setFusedStages(bool fused);

/** A plain sequence of layers (a single layer of a plain network, or a ResNet stem or head). */
class SequentialStage : public Stage
{
public:
    SequentialStage(std::string name, std::vector<std::unique_ptr<Layer>> layers,
                    bool writeAsSingleLayer);

    std::string_view type() const override { return "sequential"; }
    Shape outputShape(const Shape &input) const override;
    Tensor forward(const Tensor &x, StageCache *cache, const PassContext &ctx) override;
    Tensor backward(const Tensor &dy, const StageCache &cache, const PassContext &ctx,
                    bool needInputGrad) override;
    void forEachLayer(const std::function<void(const std::string &, Layer &)> &fn) override;
    double forwardFlops(const Shape &input) const override;
    Json spec() const override;

private:
    /** Layer i is a batch norm and layer i + 1 a ReLU: fused (see fusedStages()). */
    bool fusesWithNext(std::size_t i) const;

    std::vector<std::unique_ptr<Layer>> m_layers;
    std::vector<bool> m_normThenRelu; // by layer index
    bool m_single;                    // written back as the bare layer entry
};

} // namespace edgetrain::core

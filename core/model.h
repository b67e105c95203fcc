#pragma once

#include "modelspec.h"
#include "schedule.h"
#include "stage.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edgetrain::core {

struct NamedParameter
{
    std::string name; // full name, e.g. "3.conv1.weight"
    Parameter *parameter = nullptr;
};

struct NamedBuffer
{
    std::string name; // e.g. "3.bn1.running_mean"
    LayerBuffer buffer;
};

/** Loss and correct predictions of one batch: correct / count is its accuracy (classifier:
 *  argmax hits / samples; centernet loss: object centres found / objects, see Loss). */
struct StepResult
{
    double loss = 0.0;
    std::int64_t correct = 0;
    std::int64_t count = 0;
};

/**
 * A network as a chain of stages, built from a ModelSpec and initialised deterministically from
 * a seed (PyTorch's default initialisation rules). The model owns its parameters and gradients;
 * the optimiser updates them in place.
 */
class Model
{
public:
    Model(ModelSpec spec, std::uint64_t seed);

    const ModelSpec &spec() const { return m_spec; }
    const Shape &sampleShape() const { return m_spec.inputShape(); }
    Shape batchShape(std::int64_t batch) const;
    int classCount() const { return m_classes; }

    std::size_t stageCount() const { return m_stages.size(); }
    Stage &stage(std::size_t i) { return *m_stages.at(i); }

    /** Inference (or a forward pass with ctx.training) without keeping anything for backward. */
    Tensor forward(const Tensor &x, const PassContext &ctx);

    /**
     * One forward and backward pass: computes the spec's loss against `labels`
     * (x.dim(0) * spec().labelWidth() values) and writes every parameter's gradient. `schedule`
     * says which stage activations are kept and which are recomputed (default: keep all); the
     * gradients are the same for every schedule. Throws ShapeError if x does not match the model's
     * input.
     */
    StepResult forwardBackward(const Tensor &x, const std::int32_t *labels, const PassContext &ctx,
                               const Schedule *schedule = nullptr);

    /**
     * One forward and backward pass of stages first .. L-1 from `h`, their input (what stage
     * `first - 1` gave), keeping every activation: the loss against `labels`, every parameter
     * gradient of those stages, and in `inputGrad` (if given) dL/dh. What a device of a tile
     * team runs on its images once the team has given it the group's output.
     */
    StepResult forwardBackwardFrom(std::size_t first, const Tensor &h, const std::int32_t *labels,
                                   const PassContext &ctx, Tensor *inputGrad);
    std::vector<NamedParameter> parameters();
    std::vector<NamedBuffer> buffers();
    std::int64_t parameterCount();
    /**
     * Runs the first `stages` stages as one fused tile group on a rows x cols grid (TiledStage):
     * they become stage 0 of the chain, so stageCount() falls by stages - 1 and schedules are
     * for the shorter chain. Parameters, names and results stay the same. stages = 0 or a 1 x 1
     * grid undoes it. Throws SpecError if a stage cannot be tiled or the grid does not fit.
     */
    void setTiling(int stages, int rows, int cols);
    /** The tiled stages' count and grid; {0, 1, 1} when the model is not tiled. */
    struct Tiling
    {
        int stages = 0;
        int rows = 1;
        int cols = 1;
        bool active() const { return stages > 0 && rows * cols > 1; }
    };
    Tiling tiling() const { return m_tiling; }

    /** Forward FLOPs (2 x multiply-adds of conv and linear layers, plus the rest) for a batch. */
    double forwardFlops(std::int64_t batch) const;

private:
    void checkInput(const Tensor &x) const;

    ModelSpec m_spec;
    std::vector<std::unique_ptr<Stage>> m_stages;
    int m_classes = 0;
    Schedule m_storeAll; // the default program, built once
    Tiling m_tiling;
};

} // namespace edgetrain::core

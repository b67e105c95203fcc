#pragma once

#include "json.h"
#include "shape.h"
#include "stage.h"

#include <memory>
#include <string>
#include <vector>

namespace edgetrain::core {

/**
 * A model described as data: a name, the sample input shape and a chain of stages.
 *
 *   {"name": "lenet5", "input": [1, 28, 28], "stages": [
 *      {"type": "conv2d", "out_channels": 6, "kernel": 5, "padding": 2},
 *      {"type": "relu"}, ...,
 *      {"type": "basic_block", "out_channels": 32, "stride": 2, "shortcut": "pad"},
 *      {"type": "sequential", "name": "head", "layers": [{"type": "global_avg_pool"}, ...]}]}
 *
 * A stage is a single layer, a "sequential" list of layers, or a residual block
 * ("basic_block", "bottleneck"). Stages are named by their index unless they carry a "name";
 * parameter names join stage, layer and tensor names with dots ("3.conv1.weight"), which
 * reproduces PyTorch's state_dict names for nn.Sequential models.
 * Layer types: conv2d, linear, batchnorm2d, relu, maxpool2d, avgpool2d, global_avg_pool,
 * flatten, dropout (README lists their fields).
 */
class ModelSpec
{
public:
    /** Validates the document; throws SpecError naming `source` and the offending field. */
    static ModelSpec fromJson(const Json &json, const std::string &source = "model spec");
    /** Reads and validates a JSON file; throws IoError / FormatError / SpecError. */
    static ModelSpec load(const std::string &path);

    const std::string &name() const { return m_name; }
    const Shape &inputShape() const { return m_input; } // one sample, e.g. [1, 28, 28]
    const Json &stages() const { return m_stages; }
    Json toJson() const;
    /** The same chain for another sample shape (linear layers adapt their input size);
     *  throws SpecError if the chain does not work at that size. */
    ModelSpec withInputShape(const Shape &sample) const;

    /** Builds the stages with fresh (uninitialised) parameters; checks every shape. */
    std::vector<std::unique_ptr<Stage>> buildStages() const;

private:
    void validate() const; // builds the stages once with virtual tensors; throws SpecError

    std::string m_name;
    std::string m_source;
    Shape m_input;
    Json m_stages;
};

} // namespace edgetrain::core

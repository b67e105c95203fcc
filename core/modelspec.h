#pragma once

#include "json.h"
#include "loss.h"
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
 * flatten, dropout, upsample2d (README lists their fields).
 *
 * An optional top-level "loss" chooses what the model is trained against:
 *   absent or {"type": "softmax_cross_entropy"}: class labels, the chain ends in [N, classes];
 *   {"type": "centernet", "stride": 4, "max_objects": 32, "size_weight": 1.0,
 *    "offset_weight": 1.0}: a one-class object detector (DetectionLoss); the chain ends in
 *   [N, 5, H/stride, W/stride] for an input [C, H, W] (H and W multiples of stride).
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
    const LossSpec &loss() const { return m_loss; }
    /** int32 label values per sample the loss needs: 1, or 1 + 5 * max_objects. */
    int labelWidth() const { return m_loss.labelWidth(); }
    /** The document; "loss" only when it is not the default (classifiers' bytes unchanged). */
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
    LossSpec m_loss;
};

} // namespace edgetrain::core

#pragma once

#include "detectionloss.h"
#include "tensor.h"

#include <cstdint>

namespace edgetrain::core {

/** Which loss a model trains with: its ModelSpec's "loss" object. */
struct LossSpec
{
    enum class Type {
        SoftmaxCrossEntropy, // {"type": "softmax_cross_entropy"} or no "loss" at all
        CenterNet,           // {"type": "centernet", "stride": 4, "max_objects": 32, ...}
    };
    Type type = Type::SoftmaxCrossEntropy;
    DetectionLossOptions centernet; // used when type is CenterNet

    /** int32 label values per sample: 1 (a class) or DetectionLoss::labelWidth(max_objects). */
    int labelWidth() const
    {
        return type == Type::CenterNet ? DetectionLoss::labelWidth(centernet.max_objects) : 1;
    }
    bool operator==(const LossSpec &o) const
    {
        return type == o.type &&
               (type != Type::CenterNet || (centernet.stride == o.centernet.stride &&
                                            centernet.max_objects == o.centernet.max_objects &&
                                            centernet.size_weight == o.centernet.size_weight &&
                                            centernet.offset_weight == o.centernet.offset_weight));
    }
};

/**
 * The loss of a model's output against a batch of labels (labelWidth() int32 values per
 * sample), whichever loss the spec chose. `correct / count` is what training reports as
 * accuracy: for a classifier argmax hits / samples, for the centernet loss object centres found
 * / objects (DetectionLoss::Result::hits).
 */
class Loss
{
public:
    struct Value
    {
        double loss = 0.0;
        std::int64_t correct = 0;
        std::int64_t count = 0;
    };

    /** Writes dL/doutput into grad when it is non-null. Throws as the chosen loss does. */
    static Value compute(const LossSpec &spec, const Tensor &output, const std::int32_t *labels,
                         Tensor *grad);
};

} // namespace edgetrain::core

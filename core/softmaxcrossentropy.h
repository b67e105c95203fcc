#pragma once

#include "tensor.h"

#include <cstdint>

namespace edgetrain::core {

/** Mean softmax cross-entropy over a batch of logits [N, K] (PyTorch's F.cross_entropy). */
class SoftmaxCrossEntropy
{
public:
    struct Result
    {
        double loss = 0.0;        // mean over the batch
        std::int64_t correct = 0; // argmax == label
    };

    /**
     * Computes the loss and, if dlogits is non-null, dL/dlogits into it (allocated here).
     * Throws Error if a label is outside [0, K).
     */
    static Result compute(const Tensor &logits, const std::int32_t *labels, Tensor *dlogits);
};

} // namespace edgetrain::core

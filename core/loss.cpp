#include "loss.h"

#include "softmaxcrossentropy.h"

namespace edgetrain::core {

Loss::Value Loss::compute(const LossSpec &spec, const Tensor &output, const std::int32_t *labels,
                          Tensor *grad)
{
    Value v;
    if (spec.type == LossSpec::Type::CenterNet) {
        const auto r = DetectionLoss::compute(output, labels, spec.centernet, grad);
        v.loss = r.loss;
        v.correct = r.hits;
        v.count = r.objects;
    } else {
        const auto r = SoftmaxCrossEntropy::compute(output, labels, grad);
        v.loss = r.loss;
        v.correct = r.correct;
        v.count = output.shape().rank() > 0 ? output.dim(0) : 0;
    }
    return v;
}

} // namespace edgetrain::core

#include "softmaxcrossentropy.h"

#include "error.h"

#include <cmath>

namespace edgetrain::core {

SoftmaxCrossEntropy::Result
SoftmaxCrossEntropy::compute(const Tensor &logits, const std::int32_t *labels, Tensor *dlogits)
{
    if (logits.shape().rank() != 2)
        throw ShapeError("cross-entropy expects logits [N, classes]; got " +
                         logits.shape().toString());
    const std::int64_t N = logits.dim(0), K = logits.dim(1);
    if (dlogits)
        *dlogits = Tensor(logits.shape(), MemoryCategory::Activations);
    Result r;
    if (logits.isVirtual())
        return r; // memory simulation: only the allocation above matters
    double total = 0.0;
    for (std::int64_t n = 0; n < N; ++n) {
        const std::int32_t label = labels[n];
        if (label < 0 || label >= K)
            throw Error("label " + std::to_string(label) + " of sample " + std::to_string(n) +
                        " is outside the model's " + std::to_string(K) + " classes");
        const float *z = logits.data() + n * K;
        std::int64_t best = 0;
        float maxZ = z[0];
        for (std::int64_t k = 1; k < K; ++k)
            if (z[k] > maxZ) {
                maxZ = z[k];
                best = k;
            }
        double sum = 0.0;
        for (std::int64_t k = 0; k < K; ++k)
            sum += std::exp(double(z[k] - maxZ));
        const double logSum = std::log(sum);
        total += logSum - double(z[label] - maxZ);
        if (best == label)
            ++r.correct;
        if (dlogits) {
            float *g = dlogits->data() + n * K;
            for (std::int64_t k = 0; k < K; ++k)
                g[k] = float(std::exp(double(z[k] - maxZ) - logSum) / double(N));
            g[label] -= 1.0f / float(N);
        }
    }
    r.loss = N > 0 ? total / double(N) : 0.0;
    return r;
}

} // namespace edgetrain::core

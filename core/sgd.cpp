#include "sgd.h"

#include "error.h"
#include "parallel.h"

#include <cmath>

namespace edgetrain::core {

Sgd::Sgd(Model &model, const SgdOptions &options)
    : m_parameters(model.parameters()), m_options(options)
{
    if (!(options.momentum >= 0.0 && options.momentum < 1.0) || !(options.weight_decay >= 0.0))
        throw SpecError("SGD: momentum must be in [0, 1) and weight decay >= 0");
    if (options.momentum > 0.0)
        for (const auto &p : m_parameters)
            m_momentum.push_back(
                Tensor::zeros(p.parameter->value.shape(), MemoryCategory::OptimizerState));
}

void Sgd::setMomentum(double momentum)
{
    if (!(momentum >= 0.0 && momentum < 1.0))
        throw SpecError("SGD: momentum must be in [0, 1)");
    if (momentum > 0.0 && m_momentum.empty())
        for (const auto &p : m_parameters)
            m_momentum.push_back(
                Tensor::zeros(p.parameter->value.shape(), MemoryCategory::OptimizerState));
    m_options.momentum = momentum;
}

void Sgd::step(double lr)
{
    const auto mu = float(m_options.momentum);
    const auto wd = float(m_options.weight_decay);
    const auto rate = float(lr);
    for (std::size_t i = 0; i < m_parameters.size(); ++i) {
        Parameter &p = *m_parameters[i].parameter;
        float *w = p.value.data();
        const float *g = p.grad.data();
        const std::int64_t n = p.value.numel();
        float *buf = mu > 0.0f ? m_momentum[i].data() : nullptr;
#pragma omp parallel for schedule(static) if (n > 65536) num_threads(threadCount())
        for (std::int64_t k = 0; k < n; ++k) {
            float d = g[k] + wd * w[k];
            if (buf) {
                buf[k] = mu * buf[k] + d;
                d = m_options.nesterov ? d + mu * buf[k] : buf[k];
            }
            w[k] -= rate * d;
        }
    }
}

} // namespace edgetrain::core

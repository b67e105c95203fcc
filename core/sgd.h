#pragma once

#include "model.h"

namespace edgetrain::core {

struct SgdOptions
{
    double momentum = 0.9;
    double weight_decay = 0.0;
    bool nesterov = false;
};

/**
 * SGD with momentum and weight decay, PyTorch's semantics: g = grad + wd * w;
 * buf = momentum * buf + g; w -= lr * (nesterov ? g + momentum * buf : buf).
 * Momentum buffers are optimizer-state memory, allocated here.
 */
class Sgd
{
public:
    Sgd(Model &model, const SgdOptions &options);
    void step(double lr);
    const SgdOptions &options() const { return m_options; }
    /** Changes the momentum from the next step on (the buffers keep their contents). */
    void setMomentum(double momentum);
    /** Momentum buffers, one per parameter in model order (empty without momentum): the state
     *  a replica must share to continue another's run exactly. */
    std::vector<Tensor> &momentumBuffers() { return m_momentum; }

private:
    std::vector<NamedParameter> m_parameters;
    std::vector<Tensor> m_momentum;
    SgdOptions m_options;
};

} // namespace edgetrain::core

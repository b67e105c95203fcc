#pragma once

#include "tensor.h"

#include <cstdint>
#include <vector>

namespace edgetrain::core {

class Model;

/**
 * An exponential moving average of a model's weights over its optimizer steps (Polyak
 * averaging, as detectors are trained in practice): after each step, average = d * average +
 * (1 - d) * weights, batch-norm running statistics included. Early steps use the smaller decay
 * (1 + n) / (10 + n), so the first steps' random weights fade quickly. At a high learning rate
 * the weights scatter around the valley they are in; the average sits near its floor, so it
 * generalises better and two runs that differ only in their batches end closer together.
 */
class WeightAverage
{
public:
    /** decay in (0, 1): the share of the average kept per step (0.99: about 100 steps). */
    explicit WeightAverage(double decay);

    double decay() const { return m_decay; }
    std::int64_t updates() const { return m_updates; }

    /** After an optimizer step: folds the model's current weights in (the first call copies). */
    void update(Model &model);
    /** Exchanges the model's weights with the average (call again to swap back). */
    void swap(Model &model);
    /** Copies the average into the model. */
    void copyTo(Model &model) const;

private:
    double m_decay;
    std::int64_t m_updates = 0;
    std::vector<Tensor> m_average; // parameters, then buffers, in the model's order
};

} // namespace edgetrain::core

#include "weightaverage.h"

#include "error.h"
#include "model.h"
#include "numbertext.h"

#include <algorithm>

namespace edgetrain::core {

namespace {

/** The model's parameters and buffers in a fixed order. */
std::vector<Tensor *> stateOf(Model &model)
{
    std::vector<Tensor *> out;
    for (const NamedParameter &p : model.parameters())
        out.push_back(&p.parameter->value);
    for (const NamedBuffer &b : model.buffers())
        if (b.buffer.tensor)
            out.push_back(b.buffer.tensor);
    return out;
}

} // namespace

WeightAverage::WeightAverage(double decay) : m_decay(decay)
{
    if (!(decay > 0.0 && decay < 1.0))
        throw SpecError("a weight average's decay must be in (0, 1), got " +
                        NumberText::format(decay));
}

void WeightAverage::update(Model &model)
{
    const std::vector<Tensor *> state = stateOf(model);
    if (m_average.empty()) {
        for (const Tensor *t : state)
            m_average.push_back(t->clone(MemoryCategory::Weights));
        m_updates = 1;
        return;
    }
    if (state.size() != m_average.size())
        throw ShapeError("a weight average was started on another model");
    const double d = std::min(m_decay, double(1 + m_updates) / double(10 + m_updates));
    const float keep = float(d), take = float(1.0 - d);
    for (std::size_t i = 0; i < state.size(); ++i) {
        float *a = m_average[i].data();
        const float *w = state[i]->data();
        const std::int64_t n = m_average[i].numel();
        if (n != state[i]->numel())
            throw ShapeError("a weight average was started on another model");
        for (std::int64_t k = 0; k < n; ++k)
            a[k] = keep * a[k] + take * w[k];
    }
    ++m_updates;
}

void WeightAverage::swap(Model &model)
{
    if (m_average.empty())
        return;
    const std::vector<Tensor *> state = stateOf(model);
    if (state.size() != m_average.size())
        throw ShapeError("a weight average was started on another model");
    for (std::size_t i = 0; i < state.size(); ++i)
        std::swap_ranges(m_average[i].data(), m_average[i].data() + m_average[i].numel(),
                         state[i]->data());
}

void WeightAverage::copyTo(Model &model) const
{
    if (m_average.empty())
        return;
    const std::vector<Tensor *> state = stateOf(model);
    for (std::size_t i = 0; i < state.size(); ++i)
        state[i]->copyFrom(m_average[i]);
}

} // namespace edgetrain::core

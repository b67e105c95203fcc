#include "flatstate.h"

#include <cstdio>
#include <cstring>

namespace edgetrain::core {

namespace {

std::size_t floats(const std::vector<Tensor *> &tensors)
{
    std::size_t n = 0;
    for (const Tensor *t : tensors)
        n += std::size_t(t->numel());
    return n;
}

float *copyOut(const std::vector<Tensor *> &tensors, float *out)
{
    for (const Tensor *t : tensors) {
        std::memcpy(out, t->data(), sizeof(float) * std::size_t(t->numel()));
        out += t->numel();
    }
    return out;
}

const float *copyIn(const std::vector<Tensor *> &tensors, const float *in)
{
    for (Tensor *t : tensors) {
        std::memcpy(t->data(), in, sizeof(float) * std::size_t(t->numel()));
        in += t->numel();
    }
    return in;
}

} // namespace

FlatState::FlatState(Model &model, Sgd *optimizer)
{
    for (const NamedParameter &p : model.parameters()) {
        m_values.push_back(&p.parameter->value);
        m_grads.push_back(&p.parameter->grad);
    }
    for (const NamedBuffer &b : model.buffers()) {
        if (b.buffer.tensor)
            m_buffers.push_back(b.buffer.tensor);
        else if (b.buffer.counter)
            m_counters.push_back(b.buffer.counter);
    }
    if (optimizer)
        for (Tensor &t : optimizer->momentumBuffers())
            m_momentum.push_back(&t);
    m_parameterFloats = floats(m_values);
    m_bufferFloats = floats(m_buffers);
    m_momentumFloats = floats(m_momentum);
}

void FlatState::copyGradients(float *out) const
{
    copyOut(m_grads, out);
}

void FlatState::setGradients(const float *in)
{
    copyIn(m_grads, in);
}

void FlatState::copyAveraged(float *out) const
{
    copyOut(m_buffers, copyOut(m_values, out));
}

void FlatState::setAveraged(const float *in)
{
    copyIn(m_buffers, copyIn(m_values, in));
}

void FlatState::copyBuffers(float *out) const
{
    copyOut(m_buffers, out);
}

void FlatState::setBuffers(const float *in)
{
    copyIn(m_buffers, in);
}

std::size_t FlatState::fullSize() const
{
    return averagedSize() + m_momentumFloats + 2 * m_counters.size();
}

void FlatState::copyFull(float *out) const
{
    out = copyOut(m_momentum, copyOut(m_buffers, copyOut(m_values, out)));
    for (const std::int64_t *c : m_counters) {
        std::memcpy(out, c, sizeof(std::int64_t));
        out += 2;
    }
}

void FlatState::setFull(const float *in)
{
    in = copyIn(m_momentum, copyIn(m_buffers, copyIn(m_values, in)));
    for (std::int64_t *c : m_counters) {
        std::memcpy(c, in, sizeof(std::int64_t));
        in += 2;
    }
}

std::string FlatState::fingerprint() const
{
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](const Tensor *t) {
        const auto *bytes = reinterpret_cast<const unsigned char *>(t->data());
        for (std::size_t i = 0, n = sizeof(float) * std::size_t(t->numel()); i < n; ++i)
            h = (h ^ bytes[i]) * 0x100000001b3ull;
    };
    for (const Tensor *t : m_values)
        mix(t);
    for (const Tensor *t : m_buffers)
        mix(t);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
    return hex;
}

} // namespace edgetrain::core

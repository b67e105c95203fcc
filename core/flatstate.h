#pragma once

#include "model.h"
#include "sgd.h"

#include <cstdint>
#include <string>
#include <vector>

namespace edgetrain::core {

/**
 * A model's trainable state laid out as one float vector, so replicas can exchange it with one
 * collective instead of one per tensor:
 *
 *   gradients: every parameter's gradient, in model order
 *   averaged:  every parameter's value, then every float buffer (batch-norm statistics)
 *   full:      averaged, then momentum buffers, then the int64 counters bit-copied into
 *              float pairs (only ever copied, never summed)
 *
 * Copies in and out; the model's tensors are never aliased, so a collective that fails half way
 * leaves the model as it was.
 */
class FlatState
{
public:
    explicit FlatState(Model &model, Sgd *optimizer = nullptr);

    std::size_t gradientSize() const { return m_parameterFloats; }
    void copyGradients(float *out) const;
    void setGradients(const float *in);

    /** Values and float buffers: what replicas average. */
    std::size_t averagedSize() const { return m_parameterFloats + m_bufferFloats; }
    void copyAveraged(float *out) const;
    void setAveraged(const float *in);

    /** The float buffers alone (batch-norm statistics). */
    std::size_t bufferSize() const { return m_bufferFloats; }
    void copyBuffers(float *out) const;
    void setBuffers(const float *in);

    /** Everything a replica needs to continue another's run bit for bit. */
    std::size_t fullSize() const;
    void copyFull(float *out) const;
    void setFull(const float *in);

    /** A 64-bit FNV-1a hash of the values and buffers, as 16 hex digits: replicas with equal
     *  weights have equal fingerprints (a check, not a cryptographic digest). */
    std::string fingerprint() const;

private:
    std::vector<Tensor *> m_values, m_grads, m_buffers, m_momentum;
    std::vector<std::int64_t *> m_counters;
    std::size_t m_parameterFloats = 0, m_bufferFloats = 0, m_momentumFloats = 0;
};

} // namespace edgetrain::core

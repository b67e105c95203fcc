#pragma once

#include "memoryaccountant.h"
#include "shape.h"

#include <cstdint>
#include <memory>

namespace edgetrain::core {

/**
 * A float32 tensor (NCHW for images) on a 64-byte aligned buffer that is reported to a
 * MemoryAccountant for as long as it lives. Copies of a Tensor share the buffer (as PyTorch
 * tensors do), so a layer that keeps its input for the backward pass costs no extra bytes when
 * the previous layer's output is the same buffer. clone() makes a deep copy.
 */
class Tensor
{
public:
    Tensor() = default;
    /** Uninitialised contents, reported to MemoryAccountant::current(). Under a
     *  MemorySimulation the tensor is virtual: it has a shape and counts bytes, but no data. */
    Tensor(Shape shape, MemoryCategory category);

    static Tensor zeros(Shape shape, MemoryCategory category);

    bool defined() const { return m_buffer != nullptr; }
    const Shape &shape() const { return m_shape; }
    std::int64_t numel() const { return m_numel; }
    std::int64_t dim(int i) const { return m_shape[i]; }

    /** A tensor of a MemorySimulation: shape and bytes, no data (data() is null). */
    bool isVirtual() const { return m_buffer && !m_data && m_numel > 0; }

    /**
     * While an instance lives on a thread, activation tensors made there are counted as
     * MemoryCategory::Recompute (ChainExecutor sets it around re-run stage forwards).
     */
    class RecomputeScope
    {
    public:
        RecomputeScope();
        ~RecomputeScope();
        RecomputeScope(const RecomputeScope &) = delete;
        RecomputeScope &operator=(const RecomputeScope &) = delete;

    private:
        bool m_previous;
    };

    float *data() { return m_data; }
    const float *data() const { return m_data; }
    /** Integer view of the same bytes (for indices a layer keeps, e.g. max-pool argmax). */
    std::int32_t *intData() { return reinterpret_cast<std::int32_t *>(m_data); }
    const std::int32_t *intData() const { return reinterpret_cast<const std::int32_t *>(m_data); }

    /** A view of the same buffer with another shape of the same element count. */
    Tensor reshaped(Shape shape) const;
    /** A deep copy into a new buffer of the given category. */
    Tensor clone(MemoryCategory category) const;

    void fill(float value);
    void copyFrom(const Tensor &other); // same element count; throws ShapeError otherwise

private:
    struct Buffer;
    std::shared_ptr<Buffer> m_buffer;
    float *m_data = nullptr;
    Shape m_shape;
    std::int64_t m_numel = 0; // cached: numel() sits in hot loop conditions
};

} // namespace edgetrain::core

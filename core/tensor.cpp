#include "tensor.h"

#include "bufferpool.h"
#include "error.h"
#include "memorysimulation.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace edgetrain::core {

struct Tensor::Buffer
{
    /** allocate = false: a virtual buffer (memory simulation) that only counts its bytes. */
    Buffer(std::int64_t count, MemoryCategory cat, MemoryAccountant &acc, bool allocate)
        : bytes(count * static_cast<std::int64_t>(sizeof(float))), category(cat), accountant(acc)
    {
        if (allocate)
            data = BufferPool::instance().acquire(std::size_t(bytes));
        accountant.allocated(category, bytes);
    }
    ~Buffer()
    {
        accountant.released(category, bytes);
        BufferPool::instance().release(data, std::size_t(bytes));
    }
    Buffer(const Buffer &) = delete;
    Buffer &operator=(const Buffer &) = delete;

    float *data = nullptr;
    std::int64_t bytes;
    MemoryCategory category;
    MemoryAccountant &accountant;
};

namespace {
thread_local bool t_recomputing = false;

MemoryCategory effectiveCategory(MemoryCategory category)
{
    return t_recomputing && category == MemoryCategory::Activations ? MemoryCategory::Recompute
                                                                    : category;
}
} // namespace

Tensor::RecomputeScope::RecomputeScope() : m_previous(t_recomputing)
{
    t_recomputing = true;
}

Tensor::RecomputeScope::~RecomputeScope()
{
    t_recomputing = m_previous;
}

Tensor::Tensor(Shape shape, MemoryCategory category)
    : m_buffer(std::make_shared<Buffer>(shape.numel(), effectiveCategory(category),
                                        MemoryAccountant::current(), !MemorySimulation::active())),
      m_shape(std::move(shape)), m_numel(m_shape.numel())
{
    m_data = m_buffer->data;
}

Tensor Tensor::zeros(Shape shape, MemoryCategory category)
{
    Tensor t(std::move(shape), category);
    t.fill(0.0f);
    return t;
}

Tensor Tensor::reshaped(Shape shape) const
{
    if (shape.numel() != numel())
        throw ShapeError("cannot view a tensor of shape " + m_shape.toString() + " as " +
                         shape.toString());
    Tensor t = *this;
    t.m_shape = std::move(shape);
    t.m_numel = t.m_shape.numel();
    return t;
}

Tensor Tensor::clone(MemoryCategory category) const
{
    Tensor t(m_shape, category);
    if (numel() > 0 && m_data && t.m_data)
        std::memcpy(t.m_data, m_data, static_cast<std::size_t>(numel()) * sizeof(float));
    return t;
}

void Tensor::fill(float value)
{
    if (m_data)
        std::fill(m_data, m_data + numel(), value);
}

void Tensor::copyFrom(const Tensor &other)
{
    if (other.numel() != numel())
        throw ShapeError("cannot copy a tensor of shape " + other.shape().toString() + " into " +
                         m_shape.toString());
    if (numel() > 0 && m_data && other.m_data)
        std::memcpy(m_data, other.m_data, static_cast<std::size_t>(numel()) * sizeof(float));
}

} // namespace edgetrain::core

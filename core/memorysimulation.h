#pragma once

#include "memoryaccountant.h"

namespace edgetrain::core {

/**
 * While an instance lives on a thread, tensors created on that thread get no memory (data() is
 * null) and report to this simulation's own accountant; layers see virtual tensors and skip
 * their arithmetic. Running the real forward and backward code this way replays exactly the
 * allocations and frees of a training step in microseconds: the memory planner's predictions
 * are the engine's own allocation sequence, not a second model of it. Simulations nest (the
 * innermost counts); virtual tensors must not outlive the simulation that made them.
 */
class MemorySimulation
{
public:
    MemorySimulation();
    ~MemorySimulation();
    MemorySimulation(const MemorySimulation &) = delete;
    MemorySimulation &operator=(const MemorySimulation &) = delete;

    MemoryAccountant &accountant() { return m_accountant; }
    /** True on a thread with a live simulation. */
    static bool active();

private:
    MemoryAccountant m_accountant;
    MemoryAccountant *m_previous;
};

} // namespace edgetrain::core

#include "memorysimulation.h"

#include <cassert>

namespace edgetrain::core {

namespace Internal {
thread_local MemoryAccountant *t_simulationAccountant = nullptr;
}

MemorySimulation::MemorySimulation() : m_previous(Internal::t_simulationAccountant)
{
    assert(!m_previous && "MemorySimulation does not nest");
    Internal::t_simulationAccountant = &m_accountant;
}

MemorySimulation::~MemorySimulation()
{
    Internal::t_simulationAccountant = m_previous;
}

bool MemorySimulation::active()
{
    return Internal::t_simulationAccountant != nullptr;
}

} // namespace edgetrain::core

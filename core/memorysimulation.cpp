#include "memorysimulation.h"

namespace edgetrain::core {

namespace Internal {
thread_local MemoryAccountant *t_simulationAccountant = nullptr;
}

MemorySimulation::MemorySimulation() : m_previous(Internal::t_simulationAccountant)
{
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

#pragma once

#include <utility>
#include <vector>

namespace edgetrain::core {

/**
 * A device's energy over time, from the running total its agent reports about once a second
 * (joules since the agent started, SystemSample::energy_joules): the energy between any two
 * moments, interpolated linearly inside the readings and extended at the last reading's power
 * past the last one. Times in seconds on the caller's clock; readings must come in time order
 * (an older one is ignored).
 */
class EnergyTrace
{
public:
    void add(double seconds, double joules);
    bool empty() const { return m_points.empty(); }
    /** The running total at `seconds` (0 before the first reading's total is known: the first
     *  reading's total itself). */
    double at(double seconds) const;
    /** Joules used from t0 to t1 (t0 <= t1). */
    double between(double t0, double t1) const { return at(t1) - at(t0); }

    /** Trapezoidal integral of power readings (seconds, watts), in time order: joules. */
    static double integrate(const std::vector<std::pair<double, double>> &wattsAt);

private:
    std::vector<std::pair<double, double>> m_points; // (seconds, joules)
};

} // namespace edgetrain::core

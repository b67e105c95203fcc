#include "energytrace.h"

#include <algorithm>

namespace edgetrain::core {

void EnergyTrace::add(double seconds, double joules)
{
    if (!m_points.empty() && seconds <= m_points.back().first)
        return;
    m_points.emplace_back(seconds, joules);
}

double EnergyTrace::at(double seconds) const
{
    if (m_points.empty())
        return 0.0;
    if (seconds <= m_points.front().first)
        return m_points.front().second;
    if (seconds >= m_points.back().first) {
        if (m_points.size() < 2)
            return m_points.back().second;
        // past the last reading: at the last interval's power
        const auto &[t0, e0] = m_points[m_points.size() - 2];
        const auto &[t1, e1] = m_points.back();
        return e1 + (e1 - e0) / (t1 - t0) * (seconds - t1);
    }
    const auto next =
        std::upper_bound(m_points.begin(), m_points.end(), seconds,
                         [](double t, const std::pair<double, double> &p) { return t < p.first; });
    const auto &[t1, e1] = *next;
    const auto &[t0, e0] = *(next - 1);
    return e0 + (e1 - e0) * (seconds - t0) / (t1 - t0);
}

double EnergyTrace::integrate(const std::vector<std::pair<double, double>> &wattsAt)
{
    double joules = 0.0;
    for (std::size_t i = 1; i < wattsAt.size(); ++i)
        joules += (wattsAt[i].first - wattsAt[i - 1].first) *
                  (wattsAt[i].second + wattsAt[i - 1].second) / 2.0;
    return joules;
}

} // namespace edgetrain::core

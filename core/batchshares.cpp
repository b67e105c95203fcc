#include "core/batchshares.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace edgetrain::core {

std::vector<std::int64_t> splitByShares(std::int64_t total, const std::vector<double> &shares)
{
    const std::size_t n = shares.size();
    std::vector<std::int64_t> parts(n, 0);
    if (n == 0 || total <= 0)
        return parts;
    const double sum = std::accumulate(shares.begin(), shares.end(), 0.0);
    // Everyone gets one first (when there is enough), the rest goes by largest remainder.
    const std::int64_t floor = total >= std::int64_t(n) ? 1 : 0;
    const std::int64_t rest = total - floor * std::int64_t(n);
    std::vector<double> remainder(n);
    std::int64_t given = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double ideal = double(rest) * (sum > 0 ? shares[i] / sum : 1.0 / double(n));
        parts[i] = floor + std::int64_t(std::floor(ideal));
        remainder[i] = ideal - std::floor(ideal);
        given += parts[i];
    }
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return remainder[a] > remainder[b]; });
    for (std::size_t k = 0; given < total; k = (k + 1) % n, ++given)
        ++parts[order[k]];
    return parts;
}

std::vector<double> sharesFromSpeeds(const std::vector<double> &imagesPerSecond)
{
    const std::size_t n = imagesPerSecond.size();
    std::vector<double> shares(n, n ? 1.0 / double(n) : 0.0);
    double sum = 0.0;
    for (double s : imagesPerSecond) {
        if (!(s > 0.0) || !std::isfinite(s))
            return shares; // one unknown: equal shares, until every speed is measured
        sum += s;
    }
    for (std::size_t i = 0; i < n; ++i)
        shares[i] = imagesPerSecond[i] / sum;
    return shares;
}

void capShares(std::vector<double> &shares, const std::vector<double> &cap)
{
    for (std::size_t round = 0; round <= shares.size(); ++round) {
        double excess = 0.0, open = 0.0;
        for (std::size_t i = 0; i < shares.size(); ++i)
            if (shares[i] > cap[i]) {
                excess += shares[i] - cap[i];
                shares[i] = cap[i];
            }
        for (std::size_t i = 0; i < shares.size(); ++i)
            if (shares[i] < cap[i])
                open += shares[i];
        if (excess <= 1e-12 || open <= 0.0)
            break; // all fit, or nobody has room
        for (std::size_t i = 0; i < shares.size(); ++i)
            if (shares[i] < cap[i])
                shares[i] += excess * shares[i] / open;
    }
}

} // namespace edgetrain::core

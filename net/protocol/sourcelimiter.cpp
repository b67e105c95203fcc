#include "net/protocol/sourcelimiter.h"

#include <algorithm>

namespace edgetrain::net {

SourceLimiter::SourceLimiter(Options options) : m_options(options)
{
    m_total.tokens = m_options.total_per_second;
    m_total.last = Clock::now();
}

void SourceLimiter::refill(Bucket &b, double rate, double cap, Clock::time_point now)
{
    const double seconds = std::chrono::duration<double>(now - b.last).count();
    if (seconds > 0) {
        b.tokens = std::min(cap, b.tokens + rate * seconds);
        b.last = now;
    }
}

bool SourceLimiter::allow(const std::string &source, Clock::time_point now)
{
    auto it = m_buckets.find(source);
    if (it == m_buckets.end()) {
        if (m_buckets.size() >= std::max<std::size_t>(1, m_options.sources)) {
            const auto oldest = std::min_element(
                m_buckets.begin(), m_buckets.end(),
                [](const auto &a, const auto &b) { return a.second.last < b.second.last; });
            m_buckets.erase(oldest);
        }
        it = m_buckets.emplace(source, Bucket{m_options.burst, now}).first;
    }
    Bucket &b = it->second;
    refill(b, m_options.per_second, m_options.burst, now);
    refill(m_total, m_options.total_per_second, m_options.total_per_second, now);
    b.last = now; // heard from now, whether answered or not
    if (b.tokens < 1.0 || m_total.tokens < 1.0)
        return false;
    b.tokens -= 1.0;
    m_total.tokens -= 1.0;
    return true;
}

} // namespace edgetrain::net

#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>

namespace edgetrain::net {

/**
 * Token buckets per source (an address) and one for all sources together: allow() says whether
 * one more answer may go out now. A source gets `burst` at once and `per_second` after that;
 * all sources together get `total_per_second` (burst: one second's worth). At most `sources`
 * buckets are kept; a new source past that replaces the one heard from longest ago, so a flood
 * of spoofed addresses costs a fixed amount of memory.
 */
class SourceLimiter
{
public:
    using Clock = std::chrono::steady_clock;

    struct Options
    {
        double per_second = 5.0;
        double burst = 10.0;
        double total_per_second = 200.0;
        std::size_t sources = 1024;
    };

    explicit SourceLimiter(Options options);
    SourceLimiter() : SourceLimiter(Options{}) {}

    bool allow(const std::string &source, Clock::time_point now = Clock::now());
    std::size_t trackedSources() const { return m_buckets.size(); }

private:
    struct Bucket
    {
        double tokens = 0.0;
        Clock::time_point last;
    };
    static void refill(Bucket &b, double rate, double cap, Clock::time_point now);

    Options m_options;
    std::map<std::string, Bucket> m_buckets;
    Bucket m_total;
};

} // namespace edgetrain::net

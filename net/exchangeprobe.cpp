#include "exchangeprobe.h"

#include "collectives.h"

#include <gloo/rendezvous/hash_store.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace edgetrain::net {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kWindows = 3;
constexpr int kMaxPerWindow = 100000;

double since(Clock::time_point t)
{
    return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace

double ringMemberSecondsPerByte(double perAllreduce, std::size_t bytes, double cores)
{
    if (bytes == 0 || perAllreduce <= 0.0)
        return 0.0;
    const double c = cores > 0.0 ? cores : 1.0;
    return perAllreduce * std::min(2.0, c) / (2.0 * std::min(1.0, c)) / double(bytes);
}

ExchangeMeasurement measureExchange(std::size_t floats, double cores, double minSeconds)
{
    ExchangeMeasurement m;
    m.bytes = floats * sizeof(float);
    if (floats == 0)
        return m;
    const auto began = Clock::now();
    gloo::rendezvous::HashStore store;
    std::vector<std::string> errors(2);
    double best = 0.0;
    int repeats = 0;
    double setup = 0.0, windows = 0.0;
    auto rank = [&](int r) {
        try {
            GroupOptions o;
            o.rank = r;
            o.size = 2;
            o.prefix = "exchange-probe";
            o.timeout = std::chrono::milliseconds(30000);
            CollectiveGroup group(store, o);
            std::vector<float> data(floats, 1.0f);
            group.allreduceSum(data.data(), data.size()); // connections warm, buffers touched
            // Each window runs allreduces (at least two) until rank 0 has seen a third of
            // minSeconds pass before one: it says so in the last float of the data it reduces
            // (the other rank puts 0 there), so both ranks learn it from the allreduce itself
            // and nothing but allreduces is timed. Not one allreduce: under a CPU quota one can
            // fall in the quota's burst and be many times faster.
            const double windowSeconds = minSeconds / kWindows;
            for (int w = 0; w < kWindows; ++w) {
                group.barrier();
                const auto t = Clock::now();
                if (r == 0 && w == 0)
                    setup = since(began);
                int count = 0;
                for (bool more = true; more;) {
                    data.back() = r == 0 && count >= 1 && since(t) >= windowSeconds ? 1.0f : 0.0f;
                    group.allreduceSum(data.data(), data.size());
                    ++count;
                    more = data.back() == 0.0f && count < kMaxPerWindow;
                }
                const double mean = since(t) / count;
                if (r == 0) {
                    best = w == 0 ? mean : std::min(best, mean);
                    repeats += count;
                }
            }
            if (r == 0)
                windows = since(began) - setup;
        } catch (const std::exception &e) {
            errors[std::size_t(r)] = e.what();
        }
    };
    std::thread other(rank, 1);
    rank(0);
    other.join();
    for (const auto &e : errors)
        if (!e.empty())
            throw CollectiveError("timing an allreduce on this device: " + e);
    m.repeats = repeats;
    m.seconds = since(began);
    m.setup_seconds = setup;
    m.windows_seconds = windows;
    m.seconds_per_byte = ringMemberSecondsPerByte(best, m.bytes, cores);
    return m;
}

} // namespace edgetrain::net

#include "exchangeprobe.h"

#include "collectives.h"

#include <gloo/rendezvous/hash_store.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

namespace edgetrain::net {

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t)
{
    return std::chrono::duration<double>(Clock::now() - t).count();
}

} // namespace

ExchangeMeasurement measureExchange(std::size_t floats, double cores, double minSeconds)
{
    ExchangeMeasurement m;
    m.bytes = floats * sizeof(float);
    if (floats == 0)
        return m;
    const auto began = Clock::now();
    gloo::rendezvous::HashStore store;
    // Rank 0 decides how many allreduces there are; rank 1 follows its word (a broadcast of
    // one float after each: 0 to go on, 1 to stop), so both make the same calls.
    std::vector<std::string> errors(2);
    double timed = 0.0;
    int repeats = 0;
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
            float stop = 0.0f;
            group.barrier();
            const auto start = Clock::now();
            int done = 0;
            while (stop == 0.0f) {
                group.allreduceSum(data.data(), data.size());
                ++done;
                if (r == 0)
                    stop = (done >= 2 && since(start) >= minSeconds) || done >= 64 ? 1.0f : 0.0f;
                group.broadcast(&stop, 1, 0);
            }
            if (r == 0) {
                timed = since(start);
                repeats = done;
            }
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
    // Per allreduce each of the two ranks handles 2 (n - 1) / n x bytes = bytes of chunks. The
    // pair shared min(2, cores) of CPU; one ring member has min(1, cores).
    const double c = cores > 0.0 ? cores : 1.0;
    const double perAllreduce = timed / double(std::max(1, repeats));
    m.seconds_per_byte =
        perAllreduce * std::min(2.0, c) / (2.0 * std::min(1.0, c)) / double(m.bytes);
    return m;
}

} // namespace edgetrain::net

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
constexpr int kMaxPerWindow = 64;

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
    double perAllreduce = 0.0;
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
            // Three windows of at least a third of minSeconds and two allreduces each (at most
            // 64); the best window's mean is kept (on a machine shared with other work the
            // slower ones timed that work too).
            float stop = 0.0f;
            group.barrier();
            auto window = Clock::now();
            int done = 0, inWindow = 0, windows = 0;
            double best = 0.0;
            while (stop == 0.0f) {
                group.allreduceSum(data.data(), data.size());
                ++done;
                ++inWindow;
                if (r == 0) {
                    const double elapsed = since(window);
                    if ((inWindow >= 2 && elapsed >= minSeconds / 3) || inWindow >= kMaxPerWindow) {
                        const double mean = elapsed / inWindow;
                        best = windows == 0 ? mean : std::min(best, mean);
                        ++windows;
                        inWindow = 0;
                        window = Clock::now();
                    }
                    stop = windows >= 3 ? 1.0f : 0.0f;
                }
                group.broadcast(&stop, 1, 0);
            }
            if (r == 0) {
                perAllreduce = best;
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
    m.seconds_per_byte =
        perAllreduce * std::min(2.0, c) / (2.0 * std::min(1.0, c)) / double(m.bytes);
    return m;
}

} // namespace edgetrain::net

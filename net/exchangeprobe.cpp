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
            // Calibration: allreduces until a sixth of minSeconds and two have passed (rank 0
            // says when, after each: both ranks must make the same calls); their mean sets
            // how many make a window, which then times allreduces alone. Not one allreduce: under
            // a CPU quota one can fall in the quota's burst and be many times faster.
            group.barrier();
            auto t = Clock::now();
            int calibrated = 0;
            for (float more = 1.0f; more != 0.0f;) {
                group.allreduceSum(data.data(), data.size());
                ++calibrated;
                more = calibrated < 2 || since(t) < minSeconds / (2 * kWindows) ? 1.0f : 0.0f;
                group.broadcast(&more, 1, 0);
            }
            float perWindow = float(
                std::clamp(std::ceil(minSeconds / kWindows / std::max(since(t) / calibrated, 1e-6)),
                           2.0, double(kMaxPerWindow)));
            group.broadcast(&perWindow, 1, 0);
            const int count = int(perWindow);
            for (int w = 0; w < kWindows; ++w) {
                group.barrier();
                t = Clock::now();
                for (int i = 0; i < count; ++i)
                    group.allreduceSum(data.data(), data.size());
                const double mean = since(t) / count;
                if (r == 0)
                    best = w == 0 ? mean : std::min(best, mean);
            }
            if (r == 0)
                repeats = kWindows * count;
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
    m.seconds_per_byte = ringMemberSecondsPerByte(best, m.bytes, cores);
    return m;
}

} // namespace edgetrain::net

#include "net/training/exchangeprobe.h"

#include "core/cputime.h"
#include "net/training/collectives.h"

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

/** What rank 0 learnt from timing windows of allreduces: the best window's mean seconds per
 *  allreduce, how many it timed, and the process's CPU seconds over all the windows. */
struct Windows
{
    double best = 0.0;
    int repeats = 0;
    double cpu_seconds = 0.0;
};

/**
 * Warms the group up (one allreduce: connections used, buffers touched), then times kWindows
 * windows of allreduces of `data`. Each window runs allreduces (at least two) until rank 0 has
 * seen `windowSeconds` pass before one: it says so in the last float of the data it reduces (the
 * other ranks put 0 there), so every rank learns it from the allreduce itself and nothing but
 * allreduces is timed. Not one allreduce: under a CPU quota one can fall in the quota's burst
 * and be many times faster. Every rank makes the same calls; only rank 0's figures count.
 */
Windows timeWindows(CollectiveGroup &group, std::vector<float> &data, double windowSeconds)
{
    Windows w;
    group.allreduceSum(data.data(), data.size());
    const bool decides = group.rank() == 0;
    for (int window = 0; window < kWindows; ++window) {
        group.barrier();
        const double cpu = core::processCpuSeconds();
        const auto t = Clock::now();
        int count = 0;
        for (bool more = true; more;) {
            data.back() = decides && count >= 1 && since(t) >= windowSeconds ? 1.0f : 0.0f;
            group.allreduceSum(data.data(), data.size());
            ++count;
            more = data.back() == 0.0f && count < kMaxPerWindow;
        }
        const double mean = since(t) / count;
        w.cpu_seconds += core::processCpuSeconds() - cpu;
        w.best = window == 0 ? mean : std::min(w.best, mean);
        w.repeats += count;
    }
    return w;
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
    Windows timed;
    double setup = 0.0;
    auto rank = [&](int r) {
        try {
            GroupOptions o;
            o.rank = r;
            o.size = 2;
            o.prefix = "exchange-probe";
            o.timeout = std::chrono::milliseconds(30000);
            CollectiveGroup group(store, o);
            std::vector<float> data(floats, 1.0f);
            if (r == 0)
                setup = since(began);
            const Windows w = timeWindows(group, data, minSeconds / kWindows);
            if (r == 0)
                timed = w;
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
    m.repeats = timed.repeats;
    m.seconds = since(began);
    m.setup_seconds = setup;
    m.windows_seconds = m.seconds - setup;
    m.seconds_per_byte = ringMemberSecondsPerByte(timed.best, m.bytes, cores);
    return m;
}

ExchangeMeasurement measurePairExchange(gloo::rendezvous::Store &store, GroupOptions options,
                                        std::size_t floats, double minSeconds)
{
    ExchangeMeasurement m;
    m.bytes = floats * sizeof(float);
    if (floats == 0)
        return m;
    const auto began = Clock::now();
    options.size = 2;
    CollectiveGroup group(store, options);
    std::vector<float> data(floats, 1.0f);
    m.setup_seconds = since(began);
    const Windows w = timeWindows(group, data, minSeconds / kWindows);
    if (options.rank == 0) {
        m.repeats = w.repeats;
        // Two rounds of half the data each way: per allreduce each rank's rounds move `bytes`
        // of chunks, as a ring member's do, so the mean over them is the time per byte of chunk.
        m.seconds_per_byte = w.best / double(m.bytes);
        // The CPU over every window, not the best one's: what the exchange costs the device
        // whatever the wire does.
        m.cpu_seconds_per_byte = w.cpu_seconds / double(w.repeats) / double(m.bytes);
    }
    m.seconds = since(began);
    m.windows_seconds = m.seconds - m.setup_seconds;
    return m;
}

} // namespace edgetrain::net

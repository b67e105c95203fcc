#include "trainingbenchmark.h"

#include "error.h"
#include "random.h"
#include "sgd.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numbers>

namespace edgetrain::core {

namespace {
double quantile(std::vector<double> sorted, double q)
{
    std::sort(sorted.begin(), sorted.end());
    const double pos = q * double(sorted.size() - 1);
    const auto lo = std::size_t(std::floor(pos));
    const auto hi = std::min(lo + 1, sorted.size() - 1);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - double(lo));
}
} // namespace

BenchmarkResult TrainingBenchmark::run(Model &model, const BenchmarkOptions &options,
                                       const std::atomic<bool> *stop)
{
    if (options.batch < 1 || options.batch > 65536)
        throw SpecError("batch size must be between 1 and 65536");
    if (options.steps < 1 || options.steps > 1000000 || options.warmup_steps < 0)
        throw SpecError("steps must be between 1 and 1000000");
    Tensor x(model.batchShape(options.batch), MemoryCategory::Activations);
    // A detector's labels stay all zero: frames without objects (the step costs the same).
    const int labelWidth = model.spec().labelWidth();
    std::vector<std::int32_t> labels(static_cast<std::size_t>(options.batch) *
                                     std::size_t(labelWidth));
    Rng rng(options.seed + 12345);
    for (std::int64_t i = 0; i < x.numel(); ++i) {
        const double u1 = std::max(double(rng.uniform()), 1e-12), u2 = rng.uniform();
        x.data()[i] = float(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
    }
    for (auto &l : labels)
        if (labelWidth == 1)
            l = std::int32_t(rng.below(std::uint64_t(model.classCount())));

    SgdOptions sgd;
    sgd.momentum = 0.9;
    Sgd optimizer(model, sgd);
    PassContext ctx;
    ctx.seed = options.seed;
    auto step = [&] {
        model.forwardBackward(x, labels.data(), ctx);
        optimizer.step(options.lr);
        ++ctx.step;
    };
    for (int i = 0; i < options.warmup_steps; ++i)
        step();
    MemoryAccountant::global().resetPeaks();
    BenchmarkResult r;
    for (int i = 0; i < options.steps; ++i) {
        if (stop && stop->load())
            break;
        const auto t0 = std::chrono::steady_clock::now();
        step();
        r.step_seconds.push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    r.memory = MemoryAccountant::global().snapshot();
    if (r.step_seconds.empty())
        return r;
    const double b = double(options.batch);
    const double median = quantile(r.step_seconds, 0.5);
    r.median_images_per_second = b / median;
    r.min_images_per_second = b / *std::max_element(r.step_seconds.begin(), r.step_seconds.end());
    r.max_images_per_second = b / *std::min_element(r.step_seconds.begin(), r.step_seconds.end());
    r.p10_images_per_second = b / quantile(r.step_seconds, 0.9);
    r.p90_images_per_second = b / quantile(r.step_seconds, 0.1);
    r.gflops = 3.0 * model.forwardFlops(options.batch) / median / 1e9;
    return r;
}

} // namespace edgetrain::core

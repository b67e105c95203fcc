#pragma once

#include "memoryaccountant.h"
#include "model.h"

#include <atomic>
#include <vector>

namespace edgetrain::core {

struct BenchmarkOptions
{
    std::int64_t batch = 32;
    int warmup_steps = 3;
    int steps = 20;
    double lr = 0.01; // SGD with momentum 0.9, as ../shared/bench/torch_throughput.py
    std::uint64_t seed = 0;
};

struct BenchmarkResult
{
    std::vector<double> step_seconds; // one per timed step
    double median_images_per_second = 0;
    double min_images_per_second = 0;
    double max_images_per_second = 0;
    double p10_images_per_second = 0;
    double p90_images_per_second = 0;
    double gflops = 0;     // 3 x forward FLOPs per image, at the median step
    MemorySnapshot memory; // peaks over the timed steps (weights etc. included)
};

/**
 * Training-step throughput on synthetic data (N(0,1) images, uniform labels) made once:
 * forward + cross-entropy + backward + SGD step, the same work as the PyTorch reference.
 */
class TrainingBenchmark
{
public:
    static BenchmarkResult run(Model &model, const BenchmarkOptions &options,
                               const std::atomic<bool> *stop = nullptr);
};

} // namespace edgetrain::core

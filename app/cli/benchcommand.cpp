#include "benchcommand.h"

#include "clicontext.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/trainingbenchmark.h"
#include "core/zoo.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace edgetrain::app {

namespace {

/**
 * The single-thread FMA ceiling of this CPU for the vector width the build targets: 12
 * independent multiply-add chains (enough to cover the FMA latency), GFLOP/s = 2 x lanes x
 * chains x iterations / seconds.
 */
double measureFmaPeak()
{
    using Vec = float __attribute__((vector_size(64)));
    constexpr int kChains = 12;
    Vec acc[kChains];
    for (int i = 0; i < kChains; ++i)
        for (int l = 0; l < 16; ++l)
            acc[i][l] = float(i + l) * 1e-3f;
    Vec mul, add;
    for (int l = 0; l < 16; ++l) {
        mul[l] = 0.999999f;
        add[l] = 1e-7f;
    }
    double best = 0.0;
    const long iterations = 20'000'000;
    for (int round = 0; round < 3; ++round) {
        const auto t0 = std::chrono::steady_clock::now();
        for (long it = 0; it < iterations; ++it)
            for (int i = 0; i < kChains; ++i)
                acc[i] = acc[i] * mul + add;
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, 2.0 * 16 * kChains * double(iterations) / s / 1e9);
    }
    float sink = 0.0f;
    for (int i = 0; i < kChains; ++i)
        sink += acc[i][0];
    return sink == 12345.0f ? 0.0 : best; // uses the result, so the loop is not removed
}

/** GF/s of C = A * B (square, size n) per available backend: the median of several runs. */
int benchGemm(CliContext &cli, std::int64_t n, int repeats)
{
    std::vector<float> a(std::size_t(n * n)), b(std::size_t(n * n)), c(std::size_t(n * n));
    for (std::size_t i = 0; i < a.size(); ++i) {
        a[i] = float((i * 7919) % 1000) / 1000.0f - 0.5f;
        b[i] = float((i * 104729) % 1000) / 1000.0f - 0.5f;
    }
    const double peak = measureFmaPeak();
    char peakLine[96];
    std::snprintf(peakLine, sizeof peakLine, "FMA ceiling of one core, measured: %.1f GFLOP/s",
                  peak);
    cli.message(peakLine);
    core::Json results = core::Json::array();
    const core::GemmBackend original = core::gemmBackend();
    for (const core::GemmBackend backend : core::availableGemmBackends()) {
        core::setGemmBackend(backend);
        core::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
        std::vector<double> seconds;
        for (int r = 0; r < repeats; ++r) {
            const auto t0 = std::chrono::steady_clock::now();
            core::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
            seconds.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        std::sort(seconds.begin(), seconds.end());
        const double gflops =
            2.0 * double(n) * double(n) * double(n) / seconds[seconds.size() / 2] / 1e9;
        char line[160];
        std::snprintf(line, sizeof line,
                      "sgemm %lld^3  %-5s  %d thread(s): %7.1f GFLOP/s (%.1f per thread, %.0f %% "
                      "of the FMA ceiling)",
                      (long long)n, std::string(core::gemmBackendName(backend)).c_str(),
                      cli.threads(), gflops, gflops / cli.threads(),
                      100.0 * gflops / cli.threads() / peak);
        cli.message(line);
        core::Json j;
        j.set("backend", std::string(core::gemmBackendName(backend))).set("gflops", gflops);
        j.set("gflops_per_thread", gflops / cli.threads());
        results.push(std::move(j));
    }
    core::setGemmBackend(original);
    if (cli.json()) {
        core::Json json;
        json.set("command", "bench").set("kernel", "sgemm").set("size", n);
        json.set("threads", cli.threads()).set("fma_peak_gflops_per_core", peak);
        json.set("results", std::move(results));
        cli.printJson(json);
    }
    return ExitSuccess;
}

} // namespace

int BenchCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("bench"),
                   QStringLiteral("Training-step throughput on synthetic data (forward, "
                                  "cross-entropy, backward, SGD step) with peak memory by "
                                  "category; or, with --gemm-size, matrix-product GFLOP/s."),
                   arguments);
    cli.addOption("model", "Zoo model or ModelSpec .json file.", "M", "lenet5");
    cli.addOption("batch", "Mini-batch size.", "B", "64");
    cli.addOption("input", "Sample shape CxHxW (default: the model's own).", "CxHxW");
    cli.addOption("steps", "Timed steps.", "N", "30");
    cli.addOption("warmup", "Untimed steps first.", "N", "3");
    cli.addOption("seed", "Seed for weights and data.", "N", "0");
    cli.addOption("gemm-size", "Measure SGEMM of this square size instead of a model.", "N");
    if (!cli.parse())
        return ExitSuccess;
    if (cli.isSet("gemm-size"))
        return benchGemm(cli, cli.integer("gemm-size", 16, 8192), 9);

    core::BenchmarkOptions options;
    options.batch = cli.integer("batch", 1, 65536);
    options.steps = int(cli.integer("steps", 1, 1000000));
    options.warmup_steps = int(cli.integer("warmup", 0, 1000));
    options.seed = std::uint64_t(cli.integer("seed", 0, std::int64_t(1) << 53));
    core::Model model(cli.modelSpec(), options.seed);
    CliContext::installStopHandler();
    const core::BenchmarkResult r =
        core::TrainingBenchmark::run(model, options, CliContext::stopFlag());
    if (r.step_seconds.empty()) {
        cli.message("cancelled");
        return ExitFailure;
    }
    char line[256];
    std::snprintf(
        line, sizeof line,
        "%s b%lld %s, %d thread(s), GEMM %s: %s img/s median [%s - %s], p10-p90 [%s - %s], "
        "%.1f GFLOP/s, %zu steps",
        model.spec().name().c_str(), (long long)options.batch,
        model.sampleShape().toString().c_str(), cli.threads(),
        std::string(core::gemmBackendName(core::gemmBackend())).c_str(),
        groupDigits(r.median_images_per_second).c_str(),
        groupDigits(r.min_images_per_second).c_str(), groupDigits(r.max_images_per_second).c_str(),
        groupDigits(r.p10_images_per_second).c_str(), groupDigits(r.p90_images_per_second).c_str(),
        r.gflops, r.step_seconds.size());
    cli.message(line);
    std::string mem = "peak memory " + formatBytes(r.memory.peak_total_bytes) + ":";
    for (int i = 0; i < core::kMemoryCategoryCount; ++i) {
        mem.append(i ? ", " : " ").append(core::memoryCategoryName(core::MemoryCategory(i)));
        mem.append(" ").append(formatBytes(r.memory.peak_bytes[std::size_t(i)]));
    }
    cli.message(mem);
    if (cli.json()) {
        core::Json steps = core::Json::array();
        for (double s : r.step_seconds)
            steps.push(s);
        core::Json json;
        json.set("command", "bench").set("model", model.spec().name()).set("batch", options.batch);
        core::Json input = core::Json::array();
        for (auto d : model.sampleShape().dims())
            input.push(d);
        json.set("input", std::move(input)).set("threads", cli.threads());
        json.set("gemm", std::string(core::gemmBackendName(core::gemmBackend())));
        json.set("images_per_second", r.median_images_per_second);
        json.set("images_per_second_min", r.min_images_per_second);
        json.set("images_per_second_max", r.max_images_per_second);
        json.set("images_per_second_p10", r.p10_images_per_second);
        json.set("images_per_second_p90", r.p90_images_per_second);
        json.set("gflops", r.gflops).set("step_seconds", std::move(steps));
        json.set("peak_bytes", r.memory.peak_total_bytes);
        json.set("peak_bytes_by_category", CliContext::memoryJson(r.memory));
        cli.printJson(json);
    }
    return ExitSuccess;
}

} // namespace edgetrain::app

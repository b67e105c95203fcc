#include "benchcommand.h"

#include "clicontext.h"
#include "core/conv2d.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/memorysimulation.h"
#include "core/numbertext.h"
#include "core/stage.h"
#include "core/trainingbenchmark.h"
#include "core/zoo.h"
#include "net/training/collectives.h"
#include "tilingoptions.h"

#include <QStringList>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
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
    const double peak = measureFmaPeak();
    char peakLine[96];
    std::snprintf(peakLine, sizeof peakLine, "FMA ceiling of one core, measured: %.1f GFLOP/s",
                  peak);
    cli.message(peakLine);
    core::Json results = core::Json::array();
    const core::GemmBackend original = core::gemmBackend();
    for (const core::GemmBackend backend : core::availableGemmBackends()) {
        core::setGemmBackend(backend);
        const double gflops = core::measureGemmGflops(n, repeats);
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

/** One-direction TCP throughput over 127.0.0.1 (bytes/s): the link the ranks share. */
double loopbackBandwidth()
{
    const int server = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (server < 0 || ::bind(server, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 ||
        ::listen(server, 1) != 0 ||
        ::getsockname(server, reinterpret_cast<sockaddr *>(&addr), &len) != 0)
        throw core::IoError("cannot open a loopback socket to measure bandwidth");
    constexpr std::size_t kChunk = 1 << 20, kTotal = std::size_t(512) << 20;
    std::thread reader([server] {
        const int peer = ::accept(server, nullptr, nullptr);
        std::vector<char> buf(kChunk);
        std::size_t got = 0;
        while (got < kTotal) {
            const auto n = ::read(peer, buf.data(), buf.size());
            if (n <= 0)
                break;
            got += std::size_t(n);
        }
        ::close(peer);
    });
    const int client = ::socket(AF_INET, SOCK_STREAM, 0);
    if (::connect(client, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
        reader.join();
        throw core::IoError("cannot connect over loopback to measure bandwidth");
    }
    const std::vector<char> buf(kChunk, 'x');
    const auto t0 = std::chrono::steady_clock::now();
    std::size_t sent = 0;
    while (sent < kTotal) {
        const auto n = ::write(client, buf.data(), buf.size());
        if (n <= 0)
            break;
        sent += std::size_t(n);
    }
    ::close(client);
    reader.join();
    ::close(server);
    return double(sent) /
           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/** One rank's part: warm up, then time `repeats` allreduces (each after a barrier, so the
 *  ranks start together). */
std::vector<double> allreduceRank(gloo::rendezvous::Store &store, const net::GroupOptions &o,
                                  std::size_t count, int repeats)
{
    net::CollectiveGroup group(store, o);
    std::vector<float> grad(count, 1.0f);
    std::vector<double> times;
    for (int i = 0; i < repeats + 2; ++i) {
        group.barrier();
        const auto t0 = std::chrono::steady_clock::now();
        group.allreduceSum(grad.data(), grad.size());
        if (i >= 2)
            times.push_back(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    return times;
}

std::int64_t gradientCount(const char *name)
{
    core::MemorySimulation virtualWeights;
    core::Model model(core::Zoo::spec(name), 0);
    return model.parameterCount();
}

/**
 * One rank of an allreduce benchmark whose ranks are separate processes (on separate hosts or
 * network namespaces, e.g. with links shaped by tc), meeting through a file store in a shared
 * folder. Rank 0 prints the table against the bound for the given link bandwidth.
 */
int benchAllreduceRank(CliContext &cli, int repeats)
{
    const int world = int(cli.integer("world", 2, 64));
    const int rank = int(cli.integer("rank", 0, world - 1));
    const std::string storeDir = cli.text("store");
    if (storeDir.empty())
        throw UsageError("--rank needs --store DIR (a folder every rank can reach)");
    const double bandwidth = cli.number("bandwidth", 1e3, 1e12);
    gloo::rendezvous::FileStore store(storeDir);
    core::Json rows = core::Json::array();
    char line[200];
    if (rank == 0)
        cli.message(
            "model      gradient   ranks   allreduce (median)   bound 2(n-1)/n*bytes/bw   ratio");
    for (const char *name : {"lenet5", "resnet20", "resnet110"}) {
        const auto count = std::size_t(gradientCount(name));
        const double bytes = double(count) * 4.0;
        net::GroupOptions o;
        o.rank = rank;
        o.size = world;
        o.hostname = cli.text("hostname");
        o.timeout = std::chrono::milliseconds(60000);
        o.prefix = std::string("bench-") + name;
        std::vector<double> times;
        try {
            times = allreduceRank(store, o, count, repeats);
        } catch (const net::CollectiveError &e) {
            throw core::Error(std::string("allreduce benchmark: ") + e.what());
        }
        const double median = times[times.size() / 2];
        const double bound = 2.0 * (world - 1) / world * bytes / bandwidth;
        if (rank == 0) {
            std::snprintf(line, sizeof line, "%-9s %8s   %5d   %12.3f ms   %18.3f ms   %8.2f", name,
                          core::NumberText::bytes(std::int64_t(bytes)).c_str(), world, 1e3 * median,
                          1e3 * bound, median / bound);
            cli.message(line);
        }
        core::Json row;
        row.set("model", name).set("bytes", std::int64_t(bytes)).set("ranks", world);
        row.set("median_seconds", median).set("bound_seconds", bound).set("ratio", median / bound);
        rows.push(std::move(row));
    }
    if (cli.json() && rank == 0) {
        core::Json json;
        json.set("command", "bench").set("kernel", "allreduce").set("transport", "tcp-processes");
        json.set("bandwidth_bytes_per_second", bandwidth).set("results", std::move(rows));
        cli.printJson(json);
    }
    return ExitSuccess;
}

/** Allreduce of the zoo's gradient sizes across ranks (threads, real TCP over loopback). */
int benchAllreduce(CliContext &cli, const std::string &ranksText, int repeats)
{
    std::vector<int> ranks;
    for (const QString &r :
         QString::fromStdString(ranksText).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const int n = r.toInt(&ok);
        if (!ok || n < 2 || n > 16)
            throw UsageError("--ranks takes counts from 2 to 16, like 2,3,4");
        ranks.push_back(n);
    }
    const double bandwidth = loopbackBandwidth();
    char line[200];
    std::snprintf(line, sizeof line, "loopback TCP bandwidth, measured: %.2f GB/s",
                  bandwidth / 1e9);
    cli.message(line);
    cli.message(
        "model      gradient   ranks   allreduce (median)   bound 2(n-1)/n*bytes/bw   ratio");
    core::Json rows = core::Json::array();
    int generation = 0;
    for (const char *name : {"lenet5", "resnet20", "resnet110"}) {
        const auto count = std::size_t(gradientCount(name));
        const double bytes = double(count) * 4.0;
        for (const int n : ranks) {
            gloo::rendezvous::HashStore store;
            std::vector<double> times;
            std::vector<std::string> errors(static_cast<std::size_t>(n));
            std::vector<std::thread> threads;
            for (int r = 0; r < n; ++r)
                threads.emplace_back([&, r] {
                    try {
                        net::GroupOptions o;
                        o.rank = r;
                        o.size = n;
                        o.prefix = "bench-" + std::to_string(generation);
                        auto mine = allreduceRank(store, o, count, repeats);
                        if (r == 0)
                            times = std::move(mine);
                    } catch (const std::exception &e) {
                        errors[std::size_t(r)] = e.what();
                    }
                });
            for (auto &t : threads)
                t.join();
            ++generation;
            for (const auto &e : errors)
                if (!e.empty())
                    throw core::Error("allreduce benchmark: " + e);
            const double median = times[times.size() / 2];
            const double bound = 2.0 * (n - 1) / n * bytes / bandwidth;
            std::snprintf(line, sizeof line, "%-9s %8s   %5d   %12.3f ms   %18.3f ms   %8.2f", name,
                          core::NumberText::bytes(std::int64_t(bytes)).c_str(), n, 1e3 * median,
                          1e3 * bound, median / bound);
            cli.message(line);
            core::Json row;
            row.set("model", name).set("bytes", std::int64_t(bytes)).set("ranks", n);
            row.set("median_seconds", median)
                .set("bound_seconds", bound)
                .set("ratio", median / bound);
            rows.push(std::move(row));
        }
    }
    if (cli.json()) {
        core::Json json;
        json.set("command", "bench").set("kernel", "allreduce").set("transport", "tcp-loopback");
        json.set("bandwidth_bytes_per_second", bandwidth).set("results", std::move(rows));
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
    cli.addOption("allreduce", "Measure gloo allreduce of LeNet-5 / ResNet-20 / ResNet-110 "
                               "gradient sizes across ranks on loopback instead of a model.");
    cli.addOption("ranks", "Rank counts for --allreduce.", "N,N,...", "2,3,4");
    cli.addOption(
        "rank", "--allreduce as one rank of a group of separate processes (with --world, --store).",
        "R");
    cli.addOption("world", "With --rank: the number of ranks.", "N", "2");
    cli.addOption("store",
                  "With --rank: a folder all ranks reach, where they meet (gloo file store).",
                  "DIR");
    cli.addOption("hostname", "With --rank: the address this rank listens on.", "IP", "127.0.0.1");
    cli.addOption("bandwidth", "With --rank: the link's bandwidth in bytes/s, for the bound.",
                  "B/S", "12500000");
    cli.addOption("fuse",
                  "on: a batch norm and the ReLU after it run as one pass (the engine's way); "
                  "off: layer by layer (the reference, for comparison).",
                  "on|off", "on");
    addTilingOptions(cli);
    if (!cli.parse())
        return ExitSuccess;
    const std::string fuse = cli.text("fuse");
    if (fuse != "on" && fuse != "off")
        throw UsageError("--fuse: expected on or off, got '" + fuse + "'");
    core::setFusedStages(fuse == "on");
    if (cli.isSet("allreduce") && cli.isSet("rank"))
        return benchAllreduceRank(cli, int(cli.integer("steps", 3, 1000)));
    if (cli.isSet("allreduce"))
        return benchAllreduce(cli, cli.text("ranks"), int(cli.integer("steps", 3, 1000)));
    if (cli.isSet("gemm-size"))
        return benchGemm(cli, cli.integer("gemm-size", 16, 8192), 9);

    core::BenchmarkOptions options;
    options.batch = cli.integer("batch", 1, 65536);
    options.steps = int(cli.integer("steps", 1, 1000000));
    options.warmup_steps = int(cli.integer("warmup", 0, 1000));
    options.seed = std::uint64_t(cli.integer("seed", 0, std::int64_t(1) << 53));
    core::Model model(cli.modelSpec(), options.seed);
    const TilingRequest tiling = tilingRequest(cli);
    std::optional<core::TiledPlan> tiled;
    if (tiling.requested) {
        try {
            tiled = core::planTiling(model, options.batch, -1, tiling.stages, tiling.grid);
        } catch (const core::SpecError &e) {
            throw UsageError(std::string("--tiles: ") + e.what());
        }
        cli.message(tilingText(*tiled));
    }
    CliContext::installStopHandler();
    const core::BenchmarkResult r =
        core::TrainingBenchmark::run(model, options, CliContext::stopFlag());
    if (r.step_seconds.empty()) {
        cli.message("cancelled");
        return ExitFailure;
    }
    char line[320];
    std::snprintf(
        line, sizeof line,
        "%s b%lld %s, %d thread(s), GEMM %s, conv %s%s: %s img/s median [%s - %s], p10-p90 "
        "[%s - %s], "
        "%.1f GFLOP/s, %zu steps",
        model.spec().name().c_str(), (long long)options.batch,
        model.sampleShape().toString().c_str(), cli.threads(),
        std::string(core::gemmBackendName(core::gemmBackend())).c_str(),
        std::string(core::convBackendName(core::convBackend())).c_str(),
        core::fusedStages() ? "" : ", layer by layer",
        groupDigits(r.median_images_per_second).c_str(),
        groupDigits(r.min_images_per_second).c_str(), groupDigits(r.max_images_per_second).c_str(),
        groupDigits(r.p10_images_per_second).c_str(), groupDigits(r.p90_images_per_second).c_str(),
        r.gflops, r.step_seconds.size());
    cli.message(line);
    std::string mem = "peak memory " + core::NumberText::bytes(r.memory.peak_total_bytes) + ":";
    for (int i = 0; i < core::kMemoryCategoryCount; ++i) {
        mem.append(i ? ", " : " ").append(core::memoryCategoryName(core::MemoryCategory(i)));
        mem.append(" ").append(core::NumberText::bytes(r.memory.peak_bytes[std::size_t(i)]));
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
        json.set("conv", std::string(core::convBackendName(core::convBackend())));
        json.set("fused", core::fusedStages());
        json.set("images_per_second", r.median_images_per_second);
        json.set("images_per_second_min", r.min_images_per_second);
        json.set("images_per_second_max", r.max_images_per_second);
        json.set("images_per_second_p10", r.p10_images_per_second);
        json.set("images_per_second_p90", r.p90_images_per_second);
        json.set("gflops", r.gflops).set("step_seconds", std::move(steps));
        json.set("peak_bytes", r.memory.peak_total_bytes);
        json.set("peak_bytes_by_category", CliContext::memoryJson(r.memory));
        if (tiled)
            setTilingJson(json, *tiled);
        cli.printJson(json);
    }
    return ExitSuccess;
}

} // namespace edgetrain::app

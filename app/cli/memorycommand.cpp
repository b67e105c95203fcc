#include "memorycommand.h"

#include "clicontext.h"
#include "core/bufferpool.h"
#include "core/error.h"
#include "core/memoryplanner.h"
#include "core/memorysimulation.h"
#include "core/numbertext.h"
#include "core/processmemory.h"
#include "core/random.h"
#include "core/sgd.h"
#include "core/zoo.h"
#include "tilingoptions.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

namespace edgetrain::app {

namespace {

std::string factorText(double f)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "x%.3f", f);
    return buf;
}

core::Json planJson(const core::MemoryPlan &p)
{
    core::Json j;
    j.set("schedule", p.schedule.name()).set("forwards", p.schedule.forwardCount());
    j.set("predicted_peak_bytes", p.predicted_peak_bytes);
    j.set("predicted_recompute_factor", p.predicted_recompute_factor);
    return j;
}

struct Measurement
{
    std::int64_t peak_bytes = 0;
    std::int64_t rss_bytes = -1;
    double step_seconds = 0.0;
    double store_all_step_seconds = 0.0; // 0: not measured
};

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

/** One `memory` command once parsed: the model, its planner and what was asked of them. */
struct MemoryRun
{
    CliContext &cli;
    core::Model *model;
    core::MemoryPlanner &planner;
    std::int64_t batch, budget, overhead;
    int L, steps;
    std::string scheduleText;
    bool profile;
    std::int64_t rssBaseline, fileBaseline;

    /** The schedule asked for (--schedule), the cheapest that fits (--budget), or store-all. */
    core::MemoryPlan choosePlan() const
    {
        core::MemoryPlan plan;
        if (scheduleText == "optimal") {
            plan = planner.optimal(budget);
            if (!plan.fits) {
                // Say what would fit: the smallest budget, and (if no schedule fits at all) the
                // largest batch that does.
                const core::MemoryPlan any = planner.plan(budget);
                plan.min_budget_bytes = any.fits ? planner.minimumBudget() : any.min_budget_bytes;
                plan.max_batch = any.fits ? batch : any.max_batch;
                if (any.fits)
                    cli.message("the dynamic program finds nothing within " +
                                core::NumberText::bytes(budget) + ", but " + any.schedule.name() +
                                " fits: use --budget without --schedule");
            }
        } else if (!scheduleText.empty()) {
            core::Schedule schedule;
            try {
                schedule = core::Schedule::parse(scheduleText, L);
            } catch (const core::SpecError &e) {
                throw UsageError(e.what());
            }
            plan = planner.evaluate(schedule, budget);
            if (!plan.fits)
                plan.min_budget_bytes = planner.minimumBudget();
        } else if (budget >= 0) {
            plan = planner.plan(budget);
        } else {
            plan = planner.evaluate(core::Schedule::storeAll(L));
        }
        return plan;
    }

    void printPlan(const core::MemoryPlan &plan) const
    {
        char line[256];
        std::snprintf(line, sizeof line, "%s, batch %lld, %s, %d stages, %d thread(s)",
                      model->spec().name().c_str(), (long long)batch,
                      model->sampleShape().toString().c_str(), L, cli.threads());
        cli.message(line);
        cli.message("schedule " + plan.schedule.name() + ": " +
                    std::to_string(plan.schedule.forwardCount()) + " stage forwards for " +
                    std::to_string(L) + " stages, predicted recompute factor " +
                    factorText(plan.predicted_recompute_factor) +
                    (profile ? " (measured stage times)" : " (FLOPs)"));
        std::string mem =
            "predicted peak " + core::NumberText::bytes(plan.predicted_peak_bytes) + ":";
        for (int i = 0; i < core::kMemoryCategoryCount; ++i) {
            mem.append(i ? ", " : " ").append(core::memoryCategoryName(core::MemoryCategory(i)));
            mem.append(" ").append(
                core::NumberText::bytes(plan.predicted.peak_bytes[std::size_t(i)]));
        }
        cli.message(mem);
        if (overhead >= 0)
            cli.message(
                "the process's own growth over a step beyond the engine's tensors (measured "
                "on this model): " +
                core::NumberText::bytes(overhead) + ", within the budget");
        else if (budget >= 0)
            cli.message("the budget is the engine's tensors' here: the process's own overhead is "
                        "measured with --run");
        if (budget >= 0) {
            if (plan.fits) {
                cli.message("fits the budget of " + core::NumberText::bytes(budget));
            } else {
                std::string msg = "nothing fits " + core::NumberText::bytes(budget) + " at batch " +
                                  std::to_string(batch) + ": the smallest budget that fits is " +
                                  core::NumberText::bytes(plan.min_budget_bytes);
                if (plan.max_batch > 0)
                    msg += "; batch " + std::to_string(plan.max_batch) + " fits this budget";
                else if (scheduleText.empty() || scheduleText == "optimal")
                    msg += "; no batch size fits this budget";
                cli.message(msg);
            }
        }
    }

    /** --sweep: the curve of peak memory against recompute factor. */
    std::vector<core::MemoryPlan> printSweep() const
    {
        char line[256];
        std::vector<core::MemoryPlan> curve;
        curve = planner.sweep();
        cli.message("  peak memory      recompute  schedule");
        for (const auto &p : curve) {
            std::snprintf(line, sizeof line, "  %12s   %9s  %s",
                          core::NumberText::bytes(p.predicted_peak_bytes).c_str(),
                          factorText(p.predicted_recompute_factor).c_str(),
                          p.schedule.name().c_str());
            cli.message(line);
        }
        return curve;
    }

    /** --run: real steps on the plan's schedule, timed against store-all where that fits;
     *  nothing when the user stopped it. */
    std::optional<Measurement> measure(const core::MemoryPlan &plan) const
    {
        char line[256];
        core::process_memory::giveBackFreePages(); // the planner's tables: not a step's memory
        CliContext::installStopHandler();
        core::Tensor x(model->batchShape(batch), core::MemoryCategory::Activations);
        core::Rng rng(1);
        for (std::int64_t i = 0; i < x.numel(); ++i)
            x.data()[i] = rng.uniform(-1.0f, 1.0f);
        // A detector's labels stay all zero: frames without objects (the step costs the same).
        const int labelWidth = model->spec().labelWidth();
        std::vector<std::int32_t> labels(static_cast<std::size_t>(batch) * std::size_t(labelWidth));
        for (auto &l : labels)
            if (labelWidth == 1)
                l = std::int32_t(rng.below(std::uint64_t(model->classCount())));
        core::SgdOptions sgdOptions;
        core::Sgd sgd(*model, sgdOptions);
        core::PassContext ctx;
        auto step = [&](const core::Schedule &s) {
            const auto t0 = std::chrono::steady_clock::now();
            model->forwardBackward(x, labels.data(), ctx, &s);
            sgd.step(0.01);
            ++ctx.step;
            return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        };
        Measurement m;
        step(plan.schedule); // warm-up: oneDNN JIT, allocator
        auto &acc = core::MemoryAccountant::global();
        acc.resetPeaks();
        core::process_memory::resetPeak();
        std::vector<double> times;
        for (int i = 0; i < steps && !CliContext::stopFlag()->load(); ++i) {
            times.push_back(step(plan.schedule));
            cli.progress("measuring step " + std::to_string(i + 1) + "/" + std::to_string(steps));
        }
        cli.progressDone();
        m.peak_bytes = acc.peakTotalBytes();
        // Peak RSS growth without the code pages the run touched for the first time (the
        // budget covers data, not libraries): file-backed pages stay resident once touched.
        const std::int64_t hwm = core::process_memory::peakResidentBytes();
        const std::int64_t fileGrowth = core::process_memory::fileResidentBytes() - fileBaseline;
        m.rss_bytes = hwm > 0 && rssBaseline > 0
                          ? hwm - rssBaseline - std::max<std::int64_t>(0, fileGrowth)
                          : -1;
        m.step_seconds = median(times);
        // Time factor against store-all, alternating, if store-all fits in the memory this
        // process may still take (the machine's, or its cgroup's where that is less).
        const core::MemoryPlan all = planner.evaluate(core::Schedule::storeAll(L));
        const std::int64_t memAvailable = core::process_memory::availableBytes();
        if (plan.schedule.name() == "store-all") {
            m.store_all_step_seconds = m.step_seconds;
        } else if (memAvailable > 0 && all.predicted_peak_bytes < memAvailable / 2) {
            const core::Schedule storeAll = core::Schedule::storeAll(L);
            core::BufferPool::instance().setLimit(-1);
            step(storeAll);
            core::BufferPool::instance().setLimit(budget - std::max<std::int64_t>(0, overhead));
            std::vector<double> a, b;
            auto &pool = core::BufferPool::instance();
            const std::int64_t limit = pool.limit();
            for (int i = 0; i < steps && !CliContext::stopFlag()->load(); ++i) {
                a.push_back(step(plan.schedule));
                pool.setLimit(-1); // store-all exceeds the budget: time it without the limit
                b.push_back(step(storeAll));
                pool.setLimit(limit);
                cli.progress("timing against store-all " + std::to_string(i + 1) + "/" +
                             std::to_string(steps));
            }
            cli.progressDone();
            m.step_seconds = median(a);
            m.store_all_step_seconds = median(b);
        }
        if (CliContext::stopFlag()->load())
            return std::nullopt;
        std::snprintf(
            line, sizeof line,
            "measured: peak %s (engine), %s (process anonymous RSS growth), step %.1f ms%s",
            core::NumberText::bytes(m.peak_bytes).c_str(),
            m.rss_bytes >= 0 ? core::NumberText::bytes(m.rss_bytes).c_str() : "n/a",
            1e3 * m.step_seconds,
            m.store_all_step_seconds > 0
                ? (", time factor " + factorText(m.step_seconds / m.store_all_step_seconds)).c_str()
                : " (store-all too large to time here)");
        cli.message(line);
        return m;
    }

    core::Json resultJson(const core::MemoryPlan &plan, const std::optional<Measurement> &measured,
                          const std::vector<core::MemoryPlan> &curve) const
    {
        core::Json json;
        json.set("command", "memory").set("model", model->spec().name()).set("batch", batch);
        core::Json input = core::Json::array();
        for (auto d : model->sampleShape().dims())
            input.push(d);
        json.set("input", std::move(input)).set("threads", cli.threads()).set("stages", L);
        json.set("schedule", plan.schedule.name()).set("forwards", plan.schedule.forwardCount());
        json.set("budget_bytes", budget >= 0 ? core::Json(budget) : core::Json());
        json.set("fits", plan.fits);
        json.set("predicted_peak_bytes", plan.predicted_peak_bytes);
        json.set("process_overhead_bytes", overhead >= 0 ? core::Json(overhead) : core::Json());
        json.set("predicted_process_bytes",
                 plan.predicted_peak_bytes + std::max<std::int64_t>(0, overhead));
        json.set("predicted_peak_bytes_by_category", CliContext::memoryJson(plan.predicted));
        json.set("predicted_recompute_factor", plan.predicted_recompute_factor);
        json.set("cost_model", profile ? "measured" : "flops");
        if (!plan.fits) {
            json.set("min_budget_bytes", plan.min_budget_bytes);
            json.set("max_batch", plan.max_batch);
        }
        if (measured) {
            json.set("measured_peak_bytes", measured->peak_bytes);
            json.set("measured_rss_bytes",
                     measured->rss_bytes >= 0 ? core::Json(measured->rss_bytes) : core::Json());
            // What the process held before the model (code, libraries, the runtime): the part of
            // a device's memory the budget does not cover.
            json.set("baseline_rss_bytes",
                     rssBaseline >= 0 ? core::Json(rssBaseline) : core::Json());
            json.set("measured_step_seconds", measured->step_seconds);
            json.set("measured_time_factor",
                     measured->store_all_step_seconds > 0
                         ? core::Json(measured->step_seconds / measured->store_all_step_seconds)
                         : core::Json());
        }
        if (!curve.empty()) {
            core::Json sweep = core::Json::array();
            for (const auto &p : curve)
                sweep.push(planJson(p));
            json.set("sweep", std::move(sweep));
        }
        return json;
    }
};

} // namespace

int MemoryCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("memory"),
                   QStringLiteral("Plan activation checkpointing for a memory budget: the "
                                  "schedule, the predicted peak memory by category and the "
                                  "recompute factor; with --run, measured on real steps."),
                   arguments);
    cli.addOption("model", "Zoo model or ModelSpec .json file.", "M", "resnet56");
    cli.addOption("input", "Sample shape CxHxW (default: the model's own).", "CxHxW");
    cli.addOption("batch", "Mini-batch size.", "B", "32");
    cli.addOption("budget",
                  "Memory for one training step, e.g. 300MiB: picks the cheapest "
                  "schedule that fits.",
                  "SIZE");
    cli.addOption("schedule", "store-all, sequential:K, revolve:C or optimal (needs --budget).",
                  "S");
    cli.addOption("run", "Also run real training steps and measure peak memory and time.");
    cli.addOption("steps", "Steps for --run.", "N", "4");
    cli.addOption("profile", "Plan with measured stage times instead of FLOP counts.");
    cli.addOption("sweep", "Print the curve of peak memory against recompute factor.");
    addTilingOptions(cli);
    if (!cli.parse())
        return ExitSuccess;
    const std::int64_t batch = cli.integer("batch", 1, 65536);
    const int steps = int(cli.integer("steps", 1, 1000));
    const std::int64_t budget = cli.byteSize("budget");
    // Under a budget the buffer pool keeps freed blocks only while the engine's bytes in use
    // plus the kept ones stay within it: the process stays near the budget.
    if (budget >= 0)
        core::BufferPool::instance().setLimit(budget);
    const std::string scheduleText = cli.text("schedule");
    if (scheduleText == "optimal" && budget < 0)
        throw UsageError("--schedule optimal needs --budget");
    const bool run = cli.isSet("run"), profile = cli.isSet("profile");
    const core::ModelSpec spec = cli.modelSpec();

    const std::int64_t rssBaseline = core::process_memory::residentBytes();
    const std::int64_t fileBaseline = core::process_memory::fileResidentBytes();
    // Planning alone needs no weights: build the model with virtual tensors (fast for
    // ResNet-152), real ones only when steps will run or be timed.
    std::optional<core::MemorySimulation> virtualWeights;
    if (!run && !profile)
        virtualWeights.emplace();
    auto model = std::make_unique<core::Model>(spec, 0);
    const TilingRequest tiling = tilingRequest(cli);
    std::optional<core::TiledPlan> tiled;
    if (tiling.requested) {
        cli.progress("weighing tile grids and groups");
        try {
            tiled = core::planTiling(*model, batch, budget, tiling.stages, tiling.grid);
        } catch (const core::SpecError &e) {
            throw UsageError(std::string("--tiles: ") + e.what());
        }
        cli.progressDone();
        cli.message(tilingText(*tiled));
    }
    const int L = int(model->stageCount());

    core::MemoryPlanner planner(*model, batch);
    if (profile)
        planner.measureTimes(3);
    // With real steps the budget is the process's: what a step grows the process by beyond the
    // engine's tensors is measured on this model and left out of the engine's share.
    std::int64_t overhead = -1;
    if (run && budget >= 0) {
        cli.progress("measuring the process's overhead");
        overhead = core::fitProcessBudget(*model, batch, budget).measured_overhead_bytes;
        cli.progressDone();
        planner.setProcessOverhead(overhead);
    }
    MemoryRun m{cli, model.get(), planner,      batch,   budget,      overhead,
                L,   steps,       scheduleText, profile, rssBaseline, fileBaseline};
    const core::MemoryPlan plan = m.choosePlan();
    m.printPlan(plan);
    const std::vector<core::MemoryPlan> curve =
        cli.isSet("sweep") ? m.printSweep() : std::vector<core::MemoryPlan>{};
    std::optional<Measurement> measured;
    if (run) {
        measured = m.measure(plan);
        if (!measured) {
            cli.message("cancelled");
            return ExitFailure;
        }
    }
    if (cli.json()) {
        core::Json json = m.resultJson(plan, measured, curve);
        if (tiled)
            setTilingJson(json, *tiled);
        cli.printJson(json);
    }
    return plan.fits || budget < 0 ? ExitSuccess : ExitFailure;
}

} // namespace edgetrain::app

#include "traincommand.h"

#include "clicontext.h"
#include "clusterplan.h"
#include "clustertrain.h"
#include "core/bufferpool.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/memoryplanner.h"
#include "core/numbertext.h"
#include "core/processmemory.h"
#include "core/safetensors.h"
#include "core/trainer.h"
#include "core/weightaverage.h"
#include "core/zoo.h"
#include "tilingoptions.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>

namespace edgetrain::app {

namespace {

/** What `train` has parsed besides the model, for this machine or for the nodes. */
struct TrainSettings
{
    core::TrainOptions options;
    double average_decay = 0.0; // the weights' moving average; 0: none
    std::int64_t train_limit = 0;
    std::int64_t test_limit = 0;
    std::string dataset;
    std::string save_path;
    std::int64_t budget_bytes = -1; // -1: none
};

QString commandDescription(bool planOnly)
{
    return planOnly
               ? QStringLiteral("Profile a training job on edgetrain-node devices (--nodes or "
                                "--discover): measure each node's compute, memory, power and link, "
                                "predict the time, power, energy and EDP of every cluster of them "
                                "and mode, and rank them by --objective. Trains nothing.")
               : QStringLiteral("Train a model on this machine, or across edgetrain-node devices "
                                "(--nodes or --discover), and report loss, accuracy and "
                                "throughput per epoch.");
}

/** The model, data, optimizer and memory options; then the cluster's and the planner's. */
void addTrainOptions(CliContext &cli, bool planOnly)
{
    cli.addOption("model", "Zoo model (lenet5, mlp, resnet20, ...) or a ModelSpec .json file.", "M",
                  "lenet5");
    cli.addOption("input",
                  "Train the model at this sample shape CxHxW (a CIFAR ResNet on Fashion-MNIST: "
                  "1x28x28; default: the model's own).",
                  "CxHxW");
    cli.addOption("dataset", "Dataset: fashion-mnist.", "NAME", "fashion-mnist");
    cli.addOption("data-dir", "Folder with the dataset files.", "DIR",
                  core::FashionMnist::kDefaultDirectory);
    cli.addOption("epochs", "Epochs.", "N", "1");
    cli.addOption("batch", "Mini-batch size.", "B", "64");
    cli.addOption("lr", "Learning rate.", "X", "0.05");
    cli.addOption("momentum", "SGD momentum.", "X", "0.9");
    cli.addOption("weight-decay", "L2 weight decay.", "X", "0");
    cli.addOption("schedule", "Learning-rate schedule: constant, cosine or step:EPOCHS[:GAMMA].",
                  "S", "constant");
    cli.addOption("seed", "Seed for weights, shuffling and dropout.", "N", "0");
    cli.addOption("average",
                  "Decay of a moving average of the weights over the steps, which the test "
                  "figures and the saved weights are of (0: none; 0.99: about the last 100 "
                  "steps). Across nodes in every mode; async: the parameter server keeps it.",
                  "D", "0");
    cli.addOption("train-limit", "Use only the first N training samples (0: all).", "N", "0");
    cli.addOption("test-limit", "Use only the first N test samples (0: all).", "N", "0");
    cli.addOption("save", "Write the trained weights (safetensors) to this file.", "FILE");
    cli.addOption("budget",
                  "Train within this much memory per step (e.g. 300MiB): activations "
                  "are checkpointed as the memory planner decides.",
                  "SIZE");
    addClusterOptions(cli);
    addPlanOptions(cli, planOnly);
}

/** The parsed options, checked in the order they are listed. Throws UsageError. */
TrainSettings trainSettings(const CliContext &cli)
{
    TrainSettings t;
    core::TrainOptions &options = t.options;
    options.epochs = int(cli.integer("epochs", 1, 100000));
    options.batch = cli.integer("batch", 1, 65536);
    options.lr = cli.number("lr", 1e-9, 100.0);
    options.sgd.momentum = cli.number("momentum", 0.0, 0.999);
    options.sgd.weight_decay = cli.number("weight-decay", 0.0, 1.0);
    options.seed = std::uint64_t(cli.integer("seed", 0, std::int64_t(1) << 53));
    try {
        options.schedule = core::LrSchedule::parse(cli.text("schedule"));
    } catch (const core::SpecError &e) {
        throw UsageError(e.what());
    }
    t.average_decay = cli.number("average", 0.0, 0.9999);
    t.train_limit = cli.integer("train-limit", 0, std::int64_t(1) << 40);
    t.test_limit = cli.integer("test-limit", 0, std::int64_t(1) << 40);
    t.dataset = cli.text("dataset");
    t.save_path = cli.text("save");
    t.budget_bytes = cli.byteSize("budget");
    return t;
}

ClusterTrainSettings clusterSettings(const CliContext &cli, const TrainSettings &t, bool planOnly)
{
    ClusterTrainSettings settings;
    settings.spec = cli.modelSpec();
    settings.options = t.options;
    settings.dataset = t.dataset;
    settings.data_dir = cli.text("data-dir");
    settings.train_limit = t.train_limit;
    settings.test_limit = t.test_limit;
    settings.budget_bytes = t.budget_bytes;
    settings.average_decay = t.average_decay;
    settings.save_path = t.save_path;
    settings.plan_only = planOnly;
    return settings;
}

/** Fits a step of `model` into --budget: the memory planner's schedule into `options`, or
 *  core::Error when nothing fits. */
void fitBudget(CliContext &cli, core::Model &model, std::int64_t budget,
               core::TrainOptions &options)
{
    // The budget is the process's: a step's own growth beyond the engine's tensors is
    // measured on this model and left out of the engine's share.
    const core::ProcessBudgetPlan fit = core::fitProcessBudget(model, options.batch, budget);
    const core::MemoryPlan &plan = fit.plan;
    if (!plan.fits)
        throw core::Error("nothing fits " + core::NumberText::bytes(budget) + " at batch " +
                          std::to_string(options.batch) + ": the smallest budget that fits is " +
                          core::NumberText::bytes(plan.min_budget_bytes) +
                          (plan.max_batch > 0
                               ? "; batch " + std::to_string(plan.max_batch) + " fits"
                               : std::string()));
    cli.message("memory budget " + core::NumberText::bytes(budget) + ": schedule " +
                plan.schedule.name() + ", predicted peak " +
                core::NumberText::bytes(plan.predicted_peak_bytes) +
                ", predicted recompute factor " +
                std::to_string(plan.predicted_recompute_factor).substr(0, 5) +
                (fit.measured_overhead_bytes >= 0
                     ? ", the process's own overhead " +
                           core::NumberText::bytes(fit.measured_overhead_bytes) + " (measured)"
                     : std::string()));
    if (plan.schedule.name() != "store-all")
        options.checkpointing = plan.schedule;
    options.eval_batch = options.batch; // evaluation stays within the budget as well
}

/** Prints the batches' progress (at most twice a second) and each epoch's figures. The
 *  callbacks refer to `cli` and `options`, which must outlive them. */
core::Trainer::Callbacks progressPrinter(CliContext &cli, const core::TrainOptions &options)
{
    auto lastPrint =
        std::make_shared<std::chrono::steady_clock::time_point>(std::chrono::steady_clock::now());
    auto epochStart = std::make_shared<std::chrono::steady_clock::time_point>(*lastPrint);
    core::Trainer::Callbacks callbacks;
    callbacks.onBatch = [&cli, &options, lastPrint, epochStart](const core::BatchProgress &p) {
        const auto now = std::chrono::steady_clock::now();
        if (p.batch == 1)
            *epochStart = now;
        if (now - *lastPrint < std::chrono::milliseconds(500) && p.batch != p.batches)
            return;
        *lastPrint = now;
        const double seconds = std::chrono::duration<double>(now - *epochStart).count();
        char line[160];
        std::snprintf(
            line, sizeof line, "epoch %d/%d  %3d%%  batch %lld/%lld  loss %.4f  %s img/s", p.epoch,
            options.epochs, int(100 * p.batch / p.batches), (long long)p.batch,
            (long long)p.batches, p.loss,
            groupDigits(seconds > 0 ? double(p.batch * options.batch) / seconds : 0).c_str());
        cli.progress(line);
    };
    callbacks.onEpoch = [&cli, &options](const core::EpochStats &e) {
        cli.progressDone();
        char line[200];
        std::snprintf(
            line, sizeof line,
            "epoch %d/%d: train loss %.4f, train accuracy %s, test accuracy %s, %s img/s, "
            "%.1f s",
            e.epoch, options.epochs, e.train_loss, formatPercent(e.train_accuracy).c_str(),
            e.test_accuracy < 0 ? "n/a" : formatPercent(e.test_accuracy).c_str(),
            groupDigits(e.images_per_second).c_str(), e.train_seconds);
        cli.message(line);
    };
    return callbacks;
}

/** The local run's JSON: the job, the data, each epoch, the last figures and the memory. */
core::Json localJson(const CliContext &cli, core::Model &model, const TrainSettings &t,
                     const core::TrainOptions &options, std::int64_t trainSamples,
                     std::int64_t testSamples, const core::TrainResult &result)
{
    core::Json json;
    json.set("command", "train").set("model", model.spec().name()).set("dataset", t.dataset);
    json.set("parameters", model.parameterCount()).set("batch", options.batch);
    json.set("lr", options.lr).set("schedule", options.schedule.toString());
    json.set("average_decay", t.average_decay);
    json.set("threads", cli.threads())
        .set("gemm", std::string(core::gemmBackendName(core::gemmBackend())));
    json.set("train_samples", trainSamples).set("test_samples", testSamples);
    core::Json epochs = core::Json::array();
    for (const auto &e : result.epochs) {
        core::Json j;
        j.set("epoch", e.epoch)
            .set("train_loss", e.train_loss)
            .set("train_accuracy", e.train_accuracy);
        j.set("test_loss", e.test_loss).set("test_accuracy", e.test_accuracy);
        j.set("images_per_second", e.images_per_second).set("train_seconds", e.train_seconds);
        epochs.push(std::move(j));
    }
    json.set("epochs", std::move(epochs));
    if (!result.epochs.empty()) {
        const auto &last = result.epochs.back();
        json.set("train_loss", last.train_loss).set("train_accuracy", last.train_accuracy);
        json.set("test_loss", last.test_loss).set("test_accuracy", last.test_accuracy);
    }
    json.set("images_per_second",
             result.train_seconds > 0 ? double(result.images) / result.train_seconds : 0.0);
    json.set("train_seconds", result.train_seconds);
    json.set("peak_bytes", result.memory.peak_total_bytes);
    json.set("peak_bytes_by_category", CliContext::memoryJson(result.memory));
    json.set("cancelled", result.cancelled);
    json.set("checkpointing",
             options.checkpointing ? options.checkpointing->name() : std::string("store-all"));
    if (t.budget_bytes >= 0)
        json.set("budget_bytes", t.budget_bytes);
    if (!t.save_path.empty())
        json.set("weights", t.save_path);
    return json;
}

/** `train` on this machine: loads the data, trains, saves and reports; returns the exit
 *  status. */
int trainLocally(CliContext &cli, const TrainSettings &t)
{
    core::TrainOptions options = t.options;
    const std::int64_t budget = t.budget_bytes;
    if (budget >= 0)
        core::BufferPool::instance().setLimit(budget); // kept blocks stay within it too
    core::Model model(cli.modelSpec(), options.seed);
    try {
        const core::Model::Tiling tiling =
            resolveTiling(model.spec(), options.batch, budget, tilingRequest(cli));
        model.setTiling(tiling.stages, tiling.rows, tiling.cols);
        if (tiling.active())
            cli.message("the first " + std::to_string(tiling.stages) + " stages run on " +
                        std::to_string(tiling.rows) + "x" + std::to_string(tiling.cols) + " tiles");
    } catch (const core::SpecError &e) {
        throw UsageError(std::string("--tiles: ") + e.what());
    }
    if (budget >= 0)
        fitBudget(cli, model, budget, options);
    cli.message("loading " + t.dataset + " from " + cli.text("data-dir"));
    const core::TensorDataset train = loadNamedDataset(
        t.dataset, cli.text("data-dir"), core::FashionMnist::Split::Train, t.train_limit);
    const core::TensorDataset test = loadNamedDataset(
        t.dataset, cli.text("data-dir"), core::FashionMnist::Split::Test, t.test_limit);
    cli.message("training " + model.spec().name() + " (" +
                groupDigits(double(model.parameterCount())) + " parameters) on " +
                groupDigits(double(train.size())) + " samples, batch " +
                std::to_string(options.batch) + ", " + std::to_string(cli.threads()) +
                " thread(s), GEMM " + std::string(core::gemmBackendName(core::gemmBackend())));

    std::optional<core::WeightAverage> average;
    if (t.average_decay > 0) {
        average.emplace(t.average_decay);
        options.average = &*average;
    }
    CliContext::installStopHandler();
    const core::TrainResult result = core::Trainer::run(
        model, train, &test, options, progressPrinter(cli, options), CliContext::stopFlag());
    cli.progressDone();

    if (average)
        average->copyTo(model); // what the test figures were of
    if (!t.save_path.empty() && (!result.epochs.empty() || !result.cancelled)) {
        core::Safetensors::saveModel(model, t.save_path);
        cli.message((result.cancelled ? "weights so far saved to " : "weights saved to ") +
                    t.save_path);
    }

    const core::Json json = localJson(cli, model, t, options, train.size(), test.size(), result);
    cli.message("peak engine memory " + core::NumberText::bytes(result.memory.peak_total_bytes));
    if (cli.json())
        cli.printJson(json);
    if (result.cancelled) {
        cli.message("cancelled");
        return ExitFailure;
    }
    return ExitSuccess;
}

} // namespace

int TrainCommand::run(const QStringList &arguments, Purpose purpose)
{
    const bool planOnly = purpose == Purpose::Plan;
    CliContext cli(planOnly ? QStringLiteral("plan") : QStringLiteral("train"),
                   commandDescription(planOnly), arguments);
    addTrainOptions(cli, planOnly);
    if (!cli.parse())
        return ExitSuccess;
    if (planOnly && !wantsCluster(cli))
        throw UsageError("plan needs the nodes: --nodes HOST:PORT,... or --discover N");

    const TrainSettings settings = trainSettings(cli);
    if (!planOnly && cli.isSet("auto-cluster") && !wantsCluster(cli))
        throw UsageError("--auto-cluster chooses among nodes: add --nodes or --discover");
    if (wantsCluster(cli))
        return runClusterTraining(cli, clusterSettings(cli, settings, planOnly));
    return trainLocally(cli, settings);
}

} // namespace edgetrain::app

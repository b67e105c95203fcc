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

#include <chrono>
#include <cstdio>
#include <optional>

namespace edgetrain::app {

namespace {} // namespace

int TrainCommand::run(const QStringList &arguments, Purpose purpose)
{
    const bool planOnly = purpose == Purpose::Plan;
    CliContext cli(
        planOnly ? QStringLiteral("plan") : QStringLiteral("train"),
        planOnly
            ? QStringLiteral("Profile a training job on edgetrain-node devices (--nodes or "
                             "--discover): measure each node's compute, memory, power and link, "
                             "predict the time, power, energy and EDP of every cluster of them "
                             "and mode, and rank them by --objective. Trains nothing.")
            : QStringLiteral("Train a model on this machine, or across edgetrain-node devices "
                             "(--nodes or --discover), and report loss, accuracy and "
                             "throughput per epoch."),
        arguments);
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
    if (!cli.parse())
        return ExitSuccess;
    if (planOnly && !wantsCluster(cli))
        throw UsageError("plan needs the nodes: --nodes HOST:PORT,... or --discover N");

    core::TrainOptions options;
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
    const double averageDecay = cli.number("average", 0.0, 0.9999);
    const std::int64_t trainLimit = cli.integer("train-limit", 0, std::int64_t(1) << 40);
    const std::int64_t testLimit = cli.integer("test-limit", 0, std::int64_t(1) << 40);
    const std::string modelName = cli.text("model");
    const std::string datasetName = cli.text("dataset");
    const std::string savePath = cli.text("save");

    const std::int64_t budget = cli.byteSize("budget");
    if (!planOnly && cli.isSet("auto-cluster") && !wantsCluster(cli))
        throw UsageError("--auto-cluster chooses among nodes: add --nodes or --discover");
    if (wantsCluster(cli)) {
        ClusterTrainSettings settings;
        settings.spec = cli.modelSpec();
        settings.options = options;
        settings.dataset = datasetName;
        settings.data_dir = cli.text("data-dir");
        settings.train_limit = trainLimit;
        settings.test_limit = testLimit;
        settings.budget_bytes = budget;
        settings.average_decay = averageDecay;
        settings.save_path = savePath;
        settings.plan_only = planOnly;
        return runClusterTraining(cli, settings);
    }
    if (budget >= 0)
        core::BufferPool::instance().setLimit(budget); // kept blocks stay within it too
    core::Model model(cli.modelSpec(), options.seed);
    if (budget >= 0) {
        // The budget is the process's: a step's own growth beyond the engine's tensors is
        // measured on this model and left out of the engine's share.
        const core::ProcessBudgetPlan fit = core::fitProcessBudget(model, options.batch, budget);
        const core::MemoryPlan &plan = fit.plan;
        if (!plan.fits)
            throw core::Error(
                "nothing fits " + core::NumberText::bytes(budget) + " at batch " +
                std::to_string(options.batch) + ": the smallest budget that fits is " +
                core::NumberText::bytes(plan.min_budget_bytes) +
                (plan.max_batch > 0 ? "; batch " + std::to_string(plan.max_batch) + " fits"
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
    cli.message("loading " + datasetName + " from " + cli.text("data-dir"));
    const core::TensorDataset train = loadNamedDataset(
        datasetName, cli.text("data-dir"), core::FashionMnist::Split::Train, trainLimit);
    const core::TensorDataset test = loadNamedDataset(datasetName, cli.text("data-dir"),
                                                      core::FashionMnist::Split::Test, testLimit);
    cli.message("training " + model.spec().name() + " (" +
                groupDigits(double(model.parameterCount())) + " parameters) on " +
                groupDigits(double(train.size())) + " samples, batch " +
                std::to_string(options.batch) + ", " + std::to_string(cli.threads()) +
                " thread(s), GEMM " + std::string(core::gemmBackendName(core::gemmBackend())));

    std::optional<core::WeightAverage> average;
    if (averageDecay > 0) {
        average.emplace(averageDecay);
        options.average = &*average;
    }
    CliContext::installStopHandler();
    auto lastPrint = std::chrono::steady_clock::now();
    auto epochStart = lastPrint;
    core::Trainer::Callbacks callbacks;
    callbacks.onBatch = [&](const core::BatchProgress &p) {
        const auto now = std::chrono::steady_clock::now();
        if (p.batch == 1)
            epochStart = now;
        if (now - lastPrint < std::chrono::milliseconds(500) && p.batch != p.batches)
            return;
        lastPrint = now;
        const double seconds = std::chrono::duration<double>(now - epochStart).count();
        char line[160];
        std::snprintf(
            line, sizeof line, "epoch %d/%d  %3d%%  batch %lld/%lld  loss %.4f  %s img/s", p.epoch,
            options.epochs, int(100 * p.batch / p.batches), (long long)p.batch,
            (long long)p.batches, p.loss,
            groupDigits(seconds > 0 ? double(p.batch * options.batch) / seconds : 0).c_str());
        cli.progress(line);
    };
    callbacks.onEpoch = [&](const core::EpochStats &e) {
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
    const core::TrainResult result =
        core::Trainer::run(model, train, &test, options, callbacks, CliContext::stopFlag());
    cli.progressDone();

    if (average)
        average->copyTo(model); // what the test figures were of
    if (!savePath.empty() && (!result.epochs.empty() || !result.cancelled)) {
        core::Safetensors::saveModel(model, savePath);
        cli.message((result.cancelled ? "weights so far saved to " : "weights saved to ") +
                    savePath);
    }

    core::Json json;
    json.set("command", "train").set("model", model.spec().name()).set("dataset", datasetName);
    json.set("parameters", model.parameterCount()).set("batch", options.batch);
    json.set("lr", options.lr).set("schedule", options.schedule.toString());
    json.set("average_decay", averageDecay);
    json.set("threads", cli.threads())
        .set("gemm", std::string(core::gemmBackendName(core::gemmBackend())));
    json.set("train_samples", train.size()).set("test_samples", test.size());
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
    if (budget >= 0)
        json.set("budget_bytes", budget);
    if (!savePath.empty())
        json.set("weights", savePath);
    cli.message("peak engine memory " + core::NumberText::bytes(result.memory.peak_total_bytes));
    if (cli.json())
        cli.printJson(json);
    if (result.cancelled) {
        cli.message("cancelled");
        return ExitFailure;
    }
    return ExitSuccess;
}

} // namespace edgetrain::app

#include "evaluatecommand.h"

#include "clicontext.h"
#include "core/safetensors.h"
#include "core/trainer.h"
#include "core/zoo.h"

#include <cstdio>

namespace edgetrain::app {

int EvaluateCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("evaluate"),
                   QStringLiteral("Evaluate saved weights on a dataset's test split."), arguments);
    cli.addOption("model", "Zoo model or ModelSpec .json file the weights belong to.", "M",
                  "lenet5");
    cli.addOption("weights", "Weights file (safetensors).", "FILE");
    cli.addOption("dataset", "Dataset: fashion-mnist.", "NAME", "fashion-mnist");
    cli.addOption("data-dir", "Folder with the dataset files.", "DIR",
                  core::FashionMnist::kDefaultDirectory);
    cli.addOption("batch", "Evaluation batch size.", "B", "500");
    cli.addOption("test-limit", "Use only the first N test samples (0: all).", "N", "0");
    if (!cli.parse())
        return ExitSuccess;
    if (!cli.isSet("weights"))
        throw UsageError("--weights FILE is required");
    const std::int64_t batch = cli.integer("batch", 1, 65536);
    const std::int64_t limit = cli.integer("test-limit", 0, std::int64_t(1) << 40);

    core::Model model(core::Zoo::resolve(cli.text("model")), 0);
    core::Safetensors::loadModel(model, cli.text("weights"));
    const core::TensorDataset test = loadNamedDataset(cli.text("dataset"), cli.text("data-dir"),
                                                      core::FashionMnist::Split::Test, limit);
    CliContext::installStopHandler();
    const core::EvalResult r = core::Trainer::evaluate(model, test, batch, CliContext::stopFlag());
    if (CliContext::stopFlag()->load()) {
        cli.message("cancelled");
        return ExitFailure;
    }
    char line[160];
    std::snprintf(line, sizeof line, "%s on %s test (%lld samples): accuracy %.2f%%, loss %.4f",
                  model.spec().name().c_str(), cli.text("dataset").c_str(), (long long)r.count,
                  100.0 * r.accuracy, r.loss);
    cli.message(line);
    if (cli.json()) {
        core::Json json;
        json.set("command", "evaluate").set("model", model.spec().name());
        json.set("weights", cli.text("weights")).set("dataset", cli.text("dataset"));
        json.set("samples", r.count).set("test_accuracy", r.accuracy).set("test_loss", r.loss);
        cli.printJson(json);
    }
    return ExitSuccess;
}

} // namespace edgetrain::app

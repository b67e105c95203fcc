// edgetrain-cli: everything the app does, without a window, for scripts, tests and benchmarks.

#include "benchcommand.h"
#include "clicontext.h"
#include "core/error.h"
#include "core/json.h"
#include "deploycommand.h"
#include "detectcommand.h"
#include "evaluatecommand.h"
#include "exportcommand.h"
#include "keycommand.h"
#include "labcommand.h"
#include "labelcommand.h"
#include "memorycommand.h"
#include "nodescommand.h"
#include "pickcommand.h"
#include "studycommand.h"
#include "traincommand.h"
#include "truthcommand.h"
#include "visioncommands.h"

#include <QCoreApplication>
#include <QGuiApplication>

#include <clocale>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

using namespace edgetrain::app;

namespace {

void printUsage(FILE *out)
{
    std::fputs("Usage: edgetrain-cli <command> [options]   (edgetrain-cli <command> --help)\n\n"
               "Commands:\n"
               "  train      train a model on this machine or across nodes (Fashion-MNIST)\n"
               "  plan       profile nodes, predict every cluster's time/power/energy/EDP\n"
               "  evaluate   test accuracy of saved weights\n"
               "  bench      training-step throughput and peak memory; SGEMM GFLOP/s\n"
               "  memory     memory budget -> checkpointing schedule, predicted and measured\n"
               "  nodes      EdgeTrain nodes on the LAN (multicast) or at given addresses\n"
               "  monitor    live metrics of nodes (needs the cluster key)\n"
               "  label      teacher + tracker label propagation over a video\n"
               "  dataset    a labelled session's tracks to student crops, split by track\n"
               "  viewpoint  label, dataset, train the student, compare it with the teacher\n"
               "  detect     one detector (teacher, motion, a session's student) over a source\n"
               "  export     a session's trained student as ONNX or safetensors\n"
               "  deploy     run a session's student on nodes' cameras, their frames/s live\n"
               "  truth      import or export verified frames (MOT, COCO, CVAT, YOLO)\n"
               "  pick       frames to verify next: spread evenly, or where detectors disagree\n"
               "  lab        the edge lab: emulated devices (namespaces, tc, cgroups)\n"
               "  study      the papers' experiments on a lab: pi-cluster, cluster-choice\n"
               "  key        a new cluster key file, or a key file's fingerprint\n\n"
               "Exit status: 0 success, 1 runtime failure, 2 usage error.\n"
               "With --json the last line of stdout is one JSON object.\n",
               out);
}

/** The error on stderr as a person reads it and, with --json, as the command's one JSON line on
 *  stdout too: a script asking for JSON gets JSON whatever went wrong (a dead node's address,
 *  a missing file), with what and the exit status. Returns `status`. */
int reportError(const QString &command, const QStringList &args, int status,
                const std::string &what, bool usage)
{
    std::fprintf(stderr, "edgetrain-cli %s: %s%s\n", qPrintable(command),
                 usage ? "" : "error: ", what.c_str());
    if (args.contains(QLatin1String("--json"))) {
        edgetrain::core::Json json;
        json.set("command", command.toStdString()).set("error", what).set("exit_status", status);
        std::fprintf(stdout, "%s\n", json.dump().c_str());
        std::fflush(stdout);
    }
    return status;
}

} // namespace

int main(int argc, char **argv)
{
    std::unique_ptr<QCoreApplication> app;
    if (argc > 1 && std::strcmp(argv[1], "study") == 0) {
        // The study draws its charts and PDF (text needs Qt Gui's fonts): never onto a screen.
        qputenv("QT_QPA_PLATFORM", "offscreen");
        app = std::make_unique<QGuiApplication>(argc, argv);
    }
    if (!app)
        app = std::make_unique<QCoreApplication>(argc, argv);
    // Qt set the C locale from the environment: printed figures keep a decimal point under
    // every locale, as the files and --json do.
    std::setlocale(LC_NUMERIC, "C");
    QCoreApplication::setApplicationName(QStringLiteral("edgetrain-cli"));
    QCoreApplication::setApplicationVersion(QStringLiteral(EDGETRAIN_VERSION));
    QStringList args = QCoreApplication::arguments();
    args.removeFirst();
    if (args.isEmpty()) {
        printUsage(stderr);
        return ExitUsage;
    }
    const QString command = args.takeFirst();
    if (command == QLatin1String("--help") || command == QLatin1String("-h") ||
        command == QLatin1String("help")) {
        printUsage(stdout);
        return ExitSuccess;
    }
    if (command == QLatin1String("--version")) {
        std::printf("edgetrain-cli %s\n", EDGETRAIN_VERSION);
        return ExitSuccess;
    }
    try {
        if (command == QLatin1String("train"))
            return TrainCommand::run(args);
        if (command == QLatin1String("plan"))
            return TrainCommand::run(args, TrainCommand::Purpose::Plan);
        if (command == QLatin1String("evaluate"))
            return EvaluateCommand::run(args);
        if (command == QLatin1String("bench"))
            return BenchCommand::run(args);
        if (command == QLatin1String("memory"))
            return MemoryCommand::run(args);
        if (command == QLatin1String("nodes"))
            return NodesCommand::run(args);
        if (command == QLatin1String("monitor"))
            return MonitorCommand::run(args);
        if (command == QLatin1String("label"))
            return LabelCommand::run(args);
        if (command == QLatin1String("dataset"))
            return DatasetCommand::run(args);
        if (command == QLatin1String("viewpoint"))
            return ViewpointCommand::run(args);
        if (command == QLatin1String("detect"))
            return DetectCommand::run(args);
        if (command == QLatin1String("deploy"))
            return DeployCommand::run(args);
        if (command == QLatin1String("export"))
            return ExportCommand::run(args);
        if (command == QLatin1String("truth"))
            return TruthCommand::run(args);
        if (command == QLatin1String("pick"))
            return PickCommand::run(args);
        if (command == QLatin1String("lab"))
            return LabCommand::run(args);
        if (command == QLatin1String("study"))
            return StudyCommand::run(args);
        if (command == QLatin1String("key"))
            return KeyCommand::run(args);
        std::fprintf(stderr, "edgetrain-cli: unknown command '%s'\n\n", qPrintable(command));
        printUsage(stderr);
        return ExitUsage;
    } catch (const UsageError &e) {
        return reportError(command, args, ExitUsage, e.what(), true);
    } catch (const edgetrain::core::Error &e) {
        return reportError(command, args, ExitFailure, e.what(), false);
    } catch (const std::bad_alloc &) {
        return reportError(command, args, ExitFailure, "out of memory", false);
    } catch (const std::exception &e) { // a library's own (std::filesystem, OpenCV, ...)
        return reportError(command, args, ExitFailure, e.what(), false);
    } catch (...) {
        return reportError(command, args, ExitFailure, "an unknown exception", false);
    }
}

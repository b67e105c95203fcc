// edgetrain-node: the agent on each edge device. Announces itself, lets a controller that proves
// the cluster key in, streams the device's metrics and runs the training jobs it is sent.

#include "app/node/nodeconfig.h"
#include "core/bufferpool.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/memoryplanner.h"
#include "core/parallel.h"
#include "deploy/studentcamera.h"
#include "net/agent/nodeserver.h"
#include "net/planner/deviceprofiles.h"
#include "net/protocol/keyfile.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QHostInfo>
#include <QLoggingCategory>
#include <QSocketNotifier>
#include <QThread>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <exception>
#include <sys/socket.h>
#include <unistd.h>

using namespace edgetrain;

namespace {

int g_signalPipe[2] = {-1, -1};

extern "C" void onSignal(int)
{
    const char byte = 1;
    [[maybe_unused]] const auto n = ::write(g_signalPipe[1], &byte, 1); // async-signal-safe
}

void addOptions(QCommandLineParser &parser)
{
    parser.setApplicationDescription(QStringLiteral(
        "EdgeTrain node agent: announces this device on the LAN, accepts controllers that prove "
        "the cluster key, and streams CPU, memory and network metrics."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addOption(
        {QStringLiteral("config"),
         QStringLiteral("Read settings from FILE: `field = value` lines, a field for each of "
                        "--name, --port, --key-file, --threads, --memory-limit, --data-dir, "
                        "--discovery-port, --camera and --camera-rate, and multicast = yes|no. "
                        "Options on the command line win over the file."),
         QStringLiteral("FILE")});
    parser.addOption({QStringLiteral("name"), QStringLiteral("Node name (default: host name)."),
                      QStringLiteral("N")});
    parser.addOption(
        {QStringLiteral("port"),
         QStringLiteral("Control port (default %1; 0: any).").arg(app::NodeConfig::kDefaultPort),
         QStringLiteral("P")});
    parser.addOption({QStringLiteral("key-file"),
                      QStringLiteral("Cluster key file (not world-readable)."),
                      QStringLiteral("F")});
    parser.addOption({QStringLiteral("threads"),
                      QStringLiteral("Engine threads for training (default: %1, every core).")
                          .arg(QThread::idealThreadCount()),
                      QStringLiteral("T")});
    parser.addOption({QStringLiteral("memory-limit"),
                      QStringLiteral("Memory a training job may use, e.g. 900MiB."),
                      QStringLiteral("SIZE")});
    parser.addOption(
        {QStringLiteral("data-dir"),
         QStringLiteral(
             "Folder of the datasets this node has (default: /usr/share/datasets/fashion-mnist)."),
         QStringLiteral("D")});
    parser.addOption(
        {QStringLiteral("device-profile"),
         QStringLiteral("Say this device is the one in a device profile (a built-in id "
                        "such as pi3b, or a .json file): its cores, RAM, arch and "
                        "CPU. The edge lab starts its nodes with it."),
         QStringLiteral("P")});
    parser.addOption(
        {QStringLiteral("emulated"),
         QStringLiteral("The --device-profile is emulated on this machine (the edge lab starts "
                        "its nodes so): this machine's power sensors, CPU clock and temperature "
                        "are not the device's; its power is the profile's estimate.")});
    parser.addOption(
        {QStringLiteral("camera"),
         QStringLiteral("What a deployed student may run on: camera:N (a V4L2 camera), a video "
                        "FILE (looped at its own frame rate, as a camera) or a FOLDER of images. "
                        "Without it the node refuses deployments. Only the node chooses this; a "
                        "coordinator cannot make it open any other path."),
         QStringLiteral("camera:N|FILE|FOLDER")});
    parser.addOption(
        {QStringLiteral("camera-rate"),
         QStringLiteral("The frames/s a --camera FILE or FOLDER is read at (default: the file's "
                        "own rate); max: unpaced, every frame as fast as the student runs, for "
                        "measuring it. A camera:N ignores it."),
         QStringLiteral("max|FPS")});
    parser.addOption({QStringLiteral("discovery-port"),
                      QStringLiteral("UDP discovery port (default %1).").arg(net::kDiscoveryPort),
                      QStringLiteral("P")});
    parser.addOption({QStringLiteral("no-multicast"),
                      QStringLiteral("Send no multicast beacons (probes are still answered).")});
    parser.addOption(
        {QStringLiteral("print-port"),
         QStringLiteral("Print the control port on stdout once listening (for scripts).")});
    parser.addOption(
        {QStringLiteral("measure-gemm"),
         QStringLiteral("Measure the engine's GEMM rate as this process may run it (its cgroup "
                        "and --threads) for SECONDS of wall time, print GFLOP/s and exit (the "
                        "edge lab checks its CPU quotas with it)."),
         QStringLiteral("SECONDS")});
}

} // namespace

/** The program; main() is its boundary for errors nothing below handled. */
static int run(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("edgetrain-node"));
    QCoreApplication::setApplicationVersion(QStringLiteral(EDGETRAIN_VERSION));
    qSetMessagePattern(
        QStringLiteral("%{time yyyy-MM-ddThh:mm:ss.zzz} %{category} %{type}: %{message}"));

    QCommandLineParser parser;
    addOptions(parser);
    parser.process(app);

    // The config file first, then every option given: the command line wins.
    app::NodeConfig config;
    QString error;
    if (parser.isSet(QStringLiteral("config")) &&
        !config.readFile(parser.value(QStringLiteral("config")), &error)) {
        std::fprintf(stderr, "edgetrain-node: %s\n", qPrintable(error));
        return 2;
    }
    for (const QString &field : app::NodeConfig::fields()) {
        QString expected;
        if (parser.isSet(field) && !config.set(field, parser.value(field), &expected)) {
            std::fprintf(stderr, "edgetrain-node: --%s must be %s, got '%s'\n", qPrintable(field),
                         qPrintable(expected), qPrintable(parser.value(field)));
            return 2;
        }
    }
    if (parser.isSet(QStringLiteral("no-multicast")))
        config.options.multicast = false;
    if (parser.isSet(QStringLiteral("measure-gemm"))) {
        const double seconds = parser.value(QStringLiteral("measure-gemm")).toDouble();
        if (!(seconds > 0 && seconds <= 60)) {
            std::fprintf(stderr, "edgetrain-node: --measure-gemm: seconds from 0 to 60\n");
            return 2;
        }
        core::setDefaultThreadCount(config.threads);
        std::printf("%.3f\n",
                    core::measureGemmThroughput(256, std::chrono::duration<double>(seconds)));
        return 0;
    }
    net::NodeOptions options = config.options;
    if (!net::readKeyFile(config.key_file, &options.cluster_key, &error)) {
        std::fprintf(stderr, "edgetrain-node: %s\n", qPrintable(error));
        return 2;
    }
    // Compared with `edgetrain-cli key fingerprint` and the app's Nodes page, this line tells
    // whether this device holds the cluster's key (journalctl -u edgetrain-node).
    qCInfo(net::lcNode, "cluster key fingerprint %s (%s)",
           qPrintable(net::keyFingerprint(options.cluster_key)), qPrintable(config.key_file));
    if (options.name.isEmpty())
        options.name = QHostInfo::localHostName();
    if (parser.isSet(QStringLiteral("device-profile"))) {
        try {
            options.device_profile =
                net::DeviceProfiles::find(parser.value(QStringLiteral("device-profile")));
        } catch (const core::Error &e) {
            std::fprintf(stderr, "edgetrain-node: --device-profile: %s\n", e.what());
            return 2;
        }
    }
    if (parser.isSet(QStringLiteral("emulated"))) {
        if (!options.device_profile) {
            std::fprintf(stderr, "edgetrain-node: --emulated needs --device-profile (the device "
                                 "it emulates)\n");
            return 2;
        }
        options.emulated = true;
    }
    if (!config.camera.isEmpty()) {
        try {
            options.camera =
                std::make_shared<deploy::StudentCamera>(config.camera, config.camera_rate_fps);
        } catch (const std::exception &e) {
            std::fprintf(stderr, "edgetrain-node: --camera: %s\n", e.what());
            return 2;
        }
        qCInfo(net::lcNode, "deployed students run on %s%s", qPrintable(config.camera),
               std::isinf(config.camera_rate_fps) ? ", unpaced" : "");
    }
    core::setDefaultThreadCount(config.threads); // the training and inference threads take it up
    if (options.memory_limit >= 0) // tensor memory kept for reuse never takes it past the limit
        core::BufferPool::instance().setLimit(options.memory_limit);

    // SIGINT/SIGTERM end the event loop through a pipe: sessions close, sockets unbind.
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, g_signalPipe) != 0) {
        std::perror("edgetrain-node: socketpair");
        return 1;
    }
    QSocketNotifier notifier(g_signalPipe[0], QSocketNotifier::Read);
    QObject::connect(&notifier, &QSocketNotifier::activated, &app, [&] {
        char byte;
        [[maybe_unused]] const auto n = ::read(g_signalPipe[0], &byte, 1);
        qInfo("edgetrain-node: stopping");
        QCoreApplication::quit();
    });
    std::signal(SIGINT, onSignal);
    std::signal(SIGTERM, onSignal);

    net::NodeServer server(options);
    if (!server.start(&error)) {
        std::fprintf(stderr, "edgetrain-node: %s\n", qPrintable(error));
        return 1;
    }
    if (parser.isSet(QStringLiteral("print-port"))) {
        std::printf("%u\n", unsigned(server.info().control_port));
        std::fflush(stdout);
    }
    return QCoreApplication::exec();
}

int main(int argc, char **argv)
{
    // Every error ends here with its message and exit status 1, never an abort.
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "edgetrain-node: error: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "edgetrain-node: error: an unknown exception\n");
    }
    return 1;
}

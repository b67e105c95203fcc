// edgetrain-node: the agent on each edge device. Announces itself, lets a controller that proves
// the cluster key in, streams the device's metrics and runs the training jobs it is sent.

#include "core/bufferpool.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/memoryplanner.h"
#include "core/parallel.h"
#include "net/deviceprofiles.h"
#include "net/keyfile.h"
#include "net/nodeserver.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QHostInfo>
#include <QLoggingCategory>
#include <QSocketNotifier>
#include <QThread>

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
    parser.setApplicationDescription(QStringLiteral(
        "EdgeTrain node agent: announces this device on the LAN, accepts controllers that prove "
        "the cluster key, and streams CPU, memory and network metrics."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addOption({QStringLiteral("name"), QStringLiteral("Node name (default: host name)."),
                      QStringLiteral("N")});
    parser.addOption({QStringLiteral("port"),
                      QStringLiteral("Control port (default 47700; 0: any)."), QStringLiteral("P"),
                      QStringLiteral("47700")});
    parser.addOption({QStringLiteral("key-file"),
                      QStringLiteral("Cluster key file (not world-readable)."),
                      QStringLiteral("F")});
    parser.addOption({QStringLiteral("threads"), QStringLiteral("Engine threads for training."),
                      QStringLiteral("T"), QString::number(QThread::idealThreadCount())});
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
    parser.addOption({QStringLiteral("discovery-port"),
                      QStringLiteral("UDP discovery port (default %1).").arg(net::kDiscoveryPort),
                      QStringLiteral("P"), QString::number(net::kDiscoveryPort)});
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
    parser.process(app);

    bool ok = false;
    const uint port = parser.value(QStringLiteral("port")).toUInt(&ok);
    const uint discoveryPort = parser.value(QStringLiteral("discovery-port")).toUInt();
    const int threads = parser.value(QStringLiteral("threads")).toInt();
    if (!ok || port > 65535 || discoveryPort == 0 || discoveryPort > 65535 || threads < 1 ||
        threads > 256) {
        std::fprintf(stderr,
                     "edgetrain-node: --port, --discovery-port or --threads out of range\n");
        return 2;
    }
    if (parser.isSet(QStringLiteral("measure-gemm"))) {
        const double seconds = parser.value(QStringLiteral("measure-gemm")).toDouble();
        if (!(seconds > 0 && seconds <= 60)) {
            std::fprintf(stderr, "edgetrain-node: --measure-gemm: seconds from 0 to 60\n");
            return 2;
        }
        core::setDefaultThreadCount(threads);
        std::printf("%.3f\n",
                    core::measureGemmThroughput(256, std::chrono::duration<double>(seconds)));
        return 0;
    }
    net::NodeOptions options;
    QString error;
    if (!net::readKeyFile(parser.value(QStringLiteral("key-file")), &options.cluster_key, &error)) {
        std::fprintf(stderr, "edgetrain-node: %s\n", qPrintable(error));
        return 2;
    }
    // Compared with `edgetrain-cli key fingerprint` and the app's Nodes page, this line tells
    // whether this device holds the cluster's key (journalctl -u edgetrain-node).
    qCInfo(net::lcNode, "cluster key fingerprint %s (%s)",
           qPrintable(net::keyFingerprint(options.cluster_key)),
           qPrintable(parser.value(QStringLiteral("key-file"))));
    options.name = parser.isSet(QStringLiteral("name")) ? parser.value(QStringLiteral("name"))
                                                        : QHostInfo::localHostName();
    options.port = quint16(port);
    options.discovery_port = quint16(discoveryPort);
    options.multicast = !parser.isSet(QStringLiteral("no-multicast"));
    options.data_dir = parser.value(QStringLiteral("data-dir"));
    if (parser.isSet(QStringLiteral("device-profile"))) {
        try {
            options.device_profile =
                net::DeviceProfiles::find(parser.value(QStringLiteral("device-profile")));
        } catch (const core::Error &e) {
            std::fprintf(stderr, "edgetrain-node: --device-profile: %s\n", e.what());
            return 2;
        }
    }
    core::setDefaultThreadCount(threads); // the training thread takes it up
    if (parser.isSet(QStringLiteral("memory-limit"))) {
        try {
            // Tensor memory kept for reuse never takes the process past the limit.
            options.memory_limit =
                core::parseByteSize(parser.value(QStringLiteral("memory-limit")).toStdString());
            core::BufferPool::instance().setLimit(options.memory_limit);
        } catch (const core::SpecError &e) {
            std::fprintf(stderr, "edgetrain-node: --memory-limit: %s\n", e.what());
            return 2;
        }
    }

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

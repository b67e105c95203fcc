#include "labcommand.h"

#include "clicontext.h"
#include "core/numbertext.h"
#include "net/lab/edgelab.h"
#include "net/planner/deviceprofiles.h"

#include <QCoreApplication>
#include <QFileInfo>

#include <cstdio>

namespace edgetrain::app {

namespace {

QString defaultDir()
{
    return net::EdgeLab::defaultFolder();
}

double parseDelayMs(const std::string &text)
{
    std::string t = text;
    double scale = 1.0;
    if (t.ends_with("ms"))
        t.resize(t.size() - 2);
    else if (t.ends_with("us")) {
        t.resize(t.size() - 2);
        scale = 1e-3;
    } else if (t.ends_with("s")) {
        t.resize(t.size() - 1);
        scale = 1e3;
    }
    const auto value = core::NumberText::parse(t);
    if (!value || *value < 0 || *value * scale > 10000)
        throw UsageError("--delay: '" + text + "' is not a delay from 0 to 10s (e.g. 2ms)");
    return *value * scale;
}

double parseLoss(const std::string &text)
{
    std::string t = text;
    if (t.ends_with("%"))
        t.resize(t.size() - 1);
    const auto value = core::NumberText::parse(t);
    if (!value || *value < 0 || *value > 100)
        throw UsageError("--loss: '" + text + "' is not a percentage from 0 to 100");
    return *value;
}

/** "a.avi,clips/" -> absolute paths (the nodes start elsewhere); each must exist. */
QStringList cameraPaths(const QString &list)
{
    QStringList paths;
    for (const QString &part : list.split(QLatin1Char(','))) {
        const QFileInfo info(part.trimmed());
        if (part.trimmed().isEmpty() || !info.exists())
            throw UsageError("--camera: '" + part.toStdString() +
                             "' is not a video file or image folder");
        paths << info.absoluteFilePath();
    }
    return paths;
}

core::Json nodeJson(const net::LabNode &n)
{
    core::Json j;
    j.set("name", n.name.toStdString()).set("profile", n.profile_id.toStdString());
    j.set("address", n.address.toStdString()).set("port", int(n.port));
    j.set("discovery_port", int(n.discovery_port));
    j.set("pid", std::int64_t(n.pid)).set("netns", n.netns.toStdString());
    j.set("cpu_cores", n.cpu_cores).set("cpu_quota_cores", n.cpu_quota_cores);
    j.set("measured_cores", n.measured_cores).set("memory_limit_bytes", n.memory_limit_bytes);
    j.set("link_bits_per_second", n.link_bits_per_second);
    j.set("kernels", n.kernels.isEmpty() ? std::string("default") : n.kernels.toStdString());
    return j;
}

core::Json labJson(const net::LabState &lab, const char *action)
{
    core::Json j;
    j.set("command", "lab").set("action", action).set("dir", lab.dir.toStdString());
    j.set("key_file", lab.key_file.toStdString());
    j.set("nodes_file", QString(lab.dir + QStringLiteral("/nodes")).toStdString());
    j.set("bridge", lab.bridge.toStdString()).set("subnet", lab.subnet.toStdString());
    j.set("host_core_gflops", lab.host_core_gflops).set("time_scale", lab.time_scale);
    j.set("delay_ms", lab.delay_ms).set("loss_percent", lab.loss_percent);
    core::Json missing = core::Json::array();
    for (const QString &m : lab.not_emulated)
        missing.push(m.toStdString());
    j.set("not_emulated", std::move(missing));
    return j;
}

int runUp(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("lab up"),
                   QStringLiteral("Start emulated edge devices on this machine: one "
                                  "edgetrain-node each, in its own network namespace with a "
                                  "shaped link, a CPU quota scaled to the device's speed and a "
                                  "memory limit of its RAM (needs root; otherwise plain local "
                                  "nodes)."),
                   arguments);
    addLabUpOptions(cli);
    cli.addOption("out", "Lab folder (lab.json, cluster.key, nodes, logs/).", "DIR", defaultDir());
    cli.addOption("camera",
                  "What a student deployed to the nodes runs on (edgetrain-node --camera): a "
                  "video file or image folder each, given to the nodes in turn.",
                  "FILE,...");
    cli.addOption("camera-rate",
                  "The nodes' --camera-rate: max (unpaced, to measure what each device reaches) "
                  "or frames/s (default: each file's own rate).",
                  "max|FPS");
    if (!cli.parse())
        return ExitSuccess;
    if (!cli.isSet("devices"))
        throw UsageError("--devices is required (e.g. --devices pi3:3,pi4:1)");
    net::LabOptions o = labUpOptions(cli, QString::fromStdString(cli.text("devices")));
    if (cli.isSet("camera"))
        o.cameras = cameraPaths(QString::fromStdString(cli.text("camera")));
    if (cli.isSet("camera-rate")) {
        if (!cli.isSet("camera"))
            throw UsageError("--camera-rate needs --camera");
        o.camera_rate = QString::fromStdString(cli.text("camera-rate"));
    }
    o.dir = QString::fromStdString(cli.text("out"));
    CliContext::installStopHandler(); // Ctrl-C: stop between steps and remove what was made
    o.stop = CliContext::stopFlag();
    const net::LabState lab =
        net::EdgeLab::up(o, [&](const QString &line) { cli.message(line.toStdString()); });
    for (const QString &m : lab.not_emulated)
        cli.message("not emulated: " + m.toStdString());
    cli.message("lab up in " + lab.dir.toStdString() + ": " + std::to_string(lab.nodes.size()) +
                " nodes; use --nodes $(paste -sd, " + lab.dir.toStdString() +
                "/nodes) --key-file " + lab.key_file.toStdString());
    if (cli.json()) {
        core::Json j = labJson(lab, "up");
        core::Json nodes = core::Json::array();
        for (const net::LabNode &n : lab.nodes)
            nodes.push(nodeJson(n));
        j.set("nodes", std::move(nodes));
        cli.printJson(j);
    }
    return ExitSuccess;
}

int runDown(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("lab down"),
                   QStringLiteral("Stop the lab's nodes and remove its namespaces, links, bridge "
                                  "and cgroups."),
                   arguments);
    cli.addOption("out", "Lab folder.", "DIR", defaultDir());
    if (!cli.parse())
        return ExitSuccess;
    const QString dir = QString::fromStdString(cli.text("out"));
    const QStringList removed = net::EdgeLab::down(
        dir, [&](const QString &line) { cli.message("removed " + line.toStdString()); });
    if (cli.json()) {
        core::Json j;
        j.set("command", "lab").set("action", "down").set("dir", dir.toStdString());
        core::Json list = core::Json::array();
        for (const QString &r : removed)
            list.push(r.toStdString());
        j.set("removed", std::move(list));
        cli.printJson(j);
    }
    return ExitSuccess;
}

int runStatus(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("lab status"),
                   QStringLiteral("The lab's nodes: running, answering, memory and throttling."),
                   arguments);
    cli.addOption("out", "Lab folder.", "DIR", defaultDir());
    if (!cli.parse())
        return ExitSuccess;
    const net::LabState lab = net::EdgeLab::read(QString::fromStdString(cli.text("out")));
    core::Json j = labJson(lab, "status");
    core::Json nodes = core::Json::array();
    bool allUp = true;
    std::printf("%-16s %-22s %7s %9s %10s %9s  %s\n", "node", "address", "cores", "memory", "used",
                "link", "state");
    for (const net::LabNode &n : lab.nodes) {
        const net::LabNodeStatus s = net::EdgeLab::status(n);
        allUp = allUp && s.answering;
        const std::string state = s.answering ? "answering"
                                  : s.running ? "not answering"
                                              : "stopped";
        std::printf(
            "%-16s %-22s %7.3f %6lld MiB %6lld MiB %5.0f Mb/s  %s\n", n.name.toStdString().c_str(),
            QString(n.address + QLatin1Char(':') + QString::number(n.port)).toStdString().c_str(),
            n.cpu_cores, (long long)(n.memory_limit_bytes >> 20),
            (long long)(std::max<std::int64_t>(0, s.memory_bytes) >> 20),
            double(n.link_bits_per_second) / 1e6, state.c_str());
        core::Json nj = nodeJson(n);
        nj.set("running", s.running).set("answering", s.answering);
        nj.set("memory_bytes", s.memory_bytes).set("throttled_count", s.throttled_count);
        nodes.push(std::move(nj));
    }
    for (const QString &m : lab.not_emulated)
        std::printf("not emulated: %s\n", m.toStdString().c_str());
    j.set("nodes", std::move(nodes)).set("all_answering", allUp);
    if (cli.json())
        cli.printJson(j);
    return allUp ? ExitSuccess : ExitFailure;
}

int runProfiles(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("lab profiles"),
                   QStringLiteral("The device profiles: built-in, and the user's own in %1.")
                       .arg(net::DeviceProfiles::userDirectory()),
                   arguments);
    if (!cli.parse())
        return ExitSuccess;
    core::Json list = core::Json::array();
    std::printf("%-16s %-12s %5s %10s %9s %10s %8s %8s  %s\n", "id", "aliases", "cores",
                "GFLOP/s/c", "RAM MiB", "link Mb/s", "idle W", "full W", "name");
    for (const core::DeviceProfile &p : net::DeviceProfiles::all()) {
        std::string aliases;
        for (const std::string &a : p.aliases)
            aliases += (aliases.empty() ? "" : ",") + a;
        std::printf("%-16s %-12s %5d %10.1f %9lld %10.1f %8.1f %8.1f  %s\n", p.id.c_str(),
                    aliases.c_str(), p.cores, p.core_gflops, (long long)(p.ram_bytes >> 20),
                    double(p.link_bits_per_second) / 1e6, p.idle_watts, p.full_watts,
                    p.name.c_str());
        list.push(p.toJson());
    }
    if (cli.json()) {
        core::Json j;
        j.set("command", "lab").set("action", "profiles").set("profiles", std::move(list));
        cli.printJson(j);
    }
    return ExitSuccess;
}

} // namespace

void addLabUpOptions(CliContext &cli)
{
    cli.addOption("devices", "Profiles and counts, e.g. pi3:3,pi4:1 (see lab profiles).", "LIST");
    cli.addOption("link", "Every node's link rate, e.g. 100mbit (default: each profile's).",
                  "RATE");
    cli.addOption("delay", "Delay added on each link, each way, e.g. 2ms.", "T", "0ms");
    cli.addOption("loss", "Packet loss on each link, each way, in percent.", "P", "0");
    cli.addOption("time-scale",
                  "Run every device and link this many times slower than its profile (default: "
                  "just enough to fit the lab into this machine's cores).",
                  "X");
    cli.addOption("host-gflops", "This machine's GEMM GFLOP/s per core (default: measured now).",
                  "X");
    cli.addOption("no-emulation", "Plain local nodes with the profiles' names: no limits.");
}

net::LabOptions labUpOptions(const CliContext &cli, const QString &devices)
{
    net::LabOptions o;
    try {
        o.devices = net::EdgeLab::parseDevices(devices);
    } catch (const core::Error &e) {
        throw UsageError(std::string("--devices: ") + e.what());
    }
    if (cli.isSet("link")) {
        try {
            o.link_bits_per_second =
                net::EdgeLab::parseRate(QString::fromStdString(cli.text("link")));
        } catch (const core::Error &e) {
            throw UsageError(std::string("--link: ") + e.what());
        }
    }
    o.delay_ms = parseDelayMs(cli.text("delay"));
    o.loss_percent = parseLoss(cli.text("loss"));
    if (cli.isSet("time-scale"))
        o.time_scale = cli.number("time-scale", 1.0, 1000.0);
    if (cli.isSet("host-gflops"))
        o.host_core_gflops = cli.number("host-gflops", 0.01, 1e5);
    o.emulate = !cli.isSet("no-emulation");
    o.node_program = QCoreApplication::applicationDirPath() + QStringLiteral("/edgetrain-node");
    return o;
}

int LabCommand::run(const QStringList &arguments)
{
    const QString action = arguments.isEmpty() ? QString() : arguments.first();
    const QStringList rest = arguments.mid(1);
    if (action == QLatin1String("up"))
        return runUp(rest);
    if (action == QLatin1String("down"))
        return runDown(rest);
    if (action == QLatin1String("status"))
        return runStatus(rest);
    if (action == QLatin1String("profiles"))
        return runProfiles(rest);
    if (action == QLatin1String("--help") || action == QLatin1String("-h")) {
        std::fputs("Usage: edgetrain-cli lab up|down|status|profiles [options]   "
                   "(edgetrain-cli lab up --help)\n",
                   stdout);
        return ExitSuccess;
    }
    throw UsageError(action.isEmpty() ? std::string("expected up, down, status or profiles")
                                      : "unknown action '" + action.toStdString() +
                                            "' (expected up, down, status or profiles)");
}

} // namespace edgetrain::app

#include "deploycommand.h"

#include "app/session/deploymentrun.h"
#include "clicontext.h"
#include "clustertrain.h"
#include "core/numbertext.h"
#include "net/protocol/discovery.h"
#include "net/protocol/keyfile.h"
#include "vision/studentteacher.h"

#include <QCoreApplication>
#include <QFileInfo>
#include <QTimer>

#include <algorithm>
#include <map>

namespace edgetrain::app {

namespace {

/** One node's figures as the progress line shows them (the same bytes in every locale). */
std::string brief(const DeviceView &v)
{
    using core::NumberText::fixed;
    return v.node.toStdString() + " " + fixed(v.fps, 1) + " fps p50 " + fixed(v.latencyMsP50, 1) +
           " ms p95 " + fixed(v.latencyMsP95, 1) + " ms, " + std::to_string(v.frames) + " frames";
}

core::Json nodeJson(const QString &name, const DeviceView *view, const QString &error)
{
    core::Json j;
    j.set("name", name.toStdString());
    j.set("source", view ? view->source.toStdString() : std::string());
    j.set("fps", view ? view->fps : 0.0);
    j.set("latency_ms_p50", view ? view->latencyMsP50 : 0.0);
    j.set("latency_ms_p95", view ? view->latencyMsP95 : 0.0);
    j.set("frames", view ? view->frames : std::int64_t(0));
    j.set("detections", view ? view->detections : std::int64_t(0));
    j.set("cpu_percent", view ? view->cpuPercent : 0.0);
    j.set("rss_bytes", view ? view->rssBytes : std::int64_t(0));
    if (!error.isEmpty())
        j.set("error", error.toStdString());
    return j;
}

} // namespace

int DeployCommand::run(const QStringList &arguments)
{
    CliContext cli(QStringLiteral("deploy"),
                   QStringLiteral("Run a session's trained student on nodes, each on the camera "
                                  "configured on it (edgetrain-node --camera), and show each "
                                  "node's frames/s and latency about once a second, until "
                                  "--duration or Ctrl-C; every node is stopped at the end."),
                   arguments);
    cli.addOption("session", "The session folder holding the student (detector.safetensors).",
                  "DIR");
    cli.addOption("duration", "Stop after this long (default: at Ctrl-C).", "DURATION");
    cli.addOption("grace", "A node that loses this command stops by itself after this long.",
                  "DURATION", "10s");
    addDiscoveryOptions(cli, "Run the student on these nodes (edgetrain-node --camera).",
                        "Run it on the first N nodes that answer discovery.");
    cli.addOption("key-file", "Cluster key file.", "F");
    if (!cli.parse())
        return ExitSuccess;
    if (!cli.isSet("session"))
        throw UsageError("--session is required");
    if (!cli.isSet("nodes") && !cli.isSet("discover"))
        throw UsageError("deploy needs the nodes: --nodes HOST:PORT,... or --discover N");
    if (cli.isSet("nodes")) // a malformed list is a usage error before anything is read
        resolveNodes(cli);
    DeploymentSetup setup;
    if (cli.isSet("duration"))
        setup.durationSeconds =
            double(parseDuration(cli.text("duration"), "duration").count()) / 1000.0;
    setup.graceSeconds = double(parseDuration(cli.text("grace"), "grace").count()) / 1000.0;
    setup.modelPath =
        QString::fromStdString(vision::StudentTeacher::weightsPath(cli.text("session")));
    if (!QFileInfo::exists(setup.modelPath))
        throw core::IoError("no trained student in '" + cli.text("session") + "' (" +
                            setup.modelPath.toStdString() + " is missing)");
    if (!cli.isSet("key-file"))
        throw UsageError("--key-file is required: the nodes run only what the cluster sends");
    QString keyError;
    if (!net::readKeyFile(QString::fromStdString(cli.text("key-file")), &setup.key, &keyError))
        throw core::IoError(keyError.toStdString());
    setup.nodes = resolveNodes(cli);

    DeploymentRun run;
    std::map<QString, DeviceView> latest;
    DeploymentOutcome outcome;
    QObject::connect(&run, &DeploymentRun::status, &run,
                     [&cli](const QString &text) { cli.message(text.toStdString()); });
    QObject::connect(&run, &DeploymentRun::view, &run, [&](const DeviceView &v) {
        latest[v.node] = v;
        std::string line;
        for (const auto &[name, view] : latest)
            line += (line.empty() ? "" : " | ") + brief(view);
        cli.progress(line);
    });
    QObject::connect(&run, &DeploymentRun::nodeFailed, &run,
                     [&cli](const QString &node, const QString &message) {
                         cli.progressDone();
                         cli.message(node.toStdString() + ": " + message.toStdString());
                     });
    QObject::connect(&run, &DeploymentRun::done, &run, [&](const DeploymentOutcome &o) {
        outcome = o;
        QCoreApplication::exit(0);
    });
    CliContext::installStopHandler();
    QTimer stopPoll;
    QObject::connect(&stopPoll, &QTimer::timeout, &run, [&run] {
        if (CliContext::stopFlag()->load())
            run.stop();
    });
    stopPoll.start(100);
    QTimer::singleShot(0, &run, [&] { run.start(setup); });
    QCoreApplication::exec();
    cli.progressDone();
    if (!outcome.ok)
        throw core::IoError(outcome.error.isEmpty() ? std::string("the deployment did not run")
                                                    : outcome.error.toStdString());

    std::map<QString, core::Json> nodes; // by name: the order is the same every run
    for (const DeviceView &v : outcome.last) {
        const auto error = outcome.nodeErrors.find(v.node);
        nodes[v.node] =
            nodeJson(v.node, &v, error == outcome.nodeErrors.end() ? QString() : error->second);
        cli.message(brief(v) + ", " + std::to_string(v.detections) + " detections on " +
                    v.source.toStdString());
    }
    for (const auto &[name, error] : outcome.nodeErrors)
        if (!nodes.count(name))
            nodes[name] = nodeJson(name, nullptr, error);
    if (cli.json()) {
        core::Json list = core::Json::array();
        for (auto &[name, j] : nodes)
            list.push(std::move(j));
        core::Json json;
        json.set("command", "deploy").set("seconds", outcome.seconds).set("nodes", std::move(list));
        cli.printJson(json);
    }
    return ExitSuccess;
}

} // namespace edgetrain::app

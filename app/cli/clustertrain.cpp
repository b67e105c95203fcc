#include "clustertrain.h"

#include "clusterplan.h"
#include "clustertrainrun.h"
#include "core/error.h"
#include "net/protocol/controlclient.h"
#include "net/protocol/keyfile.h"
#include "net/training/trainingcoordinator.h"
#include "tilingoptions.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QLoggingCategory>

#include <algorithm>
#include <optional>

namespace edgetrain::app {

QList<QPair<QString, quint16>> resolveNodes(CliContext &cli)
{
    QList<QPair<QString, quint16>> nodes;
    QString error;
    if (cli.isSet("nodes")) {
        if (!net::parseHostPorts(QString::fromStdString(cli.text("nodes")), &nodes, &error))
            throw UsageError("--nodes: " + error.toStdString());
        return nodes;
    }
    const auto wanted = cli.integer("discover", 1, 1024);
    QList<net::DiscoveryProbe::Target> targets;
    if (cli.isSet("probe")) {
        if (!net::parseDiscoveryTargets(QString::fromStdString(cli.text("probe")), &targets,
                                        &error))
            throw UsageError("--probe: " + error.toStdString());
    } else {
        targets.append({net::discoveryGroup(), quint16(cli.integer("discovery-port", 1, 65535))});
    }
    net::DiscoveryProbe probe;
    QList<net::NodeInfo> found =
        probe.run(targets, parseDuration(cli.text("timeout"), "timeout"), &error);
    if (!error.isEmpty())
        throw core::IoError(error.toStdString());
    if (found.size() < wanted)
        throw core::IoError(
            "--discover " + std::to_string(wanted) + ": only " + std::to_string(found.size()) +
            " node(s) answered (multicast blocked? add them with --nodes or --probe)");
    std::sort(found.begin(), found.end(),
              [](const auto &a, const auto &b) { return a.name < b.name; });
    for (int i = 0; i < wanted; ++i)
        nodes.append({found[i].address.toString(), found[i].control_port});
    return nodes;
}

void addDiscoveryOptions(CliContext &cli, const char *nodesHelp, const char *discoverHelp)
{
    cli.addOption("nodes", nodesHelp, "HOST:PORT,...");
    cli.addOption("discover", discoverHelp, "N");
    cli.addOption("probe",
                  "With --discover: ask these discovery addresses instead of the multicast group.",
                  "HOST:PORT,...");
    cli.addOption("discovery-port", "With --discover: the multicast group's port.", "P",
                  QString::number(net::kDiscoveryPort));
    cli.addOption("timeout", "With --discover: how long to listen.", "DURATION", "3s");
}

void addNodeOptions(CliContext &cli, const QString &collectiveTimeout)
{
    addDiscoveryOptions(cli, "Train across these nodes (edgetrain-node) instead of locally.",
                        "Train across the first N nodes that answer discovery.");
    cli.addOption("key-file", "Cluster key file (with --nodes or --discover).", "F");
    cli.addOption("mode",
                  "Across nodes: sync (allreduce every step), async (parameter server) or "
                  "local-sgd (average every --local-steps).",
                  "MODE", "sync");
    cli.addOption("staleness",
                  "async: how many pushes the fastest node may run ahead of the slowest.", "S",
                  "4");
    cli.addOption("local-steps", "local-sgd: steps between model averages.", "H", "8");
    addTilingOptions(cli);
    cli.addOption("collective-timeout",
                  "How long a collective may wait for a peer before the peer counts as lost.",
                  "DURATION", collectiveTimeout);
}

void addClusterOptions(CliContext &cli)
{
    addNodeOptions(cli, QStringLiteral("10s"));
    cli.addOption("exchange",
                  "async: bf16 (gradients and weight deltas in bfloat16, rounding carried over: "
                  "half the bytes) or float32 (full gradients and weights each push).",
                  "E", "bf16");
    cli.addOption("pipeline",
                  "async: on (a node computes its next batch while its push travels; its "
                  "gradients are one version staler, and a run learns less per epoch) or off (it "
                  "waits for each reply).",
                  "on|off", "off");
    cli.addOption("ship-data", "Send the dataset to the nodes instead of using their own copies.");
    cli.addOption("no-rejoin", "Do not call lost nodes back.");
}

net::TrainingMode parseModeOption(const CliContext &cli)
{
    const auto mode = net::parseMode(QString::fromStdString(cli.text("mode")));
    if (!mode)
        throw UsageError("--mode must be sync, async or local-sgd, not '" + cli.text("mode") + "'");
    return *mode;
}

ClusterOptions clusterOptions(CliContext &cli)
{
    ClusterOptions o;
    o.mode = parseModeOption(cli);
    o.staleness = int(cli.integer("staleness", 0, net::JobSpec::kMaxStaleness));
    o.localSteps = int(cli.integer("local-steps", 1, net::JobSpec::kMaxLocalSteps));
    o.collectiveTimeout_ms =
        int(parseDuration(cli.text("collective-timeout"), "collective-timeout").count());
    if (o.collectiveTimeout_ms < 500)
        throw UsageError("--collective-timeout must be at least 500ms");
    if (cli.isSet("nodes")) { // a malformed list is a usage error before the key is read
        QString error;
        if (!net::parseHostPorts(QString::fromStdString(cli.text("nodes")), &o.nodes, &error))
            throw UsageError("--nodes: " + error.toStdString());
    }
    if (!cli.isSet("key-file"))
        throw UsageError("--key-file is required to train across nodes");
    QString error;
    if (!net::readKeyFile(QString::fromStdString(cli.text("key-file")), &o.key, &error))
        throw core::IoError(error.toStdString());
    o.nodes = resolveNodes(cli);
    o.tiling = tilingRequest(cli);
    return o;
}

bool wantsCluster(const CliContext &cli)
{
    return cli.isSet("nodes") || cli.isSet("discover");
}

namespace {

/** How many nodes the run asks for (--nodes' list, or --discover N): each trains its part of a
 *  batch, which the tiling is planned for. */
qsizetype plannedNodes(const CliContext &cli)
{
    if (cli.isSet("nodes"))
        return QString::fromStdString(cli.text("nodes")).split(QLatin1Char(',')).size();
    return cli.isSet("discover") ? qsizetype(cli.integer("discover", 1, 4096)) : 1;
}

/** The job `train` sends the nodes, from its options; every option is checked here, before
 *  anything is read or connected. */
net::JobSpec clusterJob(const CliContext &cli, const ClusterTrainSettings &s)
{
    const auto mode = std::optional(parseModeOption(cli));
    if (cli.isSet("nodes")) {
        QList<QPair<QString, quint16>> nodes;
        QString error;
        if (!net::parseHostPorts(QString::fromStdString(cli.text("nodes")), &nodes, &error))
            throw UsageError("--nodes: " + error.toStdString());
    }

    net::JobSpec job;
    job.id = QStringLiteral("train-%1")
                 .arg(QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-hhmmss")));
    job.mode = *mode;
    job.model = s.spec.toJson();
    job.seed = s.options.seed;
    job.epochs = s.options.epochs;
    job.batch = s.options.batch;
    job.lr = s.options.lr;
    job.momentum = s.options.sgd.momentum;
    job.weight_decay = s.options.sgd.weight_decay;
    job.schedule = QString::fromStdString(s.options.schedule.toString());
    job.average_decay = s.average_decay;
    job.staleness = int(cli.integer("staleness", 0, net::JobSpec::kMaxStaleness));
    job.exchange = QString::fromStdString(cli.text("exchange"));
    if (job.exchange != QLatin1String("bf16") && job.exchange != QLatin1String("float32"))
        throw UsageError("--exchange must be bf16 or float32, not '" + cli.text("exchange") + "'");
    if (cli.text("pipeline") != "on" && cli.text("pipeline") != "off")
        throw UsageError("--pipeline must be on or off, not '" + cli.text("pipeline") + "'");
    job.pipelined = cli.text("pipeline") == "on";
    job.local_steps = int(cli.integer("local-steps", 1, net::JobSpec::kMaxLocalSteps));
    job.collective_timeout_ms =
        int(parseDuration(cli.text("collective-timeout"), "collective-timeout").count());
    if (job.collective_timeout_ms < 500)
        throw UsageError("--collective-timeout must be at least 500ms");
    job.memory_budget_bytes = s.budget_bytes;
    try {
        applyTiling(job, s.spec, plannedNodes(cli), {{QString(), s.budget_bytes}},
                    tilingRequest(cli));
    } catch (const core::SpecError &e) {
        throw UsageError(std::string("--tiles: ") + e.what());
    }
    job.profile_steps = int(cli.integer("profile-steps", 1, net::JobSpec::kMaxProfileSteps));
    job.dataset = QString::fromStdString(s.dataset);
    job.train_limit = s.train_limit;
    job.test_limit = s.test_limit;
    QString check; // the nodes would refuse what does not validate here either
    if (!net::JobSpec::fromCbor(job.forNodes().toCbor(), &check))
        throw UsageError(check.toStdString());
    return job;
}

/** The cluster key from --key-file. Throws UsageError without one, core::IoError if it cannot
 *  be read. */
QByteArray clusterKey(const CliContext &cli)
{
    if (!cli.isSet("key-file"))
        throw UsageError("--key-file is required to train across nodes");
    QByteArray key;
    QString error;
    if (!net::readKeyFile(QString::fromStdString(cli.text("key-file")), &key, &error))
        throw core::IoError(error.toStdString());
    return key;
}

} // namespace

int runClusterTraining(CliContext &cli, const ClusterTrainSettings &s)
{
    const net::JobSpec job = clusterJob(cli, s);
    std::optional<ClusterPlan> plan = ClusterPlan::fromOptions(cli, s.plan_only, job);
    const QByteArray key = clusterKey(cli);

    // The coordinator's log says what the printed lines say already.
    QLoggingCategory::setFilterRules(
        QStringLiteral("edgetrain.coordinator.info=false\nedgetrain.coordinator.debug=false"));
    const auto addresses = resolveNodes(cli);
    ClusterTrainRun run(cli, s, job, key, std::move(plan));
    run.train(addresses);
    return run.report();
}

} // namespace edgetrain::app

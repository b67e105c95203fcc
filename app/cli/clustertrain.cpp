#include "clustertrain.h"

#include "clusterplan.h"
#include "core/energytrace.h"
#include "core/error.h"
#include "core/numbertext.h"
#include "net/protocol/controlclient.h"
#include "net/protocol/keyfile.h"
#include "net/training/trainingcoordinator.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QLoggingCategory>
#include <QTimer>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace edgetrain::app {

namespace {

/** host:port of the nodes: as given, or the first N that answer discovery. */
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

} // namespace

void addNodeOptions(CliContext &cli, const QString &collectiveTimeout)
{
    cli.addOption("nodes", "Train across these nodes (edgetrain-node) instead of locally.",
                  "HOST:PORT,...");
    cli.addOption("discover", "Train across the first N nodes that answer discovery.", "N");
    cli.addOption("probe",
                  "With --discover: ask these discovery addresses instead of the multicast group.",
                  "HOST:PORT,...");
    cli.addOption("discovery-port", "With --discover: the multicast group's port.", "P",
                  QString::number(net::kDiscoveryPort));
    cli.addOption("timeout", "With --discover: how long to listen.", "DURATION", "3s");
    cli.addOption("key-file", "Cluster key file (with --nodes or --discover).", "F");
    cli.addOption("mode",
                  "Across nodes: sync (allreduce every step), async (parameter server) or "
                  "local-sgd (average every --local-steps).",
                  "MODE", "sync");
    cli.addOption("staleness",
                  "async: how many pushes the fastest node may run ahead of the slowest.", "S",
                  "4");
    cli.addOption("local-steps", "local-sgd: steps between model averages.", "H", "8");
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
    return o;
}

bool wantsCluster(const CliContext &cli)
{
    return cli.isSet("nodes") || cli.isSet("discover");
}

int runClusterTraining(CliContext &cli, const ClusterTrainSettings &s)
{
    const auto mode = std::optional(parseModeOption(cli));
    // Every option is checked before anything is read or connected.
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
    job.profile_steps = int(cli.integer("profile-steps", 1, net::JobSpec::kMaxProfileSteps));
    job.dataset = QString::fromStdString(s.dataset);
    job.train_limit = s.train_limit;
    job.test_limit = s.test_limit;
    {
        QString check; // the nodes would refuse what does not validate here either
        if (!net::JobSpec::fromCbor(job.forNodes().toCbor(), &check))
            throw UsageError(check.toStdString());
    }
    std::optional<ClusterPlan> plan = ClusterPlan::fromOptions(cli, s.plan_only, job);
    if (!cli.isSet("key-file"))
        throw UsageError("--key-file is required to train across nodes");
    QByteArray key;
    QString error;
    if (!net::readKeyFile(QString::fromStdString(cli.text("key-file")), &key, &error))
        throw core::IoError(error.toStdString());

    // The coordinator's log says what the printed lines say already.
    QLoggingCategory::setFilterRules(
        QStringLiteral("edgetrain.coordinator.info=false\nedgetrain.coordinator.debug=false"));
    const auto addresses = resolveNodes(cli);
    net::TrainingCoordinator coordinator(job, key);
    coordinator.setRejoin(!cli.isSet("no-rejoin"));
    if (cli.isSet("ship-data")) {
        cli.message("loading " + s.dataset + " to ship it to the nodes");
        coordinator.setData(
            std::make_shared<core::TensorDataset>(loadNamedDataset(
                s.dataset, s.data_dir, core::FashionMnist::Split::Train, s.train_limit)),
            std::make_shared<core::TensorDataset>(loadNamedDataset(
                s.dataset, s.data_dir, core::FashionMnist::Split::Test, s.test_limit)));
    }

    // Connect to every node first: a wrong key or a dead address is reported before any work.
    QList<net::ControlClient *> clients;
    int pending = int(addresses.size());
    QString connectError;
    QEventLoop connecting;
    for (const auto &[host, port] : addresses) {
        auto *c = new net::ControlClient(host, port, key, &coordinator);
        QObject::connect(c, &net::ControlClient::ready, &connecting,
                         [&, c](const net::NodeInfo &n) {
                             cli.message("connected to '" + n.name.toStdString() + "' at " +
                                         c->address().toStdString() + " (" + n.arch.toStdString() +
                                         ", " + std::to_string(n.cores) + " cores, " +
                                         core::NumberText::bytes(n.ram_bytes) + ")");
                             if (--pending == 0)
                                 connecting.quit();
                         });
        QObject::connect(c, &net::ControlClient::failed, &connecting, [&](const QString &reason) {
            if (connectError.isEmpty())
                connectError = reason;
            connecting.quit();
        });
        c->connectToNode();
        clients.append(c);
    }
    connecting.exec();
    if (!connectError.isEmpty())
        throw core::IoError(connectError.toStdString());
    for (auto *c : clients)
        c->disconnect(&connecting);

    if (plan) {
        coordinator.setLinkProbe(true);
        coordinator.setLinkRates(plan->needsLinkRates());
        coordinator.setSelection(plan->selection(cli));
    }
    cli.message(
        std::string(s.plan_only ? "profiling "
                    : plan      ? "profiling, planning and training "
                                : "training ") +
        s.spec.name() + " on " + std::to_string(clients.size()) + " node(s), mode " +
        net::modeName(job.mode).toStdString() + ", global batch " + std::to_string(job.batch) +
        (job.mode == net::TrainingMode::Async ? ", staleness bound " + std::to_string(job.staleness)
                                              : "") +
        (job.mode == net::TrainingMode::LocalSgd
             ? ", averaging every " + std::to_string(job.local_steps) + " steps"
             : ""));

    // Energy per node: the running totals the nodes report, on this clock; the epochs' ends.
    QElapsedTimer clock;
    clock.start();
    if (plan)
        plan->setStarted();
    std::map<QString, core::EnergyTrace> energy;
    std::map<QString, QString> powerSource;
    std::map<int, double> epochEnds; // epoch -> when it ended, on this clock
    double trainingStart = -1.0;     // when the first group formed, on this clock
    QObject::connect(&coordinator, &net::TrainingCoordinator::trainingStarted, &coordinator,
                     [&] { trainingStart = double(clock.elapsed()) / 1000.0; });
    // Nodes the planner released did not train: their (idle) energy is not the run's.
    auto released = [&](const QString &label) {
        const auto &r = coordinator.result().released;
        return std::any_of(r.begin(), r.end(),
                           [&](const net::NodeId &id) { return id.label() == label; });
    };
    // An epoch's energy: over its training time (ending when it was reported), the sum over the
    // nodes and each node's.
    auto epochEnergy = [&](int epoch, double seconds) {
        std::vector<std::pair<QString, double>> byNode;
        double total = 0.0;
        const double end = epochEnds[epoch];
        for (const auto &[node, trace] : energy) {
            if (released(node))
                continue;
            const double j = trace.between(end - seconds, end);
            byNode.emplace_back(node, j);
            total += j;
        }
        return std::pair{total, byNode};
    };
    // What each node used while the job trained (the Raspberry-Pi-cluster paper's figures):
    // each node's samples, kept; at the end each one counts by how much of the time it covers
    // (since the node's previous sample) lies between the first group and the last epoch's end.
    struct Usage
    {
        double at, cpu, agent_cpu, rx, tx; // rates over the time since the previous sample
        std::int64_t rss;
    };
    std::map<QString, std::vector<Usage>> usage;
    QObject::connect(
        &coordinator, &net::TrainingCoordinator::nodeMetrics, &coordinator,
        [&](const net::NodeId &node, const net::SystemSample &m) {
            if (trainingStart >= 0)
                usage[node.label()].push_back({double(clock.elapsed()) / 1000.0, m.cpu_percent,
                                               m.agent_cpu_percent, m.agent_rx_bytes_per_second,
                                               m.agent_tx_bytes_per_second, m.agent_rss_bytes});
            if (m.power_watts) {
                energy[node.label()].add(double(clock.elapsed()) / 1000.0, m.energy_joules);
                powerSource[node.label()] = m.power_source;
            }
            const auto t = net::TrainingStatus::fromCbor(m.training);
            char line[320];
            std::snprintf(
                line, sizeof line,
                "  %-28s %-11s epoch %d step %lld/%lld loss %.4f acc %5.1f%% %s img/s | "
                "cpu %5.1f%% rss %s rx %s/s tx %s/s",
                qPrintable(node.label()),
                qPrintable(t.phase.isEmpty() ? QStringLiteral("idle") : t.phase), t.epoch,
                (long long)t.step, (long long)t.steps, t.loss, 100.0 * t.accuracy,
                groupDigits(t.images_per_second).c_str(), m.cpu_percent,
                core::NumberText::bytes(m.agent_rss_bytes).c_str(),
                core::NumberText::bytes(std::int64_t(m.agent_rx_bytes_per_second)).c_str(),
                core::NumberText::bytes(std::int64_t(m.agent_tx_bytes_per_second)).c_str());
            cli.message(line);
        });
    QObject::connect(&coordinator, &net::TrainingCoordinator::epochFinished, &coordinator,
                     [&](const net::ClusterEpoch &e) {
                         char line[240];
                         std::snprintf(
                             line, sizeof line,
                             "epoch %d/%d on %d node(s): train loss %.4f, train accuracy %s, test "
                             "accuracy %s, %s img/s, %.1f s",
                             e.epoch, job.epochs, e.nodes, e.train_loss,
                             formatPercent(e.train_accuracy).c_str(),
                             e.test_accuracy < 0 ? "n/a" : formatPercent(e.test_accuracy).c_str(),
                             groupDigits(e.images_per_second).c_str(), e.seconds);
                         cli.message(line);
                         epochEnds[e.epoch] = double(clock.elapsed()) / 1000.0;
                         if (!energy.empty()) {
                             const auto [joules, byNode] = epochEnergy(e.epoch, e.seconds);
                             std::string each;
                             for (const auto &[node, j] : byNode)
                                 each += (each.empty() ? "" : ", ") + node.toStdString() + " " +
                                         core::NumberText::format(std::round(j * 10) / 10) + " J";
                             cli.message("  energy of the epoch: " +
                                         core::NumberText::format(std::round(joules * 10) / 10) +
                                         " J (" + each + ")");
                         }
                     });
    QObject::connect(
        &coordinator, &net::TrainingCoordinator::clusterEvent, &coordinator,
        [&](const net::ClusterEvent &e) {
            cli.message("event at " + QString::number(e.seconds, 'f', 1).toStdString() + " s: " +
                        (e.node.isNone() ? std::string() : e.node.label().toStdString() + " ") +
                        net::eventKindName(e.kind).toStdString() + ": " + e.message.toStdString());
        });
    QEventLoop running;
    QObject::connect(&coordinator, &net::TrainingCoordinator::finished, &running,
                     &QEventLoop::quit);
    CliContext::installStopHandler();
    QTimer stopPoll;
    QObject::connect(&stopPoll, &QTimer::timeout, &coordinator, [&] {
        if (CliContext::stopFlag()->load()) {
            cli.message("stopping: the nodes finish their current step");
            coordinator.stop();
            stopPoll.stop();
        }
    });
    stopPoll.start(100);
    coordinator.start(clients);
    if (!coordinator.result().finished && coordinator.result().error.isEmpty())
        running.exec();
    const net::ClusterResult &r = coordinator.result();

    if (s.plan_only) {
        core::Json json = plan->json();
        json.set("command", "plan").set("model", s.spec.name()).set("dataset", s.dataset);
        json.set("batch", job.batch).set("epochs", job.epochs);
        if (!r.error.isEmpty())
            json.set("error", r.error.toStdString());
        if (cli.json())
            cli.printJson(json);
        if (!r.error.isEmpty()) {
            cli.message("error: " + r.error.toStdString());
            return ExitFailure;
        }
        return plan->chose() ? ExitSuccess : ExitFailure;
    }
    if (plan && !plan->chose() && r.error.isEmpty() && !r.cancelled) {
        cli.message("error: no cluster was chosen: nothing trained");
        if (cli.json())
            cli.printJson(core::Json()
                              .set("command", "train")
                              .set("plan", plan->json())
                              .set("error", "no cluster was chosen"));
        return ExitFailure;
    }

    if (!s.save_path.empty() && !r.weights.empty()) {
        net::saveClusterWeights(s.spec, s.options.seed, r.weights, s.save_path);
        cli.message("weights saved to " + s.save_path);
    } else if (!s.save_path.empty() && r.finished && !r.cancelled) {
        cli.message("error: the final weights did not reach this machine (every node that held "
                    "them was lost before they arrived): nothing saved to " +
                    s.save_path);
    }

    core::Json json;
    json.set("command", "train").set("model", s.spec.name()).set("dataset", s.dataset);
    json.set("mode", net::modeName(job.mode).toStdString())
        .set("batch", job.batch)
        .set("lr", job.lr);
    json.set("schedule", job.schedule.toStdString()).set("average_decay", job.average_decay);
    if (job.mode == net::TrainingMode::Async)
        json.set("staleness", job.staleness)
            .set("exchange", job.exchange.toStdString())
            .set("pipelined", job.pipelined)
            .set("max_staleness", r.max_staleness)
            .set("mirror_checks", r.mirror_checks)
            .set("mirror_mismatches", r.mirror_mismatches)
            .set("pushes", r.pushes)
            .set("held_pushes", r.held_pushes);
    if (job.mode == net::TrainingMode::LocalSgd)
        json.set("local_steps", job.local_steps);
    core::Json nodes = core::Json::array();
    for (const auto &[node, fingerprint] : r.fingerprints) {
        core::Json j;
        j.set("node", node.toStdString()).set("fingerprint", fingerprint.toStdString());
        nodes.push(std::move(j));
    }
    json.set("nodes", std::move(nodes));
    core::Json epochs = core::Json::array();
    for (const auto &e : r.epochs) {
        core::Json j;
        j.set("epoch", e.epoch)
            .set("nodes", e.nodes)
            .set("train_loss", e.train_loss)
            .set("train_accuracy", e.train_accuracy);
        j.set("test_loss", e.test_loss)
            .set("test_accuracy", e.test_accuracy)
            .set("test_samples", e.test_count);
        j.set("samples", e.samples)
            .set("images_per_second", e.images_per_second)
            .set("train_seconds", e.seconds);
        // from the nodes' power (measured or estimated): the sum and each node's share
        if (!energy.empty() && epochEnds.count(e.epoch)) {
            const auto [joules, byNode] = epochEnergy(e.epoch, e.seconds);
            core::Json each = core::Json::array();
            for (const auto &[node, nj] : byNode) {
                core::Json n;
                n.set("node", node.toStdString()).set("joules", nj);
                each.push(std::move(n));
            }
            j.set("energy_joules", joules).set("energy_joules_by_node", std::move(each));
        }
        epochs.push(std::move(j));
    }
    json.set("epochs", std::move(epochs));
    if (!energy.empty()) {
        // the whole run: from the start (the job's set-up included) to the last epoch's end
        core::Json each = core::Json::array();
        double total = 0.0;
        const double end =
            epochEnds.empty() ? double(clock.elapsed()) / 1000.0 : epochEnds.rbegin()->second;
        for (const auto &[node, trace] : energy) {
            if (released(node))
                continue;
            const double j = trace.between(0.0, end);
            total += j;
            core::Json n;
            n.set("node", node.toStdString()).set("joules", j);
            n.set("power_source", powerSource[node].toStdString());
            each.push(std::move(n));
        }
        json.set("energy_joules", total).set("energy_by_node", std::move(each));
    }
    // Training alone, as the planner predicts it: from the first group to the last epoch's end
    // (loading, profiling and planning before it; the weights' return after it), and the energy
    // of the nodes that trained (with a plan: the chosen ones) over that time.
    std::optional<std::pair<double, double>> measured;
    if (trainingStart >= 0 && !epochEnds.empty()) {
        const double end = epochEnds.rbegin()->second;
        double joules = 0.0;
        for (const auto &[node, trace] : energy)
            if (!released(node))
                joules += trace.between(trainingStart, end);
        measured = std::pair{end - trainingStart, joules};
        json.set("training_seconds", measured->first);
        if (!energy.empty())
            json.set("training_joules", joules);
    }
    if (measured && !usage.empty()) {
        const double start = trainingStart, end = epochEnds.rbegin()->second;
        core::Json each = core::Json::array();
        for (const auto &[node, samples] : usage) {
            if (released(node))
                continue;
            int counted = 0;
            double covered = 0, cpu = 0, agentCpu = 0, rx = 0, tx = 0;
            std::int64_t rssPeak = 0;
            double previous = samples.front().at - 1.0; // the node samples once a second
            for (const Usage &u : samples) {
                const double overlap = std::min(u.at, end) - std::max(previous, start);
                previous = u.at;
                if (overlap <= 0)
                    continue;
                ++counted;
                covered += overlap;
                cpu += u.cpu * overlap;
                agentCpu += u.agent_cpu * overlap;
                rx += u.rx * overlap;
                tx += u.tx * overlap;
                rssPeak = std::max(rssPeak, u.rss);
            }
            if (counted == 0)
                continue;
            core::Json n;
            n.set("node", node.toStdString()).set("samples", counted);
            n.set("cpu_percent", cpu / covered)
                .set("agent_cpu_percent", agentCpu / covered)
                .set("rss_peak_bytes", rssPeak);
            n.set("received_bytes", std::int64_t(std::llround(rx)))
                .set("sent_bytes", std::int64_t(std::llround(tx)));
            each.push(std::move(n));
        }
        json.set("resources_by_node", std::move(each));
    }
    if (plan) {
        if (measured)
            cli.message("plan against measurement: predicted " +
                        core::NumberText::format(std::round(plan->chosen()->seconds * 10) / 10) +
                        " s, measured " +
                        core::NumberText::format(std::round(measured->first * 10) / 10) + " s");
        json.set("plan", plan->json(measured));
    }
    if (!r.epochs.empty()) {
        const auto &last = r.epochs.back();
        json.set("train_loss", last.train_loss).set("train_accuracy", last.train_accuracy);
        json.set("test_loss", last.test_loss).set("test_accuracy", last.test_accuracy);
    }
    core::Json events = core::Json::array();
    for (const auto &e : r.events) {
        core::Json j;
        j.set("seconds", e.seconds)
            .set("node", e.node.label().toStdString()) // "name (host:port)", as before
            .set("name", e.node.name.toStdString())
            .set("address", e.node.isNone() ? std::string() : e.node.address().toStdString())
            .set("kind", net::eventKindName(e.kind).toStdString())
            .set("message", e.message.toStdString());
        events.push(std::move(j));
    }
    json.set("events", std::move(events)).set("generations", r.generations);
    json.set("seconds", r.seconds).set("cancelled", r.cancelled).set("finished", r.finished);
    if (!r.error.isEmpty())
        json.set("error", r.error.toStdString());
    const bool unsaved = !s.save_path.empty() && r.weights.empty() && r.finished && !r.cancelled;
    if (!s.save_path.empty() && !r.weights.empty())
        json.set("weights", s.save_path);
    else if (unsaved)
        json.set("weights_error", "the final weights did not arrive: nothing saved");
    if (cli.json())
        cli.printJson(json);
    if (!r.error.isEmpty()) {
        cli.message("error: " + r.error.toStdString());
        return ExitFailure;
    }
    if (r.cancelled) {
        cli.message("cancelled");
        return ExitFailure;
    }
    return unsaved ? ExitFailure : ExitSuccess;
}

} // namespace edgetrain::app

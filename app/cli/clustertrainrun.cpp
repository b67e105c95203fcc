#include "clustertrainrun.h"

#include "app/session/clustertraining.h"
#include "core/error.h"
#include "core/numbertext.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace edgetrain::app {

ClusterTrainRun::ClusterTrainRun(CliContext &cli, const ClusterTrainSettings &settings,
                                 const net::JobSpec &job, const QByteArray &key,
                                 std::optional<ClusterPlan> plan)
    : m_cli(cli), m_settings(settings), m_job(job), m_key(key), m_plan(std::move(plan))
{
    const ClusterTrainSettings &s = m_settings;
    if (cli.isSet("ship-data")) {
        cli.message("loading " + s.dataset + " to ship it to the nodes");
        m_trainData = std::make_shared<core::TensorDataset>(loadNamedDataset(
            s.dataset, s.data_dir, core::FashionMnist::Split::Train, s.train_limit));
        m_testData = std::make_shared<core::TensorDataset>(
            loadNamedDataset(s.dataset, s.data_dir, core::FashionMnist::Split::Test, s.test_limit));
    }
}

TrainingSetup ClusterTrainRun::setup(const QList<QPair<QString, quint16>> &addresses)
{
    TrainingSetup setup;
    setup.job = m_job;
    setup.key = m_key;
    setup.nodes = addresses;
    setup.spec = m_settings.spec;
    // The named dataset, shipped or the nodes' own copies; the weights are saved by report(),
    // with train's messages, so the run is given no path for them.
    setup.shipData = bool(m_trainData);
    setup.trainData = m_trainData;
    setup.validationData = m_testData;
    setup.rejoin = !m_cli.isSet("no-rejoin");
    if (m_plan) {
        setup.selection = m_plan->selection(m_cli);
        setup.linkRates = m_plan->needsLinkRates();
    }
    return setup;
}

void ClusterTrainRun::announce(int nodes)
{
    const net::JobSpec &job = m_job;
    m_cli.message(
        std::string(m_settings.plan_only ? "profiling "
                    : m_plan             ? "profiling, planning and training "
                                         : "training ") +
        m_settings.spec.name() + " on " + std::to_string(nodes) + " node(s), mode " +
        net::modeName(job.mode).toStdString() + ", global batch " + std::to_string(job.batch) +
        (job.mode == net::TrainingMode::Async ? ", staleness bound " + std::to_string(job.staleness)
                                              : "") +
        (job.mode == net::TrainingMode::LocalSgd
             ? ", averaging every " + std::to_string(job.local_steps) + " steps"
             : ""));
}

void ClusterTrainRun::train(const QList<QPair<QString, quint16>> &addresses)
{
    ClusterCallbacks callbacks;
    callbacks.stopping = [this] { m_cli.message("stopping: the nodes finish their current step"); };
    callbacks.watch = [this](TrainingRun &run) { watch(run); };
    CliContext::installStopHandler();
    const TrainingOutcome outcome =
        trainOnCluster(setup(addresses), callbacks, CliContext::stopFlag());
    m_run = nullptr;
    if (!m_jobStarted) {
        // A wrong key or a dead address: said in the node client's words, before any work.
        if (!outcome.cancelled)
            throw core::IoError(
                (m_unreachable.isEmpty() ? outcome.error : m_unreachable).toStdString());
        m_result.cancelled = true; // stopped while connecting: reported as a cancelled run
    }
}

void ClusterTrainRun::watch(TrainingRun &run)
{
    m_run = &run;
    QObject::connect(&run, &TrainingRun::nodeReady, &run,
                     [this](const net::NodeInfo &n, const QString &address) {
                         m_cli.message("connected to '" + n.name.toStdString() + "' at " +
                                       address.toStdString() + " (" + n.arch.toStdString() + ", " +
                                       std::to_string(n.cores) + " cores, " +
                                       core::NumberText::bytes(n.ram_bytes) + ")");
                     });
    QObject::connect(&run, &TrainingRun::nodeUnreachable, &run, [this](const QString &reason) {
        if (m_unreachable.isEmpty())
            m_unreachable = reason;
    });
    // The figures' clock starts as the job goes out: the run's energy includes its set-up.
    QObject::connect(&run, &TrainingRun::jobStarting, &run, [this, &run] {
        m_jobStarted = true;
        announce(int(run.setup().nodes.size()));
        m_clock.start();
        if (m_plan)
            m_plan->setStarted();
    });
    QObject::connect(&run, &TrainingRun::trainingStarted, &run,
                     [this] { m_trainingStart = now(); });
    QObject::connect(
        &run, &TrainingRun::metrics, &run,
        [this](const net::NodeId &node, const net::SystemSample &m) { onNodeMetrics(node, m); });
    QObject::connect(&run, &TrainingRun::epoch, &run,
                     [this](const net::ClusterEpoch &e) { onEpochFinished(e); });
    QObject::connect(&run, &TrainingRun::clusterEvent, &run, [this](const net::ClusterEvent &e) {
        m_cli.message("event at " + QString::number(e.seconds, 'f', 1).toStdString() + " s: " +
                      (e.node.isNone() ? std::string() : e.node.label().toStdString() + " ") +
                      net::eventKindName(e.kind).toStdString() + ": " + e.message.toStdString());
    });
    // The run goes when trainOnCluster returns: its final result is kept here.
    QObject::connect(&run, &TrainingRun::done, &run, [this, &run] {
        m_result = run.result();
        m_run = nullptr;
    });
}

void ClusterTrainRun::onNodeMetrics(const net::NodeId &node, const net::SystemSample &m)
{
    // Kept from the first group on, to tell what each node used while the job trained.
    if (m_trainingStart >= 0)
        m_usage[node.label()].push_back({now(), m.cpu_percent, m.agent_cpu_percent,
                                         m.agent_rx_bytes_per_second, m.agent_tx_bytes_per_second,
                                         m.agent_rss_bytes});
    if (m.power_watts) {
        m_energy[node.label()].add(now(), m.energy_joules);
        m_powerSource[node.label()] = m.power_source;
    }
    const net::TrainingStatus t = m.training.value_or(net::TrainingStatus());
    char line[320];
    std::snprintf(line, sizeof line,
                  "  %-28s %-11s epoch %d step %lld/%lld loss %.4f acc %5.1f%% %s img/s | "
                  "cpu %5.1f%% rss %s rx %s/s tx %s/s",
                  qPrintable(node.label()), qPrintable(net::phaseName(t.phase)), t.epoch,
                  (long long)t.step, (long long)t.steps, t.loss, 100.0 * t.accuracy,
                  groupDigits(t.images_per_second).c_str(), m.cpu_percent,
                  core::NumberText::bytes(m.agent_rss_bytes).c_str(),
                  core::NumberText::bytes(std::int64_t(m.agent_rx_bytes_per_second)).c_str(),
                  core::NumberText::bytes(std::int64_t(m.agent_tx_bytes_per_second)).c_str());
    m_cli.message(line);
}

void ClusterTrainRun::onEpochFinished(const net::ClusterEpoch &e)
{
    char line[240];
    std::snprintf(line, sizeof line,
                  "epoch %d/%d on %d node(s): train loss %.4f, train accuracy %s, test "
                  "accuracy %s, %s img/s, %.1f s",
                  e.epoch, m_job.epochs, e.nodes, e.train_loss,
                  formatPercent(e.train_accuracy).c_str(),
                  e.test_accuracy < 0 ? "n/a" : formatPercent(e.test_accuracy).c_str(),
                  groupDigits(e.images_per_second).c_str(), e.seconds);
    m_cli.message(line);
    m_epochEnds[e.epoch] = now();
    if (!m_energy.empty()) {
        const auto [joules, byNode] = epochEnergy(e.epoch, e.seconds);
        std::string each;
        for (const auto &[node, j] : byNode)
            each += (each.empty() ? "" : ", ") + node.toStdString() + " " +
                    core::NumberText::format(std::round(j * 10) / 10) + " J";
        m_cli.message("  energy of the epoch: " +
                      core::NumberText::format(std::round(joules * 10) / 10) + " J (" + each + ")");
    }
}

bool ClusterTrainRun::released(const QString &label) const
{
    // Nodes the planner released did not train: their (idle) energy is not the run's.
    const auto &r = result().released;
    return std::any_of(r.begin(), r.end(),
                       [&](const net::NodeId &id) { return id.label() == label; });
}

std::pair<double, ClusterTrainRun::NodeJoules> ClusterTrainRun::epochEnergy(int epoch,
                                                                            double seconds)
{
    // Over the epoch's training time, ending when it was reported: the sum and each node's.
    NodeJoules byNode;
    double total = 0.0;
    const double end = m_epochEnds[epoch];
    for (const auto &[node, trace] : m_energy) {
        if (released(node))
            continue;
        const double j = trace.between(end - seconds, end);
        byNode.emplace_back(node, j);
        total += j;
    }
    return std::pair{total, byNode};
}

int ClusterTrainRun::report()
{
    const net::ClusterResult &r = m_result;
    const ClusterTrainSettings &s = m_settings;
    if (s.plan_only)
        return reportPlanOnly(r);
    if (m_plan && !m_plan->chose() && r.error.isEmpty() && !r.cancelled) {
        m_cli.message("error: no cluster was chosen: nothing trained");
        if (m_cli.json())
            m_cli.printJson(core::Json()
                                .set("command", "train")
                                .set("plan", m_plan->json())
                                .set("error", "no cluster was chosen"));
        return ExitFailure;
    }
    saveWeights(r);

    core::Json json = jobJson(r);
    core::Json nodes = core::Json::array();
    for (const auto &[node, fingerprint] : r.fingerprints) {
        core::Json j;
        j.set("node", node.toStdString()).set("fingerprint", fingerprint.toStdString());
        nodes.push(std::move(j));
    }
    json.set("nodes", std::move(nodes));
    json.set("epochs", epochsJson(r));
    if (!m_energy.empty()) {
        auto [total, each] = runEnergy();
        json.set("energy_joules", total).set("energy_by_node", std::move(each));
    }
    const std::optional<std::pair<double, double>> measured = addTrainingTime(json);
    if (measured && !m_usage.empty())
        json.set("resources_by_node", resourcesJson());
    if (m_plan) {
        if (measured)
            m_cli.message(
                "plan against measurement: predicted " +
                core::NumberText::format(std::round(m_plan->chosen()->seconds * 10) / 10) +
                " s, measured " + core::NumberText::format(std::round(measured->first * 10) / 10) +
                " s");
        json.set("plan", m_plan->json(measured));
    }
    if (!r.epochs.empty()) {
        const auto &last = r.epochs.back();
        json.set("train_loss", last.train_loss).set("train_accuracy", last.train_accuracy);
        json.set("test_loss", last.test_loss).set("test_accuracy", last.test_accuracy);
    }
    json.set("events", eventsJson(r)).set("generations", r.generations);
    json.set("seconds", r.seconds).set("cancelled", r.cancelled).set("finished", r.finished);
    if (!r.error.isEmpty())
        json.set("error", r.error.toStdString());
    const bool unsaved = !s.save_path.empty() && r.weights.empty() && r.finished && !r.cancelled;
    if (!s.save_path.empty() && !r.weights.empty())
        json.set("weights", s.save_path);
    else if (unsaved)
        json.set("weights_error", "the final weights did not arrive: nothing saved");
    if (m_cli.json())
        m_cli.printJson(json);
    if (!r.error.isEmpty()) {
        m_cli.message("error: " + r.error.toStdString());
        return ExitFailure;
    }
    if (r.cancelled) {
        m_cli.message("cancelled");
        return ExitFailure;
    }
    return unsaved ? ExitFailure : ExitSuccess;
}

int ClusterTrainRun::reportPlanOnly(const net::ClusterResult &r)
{
    core::Json json = m_plan->json();
    json.set("command", "plan")
        .set("model", m_settings.spec.name())
        .set("dataset", m_settings.dataset);
    json.set("batch", m_job.batch).set("epochs", m_job.epochs);
    if (!r.error.isEmpty())
        json.set("error", r.error.toStdString());
    if (m_cli.json())
        m_cli.printJson(json);
    if (!r.error.isEmpty()) {
        m_cli.message("error: " + r.error.toStdString());
        return ExitFailure;
    }
    return m_plan->chose() ? ExitSuccess : ExitFailure;
}

void ClusterTrainRun::saveWeights(const net::ClusterResult &r)
{
    const ClusterTrainSettings &s = m_settings;
    if (!s.save_path.empty() && !r.weights.empty()) {
        net::saveClusterWeights(s.spec, s.options.seed, r.weights, s.save_path);
        m_cli.message("weights saved to " + s.save_path);
    } else if (!s.save_path.empty() && r.finished && !r.cancelled) {
        m_cli.message("error: the final weights did not reach this machine (every node that held "
                      "them was lost before they arrived): nothing saved to " +
                      s.save_path);
    }
}

core::Json ClusterTrainRun::jobJson(const net::ClusterResult &r) const
{
    const net::JobSpec &job = m_job;
    core::Json json;
    json.set("command", "train")
        .set("model", m_settings.spec.name())
        .set("dataset", m_settings.dataset);
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
    return json;
}

core::Json ClusterTrainRun::epochsJson(const net::ClusterResult &r)
{
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
        if (!m_energy.empty() && m_epochEnds.count(e.epoch)) {
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
    return epochs;
}

std::pair<double, core::Json> ClusterTrainRun::runEnergy()
{
    // the whole run: from the start (the job's set-up included) to the last epoch's end
    core::Json each = core::Json::array();
    double total = 0.0;
    const double end = m_epochEnds.empty() ? now() : m_epochEnds.rbegin()->second;
    for (const auto &[node, trace] : m_energy) {
        if (released(node))
            continue;
        const double j = trace.between(0.0, end);
        total += j;
        core::Json n;
        n.set("node", node.toStdString()).set("joules", j);
        n.set("power_source", m_powerSource[node].toStdString());
        each.push(std::move(n));
    }
    return {total, std::move(each)};
}

std::optional<std::pair<double, double>> ClusterTrainRun::addTrainingTime(core::Json &json) const
{
    // Training alone, as the planner predicts it: from the first group to the last epoch's end
    // (loading, profiling and planning before it; the weights' return after it), and the energy
    // of the nodes that trained (with a plan: the chosen ones) over that time.
    if (m_trainingStart < 0 || m_epochEnds.empty())
        return std::nullopt;
    const double end = m_epochEnds.rbegin()->second;
    double joules = 0.0;
    for (const auto &[node, trace] : m_energy)
        if (!released(node))
            joules += trace.between(m_trainingStart, end);
    const std::pair measured{end - m_trainingStart, joules};
    json.set("training_seconds", measured.first);
    if (!m_energy.empty())
        json.set("training_joules", joules);
    return measured;
}

core::Json ClusterTrainRun::resourcesJson() const
{
    // What each node used while the job trained (the Raspberry-Pi-cluster paper's figures): each
    // of its samples counts by how much of the time it covers (since the node's previous sample)
    // lies between the first group and the last epoch's end.
    const double start = m_trainingStart, end = m_epochEnds.rbegin()->second;
    core::Json each = core::Json::array();
    for (const auto &[node, samples] : m_usage) {
        if (released(node))
            continue;
        int counted = 0;
        double covered = 0, cpu = 0, agentCpu = 0, rx = 0, tx = 0;
        std::int64_t rssPeak = 0;
        double previous = samples.front().at - 1.0; // the node samples once a second
        for (const UsageSample &u : samples) {
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
    return each;
}

core::Json ClusterTrainRun::eventsJson(const net::ClusterResult &r)
{
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
    return events;
}

} // namespace edgetrain::app

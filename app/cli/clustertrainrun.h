#pragma once

#include "clicontext.h"
#include "clusterplan.h"
#include "clustertrain.h"
#include "core/energytrace.h"
#include "net/protocol/controlclient.h"
#include "net/training/trainingcoordinator.h"

#include <QElapsedTimer>

#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace edgetrain::app {

/** One `train` (or `plan`) across nodes, phase by phase: connect, train while printing what the
 *  nodes report, then save the weights and report the run. The CLI, settings, job and key it is
 *  given must outlive it. */
class ClusterTrainRun
{
public:
    ClusterTrainRun(CliContext &cli, const ClusterTrainSettings &settings, const net::JobSpec &job,
                    const QByteArray &key, std::optional<ClusterPlan> plan);
    /** Connects to every node first: a wrong key or a dead address is reported (core::IoError)
     *  before any work. */
    void connectNodes(const QList<QPair<QString, quint16>> &addresses);
    /** Trains on the connected nodes until the job ends, fails or is stopped. */
    void train();
    /** Saves the weights, prints the JSON and the outcome; returns the exit status. */
    int report();

private:
    /** A node's resource use as it reported it: rates over the time since its previous sample. */
    struct UsageSample
    {
        double at, cpu, agent_cpu, rx, tx;
        std::int64_t rss;
    };
    using NodeJoules = std::vector<std::pair<QString, double>>;

    double now() const { return double(m_clock.elapsed()) / 1000.0; }
    void announce();
    void watchCoordinator();
    void onNodeMetrics(const net::NodeId &node, const net::SystemSample &m);
    void onEpochFinished(const net::ClusterEpoch &e);
    bool released(const QString &label) const;
    std::pair<double, NodeJoules> epochEnergy(int epoch, double seconds);
    int reportPlanOnly(const net::ClusterResult &r);
    void saveWeights(const net::ClusterResult &r);
    core::Json jobJson(const net::ClusterResult &r) const;
    core::Json epochsJson(const net::ClusterResult &r);
    std::pair<double, core::Json> runEnergy();
    std::optional<std::pair<double, double>> addTrainingTime(core::Json &json) const;
    core::Json resourcesJson() const;
    static core::Json eventsJson(const net::ClusterResult &r);

    CliContext &m_cli;
    const ClusterTrainSettings &m_settings;
    const net::JobSpec &m_job;
    const QByteArray &m_key;
    std::optional<ClusterPlan> m_plan;
    QList<net::ControlClient *> m_clients;
    // What the nodes report, on this clock: the running totals of their energy, the epochs' ends
    // and each node's resource samples.
    QElapsedTimer m_clock;
    std::map<QString, core::EnergyTrace> m_energy;
    std::map<QString, QString> m_powerSource;
    std::map<int, double> m_epochEnds; // epoch -> when it ended
    double m_trainingStart = -1.0;     // when the first group formed
    std::map<QString, std::vector<UsageSample>> m_usage;
    // Last, so that it goes first: its clients and signals never outlive what they report to.
    net::TrainingCoordinator m_coordinator;
};

} // namespace edgetrain::app

#pragma once

#include "app/session/trainingrun.h"
#include "clicontext.h"
#include "clusterplan.h"
#include "clustertrain.h"
#include "core/energytrace.h"
#include "core/tensordataset.h"
#include "net/training/trainingcoordinator.h"

#include <QElapsedTimer>

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace edgetrain::app {

/** One `train` (or `plan`) across nodes: the run itself is the session's TrainingRun (through
 *  trainOnCluster, as the window and `viewpoint --nodes` run it); this prints what the nodes
 *  report while it goes, measures what train's JSON says of it, then saves the weights and
 *  reports. The CLI, settings, job and key it is given must outlive it. */
class ClusterTrainRun
{
public:
    /** With --ship-data, loads the dataset to ship (throws as loadNamedDataset does). */
    ClusterTrainRun(CliContext &cli, const ClusterTrainSettings &settings, const net::JobSpec &job,
                    const QByteArray &key, std::optional<ClusterPlan> plan);
    /** Trains on these nodes until the job ends, fails or is stopped (Ctrl-C). A node that
     *  cannot be reached or refuses the key is reported (core::IoError) before any work. */
    void train(const QList<QPair<QString, quint16>> &addresses);
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
    TrainingSetup setup(const QList<QPair<QString, quint16>> &addresses);
    void announce(int nodes);
    /** Connects the run's signals to the printed lines and the figures. The handlers capture
     *  only `this` and the run, never a local of a function that returns before the run ends. */
    void watch(TrainingRun &run);
    /** The coordinator's result: the live one while the run goes, the final one after. */
    const net::ClusterResult &result() const { return m_run ? m_run->result() : m_result; }
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
    std::shared_ptr<const core::TensorDataset> m_trainData, m_testData; // --ship-data
    TrainingRun *m_run = nullptr;                                       // while it goes
    net::ClusterResult m_result;                                        // once it has ended
    bool m_jobStarted = false; // every node answered and the job went out
    QString m_unreachable;     // why the first node that could not be reached was not
    // What the nodes report, on this clock: the running totals of their energy, the epochs' ends
    // and each node's resource samples.
    QElapsedTimer m_clock;
    std::map<QString, core::EnergyTrace> m_energy;
    std::map<QString, QString> m_powerSource;
    std::map<int, double> m_epochEnds; // epoch -> when it ended
    double m_trainingStart = -1.0;     // when the first group formed
    std::map<QString, std::vector<UsageSample>> m_usage;
};

} // namespace edgetrain::app

#pragma once

#include "clicontext.h"
#include "core/json.h"
#include "net/planner/clusterplanner.h"
#include "net/training/trainingcoordinator.h"

#include <QElapsedTimer>

#include <map>
#include <optional>

namespace edgetrain::app {

/** --modes ("sync,async") -> the modes, each once, in order; UsageError naming --modes
 *  otherwise (plan's and the study's). */
std::vector<net::TrainingMode> parseModeList(const CliContext &cli);

/** `plan`'s options (--objective, --modes) or train's (--auto-cluster), and both's limits and
 *  --profile-steps. */
void addPlanOptions(CliContext &cli, bool planCommand);

/**
 * The planner at work for `plan` and `train --auto-cluster`: as the coordinator's selection (when
 * every node has loaded the job and profiled it, its link included), predicts
 * every candidate cluster, ranks them by the objective and keeps the best: `plan` keeps none
 * (nobody trains), `train` the chosen nodes. Prints the table; keeps it for the JSON.
 */
class ClusterPlan
{
public:
    /** Parses the options; none when neither `plan` nor --auto-cluster asked for a plan. */
    static std::optional<ClusterPlan> fromOptions(const CliContext &cli, bool planCommand,
                                                  const net::JobSpec &job);

    net::TrainingCoordinator::Selection selection(const CliContext &cli);

    /** Whether a candidate was chosen (false: none could run, or none met the limits). */
    bool chose() const { return m_plan.chosen.has_value(); }
    /** Whether the plan needs the nodes' link rates (it plans async: TrainingCoordinator::
     *  setLinkRates). */
    bool needsLinkRates() const { return net::needsLinkRates(m_modes); }
    const std::optional<net::PlanCandidate> &chosen() const { return m_plan.chosen; }
    /** Seconds since the job was sent when the plan was made. */
    double plannedAt() const { return m_plannedAt; }
    void setStarted() { m_clock.start(); }
    double elapsed() const { return double(m_clock.nsecsElapsed()) * 1e-9; }
    /** {"objective", "candidates", "chosen", "profiling_seconds", "devices", ...}; with
     *  `measured` (seconds, joules of the chosen cluster's training) the chosen row gets them. */
    core::Json json(std::optional<std::pair<double, double>> measured = std::nullopt) const;

private:
    ClusterPlan() = default;
    net::PlanObjective m_objective;
    std::vector<net::TrainingMode> m_modes;
    net::JobSpec m_job;
    bool m_train = false;
    net::ClusterPlanResult m_plan;
    QElapsedTimer m_clock;
    double m_plannedAt = 0.0;
};

} // namespace edgetrain::app

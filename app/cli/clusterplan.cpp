#include "clusterplan.h"

#include "core/numbertext.h"

#include <algorithm>
#include <cstdio>

namespace edgetrain::app {

namespace {

core::Json candidateJson(const net::PlanCandidate &c, const net::PlanObjective &objective)
{
    core::Json j;
    core::Json nodes = core::Json::array();
    for (const QString &n : c.names)
        nodes.push(core::Json(n.toStdString()));
    j.set("nodes", std::move(nodes)).set("mode", net::modeName(c.mode).toStdString());
    j.set("predicted_seconds", c.seconds)
        .set("predicted_watts", c.watts)
        .set("predicted_joules", c.joules)
        .set("predicted_edp", c.edp);
    j.set("compute_seconds", c.compute_seconds)
        .set("communication_seconds", c.communication_seconds);
    core::Json shares = core::Json::array();
    for (double s : c.shares)
        shares.push(core::Json(s));
    j.set("shares", std::move(shares));
    const QString why = net::ClusterPlanner::unsuitable(c, objective);
    j.set("suitable", why.isEmpty());
    if (!why.isEmpty())
        j.set("why_not", why.toStdString());
    return j;
}

std::string row(int rank, const net::PlanCandidate &c, const net::PlanObjective &objective)
{
    char line[400];
    const QString why = net::ClusterPlanner::unsuitable(c, objective);
    std::snprintf(line, sizeof line, "  %3d  %-40s %-9s %9.1f s %7.2f W %9.1f J %11.0f J·s%s%s",
                  rank, qPrintable(c.names.join(QLatin1Char('+')).left(40)),
                  qPrintable(net::modeName(c.mode)), c.seconds, c.watts, c.joules, c.edp,
                  why.isEmpty() ? "" : "  (", why.isEmpty() ? "" : qPrintable(why + u')'));
    return line;
}

} // namespace

std::vector<net::TrainingMode> parseModeList(const CliContext &cli)
{
    std::vector<net::TrainingMode> modes;
    for (const QString &m :
         QString::fromStdString(cli.text("modes")).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const auto mode = net::parseMode(m.trimmed());
        if (!mode)
            throw UsageError("--modes: '" + m.toStdString() + "' is not sync, async or local-sgd");
        if (std::find(modes.begin(), modes.end(), *mode) == modes.end())
            modes.push_back(*mode);
    }
    if (modes.empty())
        throw UsageError("--modes names no mode");
    return modes;
}

void addPlanOptions(CliContext &cli, bool planCommand)
{
    const char *objectives = "time, power, energy, edp, or a weighted mix "
                             "mix:time=W,power=W,energy=W,edp=W";
    if (planCommand) {
        cli.addOption(
            "objective",
            QStringLiteral("What the chosen cluster minimises: %1.").arg(QLatin1String(objectives)),
            "OBJ", "time");
        cli.addOption("modes", "The modes to plan for, comma-separated.", "MODES",
                      "sync,local-sgd,async");
    } else {
        cli.addOption("auto-cluster",
                      QStringLiteral("Profile every node, predict every cluster of them and train "
                                     "on the best for this objective (%1), in --mode.")
                          .arg(QLatin1String(objectives)),
                      "OBJ");
    }
    cli.addOption("max-watts", "Plan: clusters drawing more power than this are out.", "W");
    cli.addOption("deadline", "Plan: clusters taking longer than this are out.", "DURATION");
    cli.addOption("profile-steps",
                  "Plan: timed forward + backward passes per batch size on every node.", "N", "3");
}

std::optional<ClusterPlan> ClusterPlan::fromOptions(const CliContext &cli, bool planCommand,
                                                    const net::JobSpec &job)
{
    if (!planCommand && !cli.isSet("auto-cluster"))
        return std::nullopt;
    ClusterPlan p;
    p.m_job = job;
    p.m_train = !planCommand;
    QString error;
    const auto objective = net::PlanObjective::parse(
        QString::fromStdString(cli.text(planCommand ? "objective" : "auto-cluster")), &error);
    if (!objective)
        throw UsageError(std::string(planCommand ? "--objective: " : "--auto-cluster: ") +
                         error.toStdString());
    p.m_objective = *objective;
    if (cli.isSet("max-watts"))
        p.m_objective.max_watts = cli.number("max-watts", 1e-3, 1e6);
    if (cli.isSet("deadline"))
        p.m_objective.deadline_seconds =
            double(parseDuration(cli.text("deadline"), "deadline").count()) / 1000.0;
    if (planCommand) {
        p.m_modes = parseModeList(cli);
    } else {
        p.m_modes = {job.mode}; // the nodes were sent the job in this mode
    }
    return p;
}

net::TrainingCoordinator::Selection ClusterPlan::selection(const CliContext &cli)
{
    return [this, &cli](const std::vector<net::ReadyNode> &nodes) -> std::vector<int> {
        m_plannedAt = elapsed();
        std::vector<std::pair<QString, QCborMap>> ready;
        for (const auto &n : nodes)
            ready.emplace_back(n.node.name, n.ready);
        m_plan = net::planCluster(ready, m_job, m_objective, m_modes);
        for (const net::DeviceMeasurement &d : m_plan.devices) {
            // The link's rates, or what stood for them: the exchange over the link.
            std::string rates;
            if (d.link_rates_timed) {
                rates = "up " + core::NumberText::bytes(std::int64_t(d.up_bytes_per_second)) +
                        "/s, down " +
                        core::NumberText::bytes(std::int64_t(d.down_bytes_per_second)) + "/s";
            } else if (d.link_error.isEmpty() &&
                       d.exchange_over == net::DeviceMeasurement::ExchangeOver::Link) {
                char over[64];
                std::snprintf(over, sizeof over, "exchange over it %.1f ns a byte",
                              d.exchange_seconds_per_byte * 1e9);
                rates = over;
            }
            char line[260];
            std::snprintf(line, sizeof line,
                          "%s: %.2f ms + %.3f ms per sample a step; link round trip %.2f ms%s%s%s",
                          qPrintable(d.name), 1000.0 * d.step_fixed_seconds,
                          1000.0 * d.step_per_sample_seconds, 1000.0 * d.rtt_seconds,
                          rates.empty() ? "" : ", ", rates.c_str(),
                          d.link_error.isEmpty() ? "" : qPrintable(u" (" + d.link_error + u')'));
            cli.message(line);
        }
        if (!m_plan.error.isEmpty()) {
            cli.message("plan: " + m_plan.error.toStdString());
            return {};
        }
        cli.message("plan for " + m_objective.name().toStdString() + ": " +
                    std::to_string(m_plan.ranked.size()) +
                    " candidates (rank, nodes, mode, predicted time, mean power, energy, EDP)");
        for (std::size_t i = 0; i < m_plan.ranked.size() && i < 12; ++i)
            cli.message(row(int(i) + 1, m_plan.ranked[i], m_objective));
        if (!m_plan.chosen) {
            cli.message("plan: no candidate can run within the limits");
            return {};
        }
        cli.message("chosen: " + m_plan.chosen->names.join(QLatin1Char('+')).toStdString() + " (" +
                    net::modeName(m_plan.chosen->mode).toStdString() + ")" +
                    (m_train ? "; the others are released" : ""));
        return m_train ? m_plan.chosen->devices : std::vector<int>{};
    };
}

core::Json ClusterPlan::json(std::optional<std::pair<double, double>> measured) const
{
    core::Json j;
    j.set("objective", m_objective.name().toStdString());
    if (m_objective.max_watts > 0)
        j.set("max_watts", m_objective.max_watts);
    if (m_objective.deadline_seconds > 0)
        j.set("deadline_seconds", m_objective.deadline_seconds);
    core::Json candidates = core::Json::array();
    for (const auto &c : m_plan.ranked)
        candidates.push(candidateJson(c, m_objective));
    j.set("candidates", std::move(candidates));
    if (m_plan.chosen) {
        core::Json chosen = candidateJson(*m_plan.chosen, m_objective);
        if (measured) {
            const auto [seconds, joules] = *measured;
            chosen.set("measured_seconds", seconds).set("measured_joules", joules);
            chosen.set("measured_watts", seconds > 0 ? joules / seconds : 0.0);
        }
        j.set("chosen", std::move(chosen));
    } else {
        j.set("chosen", core::Json());
    }
    // Profiling: each node on its own (the link probes one at a time); the longest took this
    // (its timed passes and its link probe), the longest probe (its wait in line included) that.
    j.set("profiling_seconds", m_plan.profiling_seconds)
        .set("link_probe_seconds", m_plan.link_probe_seconds)
        .set("planned_after_seconds", m_plannedAt);
    core::Json devices = core::Json::array();
    for (const auto &d : m_plan.devices) {
        core::Json x;
        x.set("name", d.name.toStdString())
            .set("step_fixed_seconds", d.step_fixed_seconds)
            .set("step_seconds_per_sample", d.step_per_sample_seconds)
            .set("update_seconds", d.update_seconds)
            .set("eval_seconds_per_sample", d.eval_per_sample_seconds)
            .set("max_local_batch", d.max_local_batch);
        x.set("idle_watts", d.idle_watts)
            .set("busy_watts", d.busy_watts)
            .set("power_source", d.power_source.toStdString());
        x.set("rtt_seconds", d.rtt_seconds)
            .set("up_bytes_per_second", d.up_bytes_per_second)
            .set("down_bytes_per_second", d.down_bytes_per_second)
            .set("up_busy_seconds_per_byte", d.up_busy_seconds_per_byte)
            .set("down_busy_seconds_per_byte", d.down_busy_seconds_per_byte)
            .set("link_rates_timed", d.link_rates_timed)
            .set("exchange_seconds_per_byte", d.exchange_seconds_per_byte)
            .set("exchange_busy_seconds_per_byte", d.exchange_busy_seconds_per_byte);
        if (d.exchange_over != net::DeviceMeasurement::ExchangeOver::Unknown)
            x.set("exchange_over", d.exchange_over == net::DeviceMeasurement::ExchangeOver::Link
                                       ? "link"
                                       : "loopback");
        x.set("profile_seconds", d.profile_seconds).set("link_probe_seconds", d.link_probe_seconds);
        if (!d.exchange_error.isEmpty())
            x.set("exchange_error", d.exchange_error.toStdString());
        if (!d.exchange_link_error.isEmpty())
            x.set("exchange_link_error", d.exchange_link_error.toStdString());
        devices.push(std::move(x));
    }
    j.set("devices", std::move(devices));
    return j;
}

} // namespace edgetrain::app

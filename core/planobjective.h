#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace edgetrain::core {

/** What the user asks the cluster planner to minimise, and under which limits. */
struct PlanObjective
{
    enum class Kind { Time, Power, Energy, Edp, Mix };
    Kind kind = Kind::Time;
    // Mix: minimises the weighted sum of the figures, each divided by the best candidate's.
    double time_weight = 1.0, power_weight = 0.0, energy_weight = 0.0, edp_weight = 0.0;
    double max_watts = 0.0;        // > 0: candidates drawing more are out
    double deadline_seconds = 0.0; // > 0: candidates taking longer are out

    /** "time", "power", "energy", "edp" or "mix:time=1,energy=2" (the weights of a mix), in
     *  any case; nothing, with the reason in `error`, for anything else or a mix without a
     *  weight above 0. */
    static std::optional<PlanObjective> parse(std::string_view text, std::string *error);
    /** The text parse() reads back as this objective (limits aside). */
    std::string name() const;
    /** Whether ranking by it reads the candidates' power (a power figure or a watts limit). */
    bool needsPower() const;
};

} // namespace edgetrain::core

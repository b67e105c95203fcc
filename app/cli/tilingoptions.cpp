#include "tilingoptions.h"

#include "clicontext.h"
#include "core/numbertext.h"

#include <cstdio>
#include <regex>

namespace edgetrain::app {

void addTilingOptions(CliContext &cli)
{
    cli.addOption("tiles",
                  "Run the first stages as a fused tile group on an NxM grid (1x2 to 4x4 are "
                  "searched with auto): less activation memory for some recomputation.",
                  "NxM|auto");
    cli.addOption("group", "With --tiles: how many of the first stages the tile group takes.",
                  "K|auto", "auto");
}

TilingRequest tilingRequest(const CliContext &cli)
{
    TilingRequest r;
    if (!cli.isSet(QStringLiteral("tiles"))) {
        if (cli.isSet(QStringLiteral("group")))
            throw UsageError("--group needs --tiles");
        return r;
    }
    r.requested = true;
    const std::string tiles = cli.text(QStringLiteral("tiles"));
    std::smatch m;
    if (tiles != "auto") {
        if (!std::regex_match(tiles, m, std::regex("([1-9][0-9]?)x([1-9][0-9]?)")))
            throw UsageError("--tiles: expected NxM (e.g. 4x4) or auto, got '" + tiles + "'");
        r.grid = std::pair{std::stoi(m[1]), std::stoi(m[2])};
        if (r.grid->first > 16 || r.grid->second > 16 || r.grid->first * r.grid->second < 2)
            throw UsageError("--tiles: a grid has 2 to 16x16 tiles, not " + tiles);
    }
    const std::string group = cli.text(QStringLiteral("group"));
    if (group != "auto") {
        if (!std::regex_match(group, m, std::regex("[1-9][0-9]{0,2}")))
            throw UsageError("--group: expected a number of stages or auto, got '" + group + "'");
        r.stages = std::stoi(group);
    }
    return r;
}

void setTilingJson(core::Json &json, const core::TiledPlan &plan)
{
    core::Json tiles = core::Json::array();
    tiles.push(plan.tiling.active() ? plan.tiling.rows : 1);
    tiles.push(plan.tiling.active() ? plan.tiling.cols : 1);
    json.set("tiles", std::move(tiles));
    json.set("tiled_stages", plan.tiling.active() ? plan.tiling.stages : 0);
    json.set("tiled_group_cost_factor", plan.group_cost_factor);
    json.set("predicted_step_factor", plan.predicted_step_factor);
    json.set("tiled_group_peak_bytes", plan.group_peak_bytes);
    json.set("untiled_group_peak_bytes", plan.untiled_group_peak_bytes);
}

std::string tilingText(const core::TiledPlan &plan)
{
    if (!plan.tiling.active())
        return "tiling: none (the untiled step is the cheapest plan)";
    char line[320];
    std::snprintf(line, sizeof line,
                  "tiling: the first %d stages as one group on %dx%d tiles; its activations %s "
                  "instead of %s, its step x%.2f, the whole step x%.2f of the untiled store-all",
                  plan.tiling.stages, plan.tiling.rows, plan.tiling.cols,
                  core::NumberText::bytes(plan.group_peak_bytes).c_str(),
                  core::NumberText::bytes(plan.untiled_group_peak_bytes).c_str(),
                  plan.group_cost_factor, plan.predicted_step_factor);
    return line;
}

} // namespace edgetrain::app

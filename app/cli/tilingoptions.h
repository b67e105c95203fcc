#pragma once

#include "app/session/tiling.h"
#include "core/json.h"
#include "core/tilingplanner.h"

#include <optional>
#include <utility>

namespace edgetrain::app {

class CliContext;

/** Adds --tiles and --group to a command. */
void addTilingOptions(CliContext &cli);
/** Reads them; throws UsageError naming the option for a bad value. */
TilingRequest tilingRequest(const CliContext &cli);
/** "tiles": [N, M], "tiled_stages": K and what the plan predicts, into a command's JSON. */
void setTilingJson(core::Json &json, const core::TiledPlan &plan);
/** One line for the terminal: the tiling chosen and what it costs and saves. */
std::string tilingText(const core::TiledPlan &plan);

} // namespace edgetrain::app

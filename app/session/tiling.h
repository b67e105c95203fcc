#pragma once

#include "core/model.h"
#include "core/modelspec.h"

#include <optional>
#include <utility>

namespace edgetrain::app {

/** What a user asked of tiling (--tiles NxM|auto, --group K|auto): nothing, or a grid and a
 *  group each fixed or left to the planner. */
struct TilingRequest
{
    bool requested = false;
    std::optional<std::pair<int, int>> grid; // none: auto
    std::optional<int> stages;               // none: auto
    bool operator==(const TilingRequest &) const = default;
};

/**
 * The tiling a device runs for a request: the planner's choice (core::planTiling) for the model
 * at `deviceBatch` within `budgetBytes` (-1: none), which is no tiling where the untiled step is
 * the cheapest plan that fits. Throws core::SpecError where the request cannot be met (a grid
 * larger than the group's output, a model with no stage to tile).
 */
core::Model::Tiling resolveTiling(const core::ModelSpec &spec, std::int64_t deviceBatch,
                                  std::int64_t budgetBytes, const TilingRequest &request);

} // namespace edgetrain::app

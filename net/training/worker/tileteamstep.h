#pragma once

#include "core/model.h"
#include "net/training/collectives.h"

#include <cstdint>

namespace edgetrain::net::worker {

struct WorkerState;

/**
 * One sync step of a tile team (JobSpec::tiles_across): the ranks split the tiles of the model's
 * first stage (a core::TiledStage) over every image of the batch, the team's allreduce gives
 * each rank the group's whole output, each rank runs the rest of the network on its own part of
 * the batch (`offset`, `mine` of `total`), and a second allreduce gives every rank the group
 * output's whole gradient, each part weighted by its share of the batch (`weight`: mine / total)
 * as the sync step weighs gradients. Leaves in the model's gradients the group's share of this
 * rank's tiles (of the whole batch's loss: not to be weighted again) and the rest's of its own
 * part (unweighted, zero without one). Returns the rest's loss over its part.
 */
core::StepResult tileTeamStep(WorkerState &s, CollectiveGroup &team, const std::int64_t *indices,
                              std::int64_t total, std::int64_t offset, std::int64_t mine,
                              float weight);

/** How many of the flat gradient's leading floats are the tile group's (stage 0). */
std::size_t tileGroupGradientFloats(core::Model &model);

} // namespace edgetrain::net::worker

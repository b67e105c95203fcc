#include "tiling.h"

#include "core/memorysimulation.h"
#include "core/tilingplanner.h"

namespace edgetrain::app {

core::Model::Tiling resolveTiling(const core::ModelSpec &spec, std::int64_t deviceBatch,
                                  std::int64_t budgetBytes, const TilingRequest &request)
{
    if (!request.requested)
        return {};
    // Planning needs no weights: the model's tensors are virtual (fast for large models).
    core::MemorySimulation virtualWeights;
    core::Model model(spec, 0);
    return core::planTiling(model, std::max<std::int64_t>(1, deviceBatch), budgetBytes,
                            request.stages, request.grid)
        .tiling;
}

} // namespace edgetrain::app

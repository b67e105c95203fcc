#pragma once

#include "core/stage.h"

#include <string>
#include <vector>

namespace edgetrain::tests {

/** The worst disagreement found between backward() and central differences. */
struct GradCheckReport
{
    double worst = 0.0; // max |analytic - numeric| / (atol + rtol * |numeric|); <= 1 passes
    std::string where;  // which tensor and index
    int checked = 0;    // coordinates compared
    int skipped = 0;    // coordinates with a kink (ReLU, max) within the step
};

/**
 * Checks a stage's backward pass against finite differences of L = sum(r * forward(x)) for a
 * fixed random r: dL/dx and every parameter gradient, at up to `perTensor` coordinates each.
 */
GradCheckReport gradCheck(core::Stage &stage, const core::Shape &inputShape,
                          const core::PassContext &ctx, std::uint64_t seed, int perTensor = 40);

/** x filled with N(0, 1)-ish values from a seed. */
core::Tensor randomTensor(const core::Shape &shape, std::uint64_t seed, float scale = 1.0f);

} // namespace edgetrain::tests

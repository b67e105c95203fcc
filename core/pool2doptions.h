#pragma once

#include "json.h"
#include "shape.h"

#include <string>

namespace edgetrain::core {

class Layer;

/** Window of a pooling layer (PyTorch's floor mode). */
struct Pool2dOptions
{
    int kernel = 2;
    int stride = 2;
    int padding = 0;
};

namespace Internal {
/** Output shape of a pooling window over [N, C, H, W]; throws ShapeError naming the layer. */
Shape pooledShape(const Layer &layer, const Pool2dOptions &o, const Shape &input);
/** Throws SpecError unless kernel > 0, stride > 0 and padding <= kernel / 2. */
void checkPoolOptions(const std::string &name, const char *type, const Pool2dOptions &o);
Json poolSpec(const char *type, const Pool2dOptions &o);
/** Threads for a loop over `planes` image planes. */
int planeWorkers(std::int64_t planes);
} // namespace Internal

} // namespace edgetrain::core

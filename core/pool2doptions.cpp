#include "pool2doptions.h"

#include "error.h"
#include "layer.h"
#include "parallel.h"

#include <algorithm>

namespace edgetrain::core {

namespace Internal {

Shape pooledShape(const Layer &layer, const Pool2dOptions &o, const Shape &input)
{
    if (input.rank() != 4)
        throw ShapeError("layer '" + layer.name() + "' (" + std::string(layer.type()) +
                         "): expected [N, C, H, W]; got input of shape " + input.toString());
    if (input[2] + 2 * o.padding < o.kernel || input[3] + 2 * o.padding < o.kernel)
        throw ShapeError("layer '" + layer.name() + "' (" + std::string(layer.type()) +
                         "): input " + input.toString() + " is smaller than the window");
    return Shape{input[0], input[1], (input[2] + 2 * o.padding - o.kernel) / o.stride + 1,
                 (input[3] + 2 * o.padding - o.kernel) / o.stride + 1};
}

void checkPoolOptions(const std::string &name, const char *type, const Pool2dOptions &o)
{
    if (o.kernel <= 0 || o.stride <= 0 || o.padding < 0 || 2 * o.padding > o.kernel)
        throw SpecError("layer '" + name + "' (" + type +
                        "): invalid options (kernel > 0, stride > 0, padding <= kernel / 2)");
}

Json poolSpec(const char *type, const Pool2dOptions &o)
{
    Json j;
    j.set("type", type).set("kernel", o.kernel).set("stride", o.stride).set("padding", o.padding);
    return j;
}

int planeWorkers(std::int64_t planes)
{
    return int(std::clamp<std::int64_t>(planes, 1, threadCount()));
}

} // namespace Internal

} // namespace edgetrain::core

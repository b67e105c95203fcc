#include "layer.h"

#include "error.h"

namespace edgetrain::core {

void Layer::shapeError(const std::string &what, const Shape &got) const
{
    throw ShapeError("layer '" + m_name + "' (" + std::string(type()) + "): " + what +
                     "; got input of shape " + got.toString());
}

} // namespace edgetrain::core

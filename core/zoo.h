#pragma once

#include "modelspec.h"

#include <string>
#include <vector>

namespace edgetrain::core {

/**
 * The built-in models. mlp, lenet5 and the CIFAR ResNets have exactly the structure (and
 * parameter names) of ../shared/bench/models.py; the ImageNet ResNets follow torchvision's
 * names (conv1, bn1, layer1.0.conv1, ..., fc) and are mainly there for memory planning.
 */
class Zoo
{
public:
    /** mlp, lenet5, student, detector (CenterNet loss), resnet20/32/44/56/110,
     * resnet18/34/50/101/152. */
    static std::vector<std::string> names();
    static bool contains(const std::string &name);
    /** Throws SpecError listing the known names if `name` is not one. */
    static ModelSpec spec(const std::string &name);
    /** A zoo name, or else a path to a ModelSpec JSON file. */
    static ModelSpec resolve(const std::string &nameOrPath);
};

} // namespace edgetrain::core

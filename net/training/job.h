#pragma once

#include "core/modelspec.h"
#include "net/protocol/messages/jobspec.h"

#include <QCborMap>
#include <QString>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace edgetrain::net {

/**
 * Splits `total` items into parts proportional to `shares` (largest remainder: the parts sum
 * to total exactly and differ from the ideal by less than one). When total >= parts, every part
 * gets at least one item, so no node idles on a step.
 */
std::vector<std::int64_t> splitByShares(std::int64_t total, const std::vector<double> &shares);

/** Shares proportional to measured speeds (images/s); equal shares where speeds are unknown. */
std::vector<double> sharesFromSpeeds(const std::vector<double> &imagesPerSecond);

} // namespace edgetrain::net

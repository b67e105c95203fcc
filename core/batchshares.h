#pragma once

#include <cstdint>
#include <vector>

namespace edgetrain::core {

/**
 * How a global batch is split among devices of different speeds: the rule the cluster's
 * trainer applies and the planner predicts with. Shares are fractions of the batch, summing to
 * 1; parts are whole samples.
 */

/** Splits `total` items into parts proportional to `shares` (largest remainder: the parts sum
 *  to total exactly and differ from the ideal by less than one). When total >= parts, every
 *  part gets at least one item, so no device idles on a step. */
std::vector<std::int64_t> splitByShares(std::int64_t total, const std::vector<double> &shares);

/** Shares proportional to measured speeds (images/s); equal shares while any speed is unknown
 *  (not above 0, or not finite). */
std::vector<double> sharesFromSpeeds(const std::vector<double> &imagesPerSecond);

/** Caps `shares` at `cap` (fractions of the batch, one per share), moving the excess to the
 *  uncapped ones in proportion to their shares; where nobody has room the excess is dropped
 *  (the shares then sum to less than 1). */
void capShares(std::vector<double> &shares, const std::vector<double> &cap);

} // namespace edgetrain::core

#pragma once

#include "net/training/coordinator/evaluationsplitter.h"
#include "net/training/coordinator/member.h"
#include "net/training/trainingcoordinator.h"

#include <vector>

namespace edgetrain::net {

/**
 * The cluster's figures for epoch `epoch` from the reports of the members at its barrier (in rank
 * order), what the evaluation summed to, and, in async mode, the samples that members lost in the
 * epoch had trained (`lostApplied`; 0 otherwise). The loss and accuracy are of the samples whose
 * figures reached the coordinator; the collective modes' reports carry the group's sums already.
 */
ClusterEpoch epochFigures(int epoch, const std::vector<EpochDone> &reports,
                          const EvaluationSplitter::Sums &tested, std::int64_t lostApplied);

} // namespace edgetrain::net

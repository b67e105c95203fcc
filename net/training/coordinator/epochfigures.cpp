#include "net/training/coordinator/epochfigures.h"

#include <algorithm>
#include <cmath>

namespace edgetrain::net {

ClusterEpoch epochFigures(int epoch, const std::vector<EpochDone> &reports,
                          const EvaluationSplitter::Sums &tested, std::int64_t lostApplied)
{
    ClusterEpoch e;
    e.epoch = epoch;
    e.nodes = int(reports.size());
    double lossSum = 0, correct = 0, seen = 0, targets = 0;
    bool global = false;
    for (const EpochDone &r : reports) {
        e.seconds = std::max(e.seconds, r.seconds);
        if (r.global) {
            if (!global) { // the collective modes' sums are the cluster's already
                lossSum = r.loss_sum;
                correct = r.correct;
                seen = r.seen;
                targets = r.targets;
                global = true;
            }
        } else {
            lossSum += r.loss_sum;
            correct += r.correct;
            seen += r.seen;
            targets += r.targets;
        }
    }
    e.test_count = tested.count;
    e.samples = std::int64_t(std::llround(seen)) + lostApplied;
    e.train_loss = seen > 0 ? lossSum / seen : 0.0;
    // Accuracy over what it counts (samples; a detector's objects), as a local Trainer does.
    e.train_accuracy = targets > 0 ? correct / targets : 0.0;
    if (e.test_count > 0) {
        e.test_loss = tested.loss / double(e.test_count);
        e.test_accuracy = double(tested.correct) / double(e.test_count);
    }
    e.images_per_second = e.seconds > 0 ? double(e.samples) / e.seconds : 0.0;
    return e;
}

} // namespace edgetrain::net

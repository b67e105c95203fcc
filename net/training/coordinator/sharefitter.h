#pragma once

#include "net/training/job.h"

#include <QString>

#include <cstdint>
#include <map>
#include <vector>

namespace edgetrain::net {

struct Member;

/**
 * A group's batch shares: by the members' speeds, the first group's where per-epoch rebalancing
 * would settle (from the profiles' step times), and capped so that each member's part of a step
 * fits its memory: the budget the user gave that node, else the largest local batch its profile
 * measured; the excess goes to the others by their shares.
 */
class ShareFitter
{
public:
    /** `budgets`: per node name, bytes (negative: none given). */
    ShareFitter(JobSpec job, std::map<QString, std::int64_t> budgets);

    /** The shares of a new group of `members` (rank order), before fit(): by speed, or for the
     *  first group (`first`) from the profiles when every member timed its steps. */
    std::vector<double> groupShares(const std::vector<Member *> &members, bool first) const;
    /** `shares` capped by each member's memory, summing to 1. */
    std::vector<double> fit(const std::vector<Member *> &members, std::vector<double> shares);

private:
    /** The largest local batch (<= the job's batch + 1) the model trains in `budget` bytes. */
    std::int64_t largestBatchWithin(std::int64_t budget);

    JobSpec m_job;
    std::map<QString, std::int64_t> m_budgets;
    std::map<std::int64_t, std::int64_t> m_batchWithin; // largestBatchWithin's answers
};

} // namespace edgetrain::net

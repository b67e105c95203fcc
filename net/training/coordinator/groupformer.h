#pragma once

#include "net/training/coordinator/sharefitter.h"

#include <QCborMap>
#include <QString>

#include <vector>

namespace edgetrain::net {

struct Member;

/**
 * The groups of a run, one generation after another: a new group of members gets ranks (in the
 * order given) and batch shares (ShareFitter: the first group's from the profiles, later ones'
 * from the measured speeds, each capped by memory); the members are then told their group when
 * they start, regroup, or go on into an epoch with a new group. Also says when the measured
 * speeds have moved far enough from the group's shares to rebalance.
 */
class GroupFormer
{
public:
    /** `budgets`: per node name, bytes (negative: none given). */
    GroupFormer(JobSpec job, std::map<QString, std::int64_t> budgets);

    /** A new generation of `members` (rank order): ranks and shares assigned. Returns its
     *  members and shares for the log: "name 62.5%, ...". */
    QString form(const std::vector<Member *> &members);
    /** Groups formed so far, minus one (the current group's generation; -1: none yet). */
    int generation() const { return m_generation; }
    const std::vector<double> &shares() const { return m_shares; }
    /** Whether `members`' (the group's, rank order) measured speeds move a share by more than
     *  10 % from the group's. */
    bool wantsRebalance(const std::vector<Member *> &members);

    /** The member's place in the group: its rank, the group's size and shares. */
    GroupSpec groupOf(const Member &m) const;
    /** The answer that starts a joiner in the group at epoch `epoch`. */
    QCborMap startReply(const Member &m, int epoch) const;
    /** The answer that moves a member to the group (its old one failed). */
    QCborMap regroupReply(const Member &m) const;

private:
    ShareFitter m_fitter;
    int m_generation = -1;
    std::vector<double> m_shares;
};

} // namespace edgetrain::net

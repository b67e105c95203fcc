#pragma once

#include "net/training/coordinator/member.h"

#include <memory>
#include <vector>

namespace edgetrain::net {

/**
 * The members of a run, in the order they joined it (their ids, stable over reconnects), and
 * who is where: the queries the coordinator's barriers and phases ask.
 */
class Roster
{
public:
    /** A new member reached through `link`: its id is the next one, its node the link's. */
    Member &add(std::unique_ptr<MemberLink> link);
    bool empty() const { return m_members.empty(); }
    const std::vector<std::unique_ptr<Member>> &all() const { return m_members; }

    /** The members in `state`, in id order. */
    std::vector<Member *> inState(Member::State state) const;
    bool any(Member::State state) const;
    /** The members training, in rank order. */
    std::vector<Member *> participants() const;
    /** The links of the members connected now. */
    std::vector<MemberLink *> links() const;

private:
    std::vector<std::unique_ptr<Member>> m_members;
};

} // namespace edgetrain::net

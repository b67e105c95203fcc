#include "net/training/coordinator/roster.h"

#include <algorithm>

namespace edgetrain::net {

Member &Roster::add(std::unique_ptr<MemberLink> link)
{
    auto m = std::make_unique<Member>();
    m->id = int(m_members.size());
    m->node = link->node();
    m->link = std::move(link);
    m_members.push_back(std::move(m));
    return *m_members.back();
}

std::vector<Member *> Roster::inState(Member::State state) const
{
    std::vector<Member *> out;
    for (const auto &m : m_members)
        if (m->state == state)
            out.push_back(m.get());
    return out;
}

bool Roster::any(Member::State state) const
{
    return std::any_of(m_members.begin(), m_members.end(),
                       [state](const auto &m) { return m->state == state; });
}

std::vector<Member *> Roster::participants() const
{
    std::vector<Member *> out = inState(Member::State::Training);
    std::sort(out.begin(), out.end(),
              [](const Member *a, const Member *b) { return a->rank < b->rank; });
    return out;
}

std::vector<MemberLink *> Roster::links() const
{
    std::vector<MemberLink *> out;
    for (const auto &m : m_members)
        if (m->link)
            out.push_back(m->link.get());
    return out;
}

} // namespace edgetrain::net

#pragma once

// Members of a run for tests of the coordinator's parts: on recording links, in the state and
// with the facts a part reads.

#include "fakememberlink.h"
#include "net/training/coordinator/member.h"

#include <memory>
#include <vector>

/** Member `id` ("node-<id>") training, at `speed` images/s, on a FakeMemberLink. */
inline std::unique_ptr<edgetrain::net::Member> testMember(int id, double speed = 100.0)
{
    auto m = std::make_unique<edgetrain::net::Member>();
    m->id = id;
    m->node = {QStringLiteral("node-%1").arg(id), QStringLiteral("127.0.0.1"), quint16(40000 + id)};
    m->link = std::make_unique<FakeMemberLink>(m->node.name, m->node.port);
    m->state = edgetrain::net::Member::State::Training;
    m->rank = id;
    m->speed = speed;
    return m;
}

inline FakeMemberLink &linkOf(const edgetrain::net::Member &m)
{
    return static_cast<FakeMemberLink &>(*m.link);
}

inline std::vector<edgetrain::net::Member *>
pointers(const std::vector<std::unique_ptr<edgetrain::net::Member>> &members)
{
    std::vector<edgetrain::net::Member *> out;
    for (const auto &m : members)
        out.push_back(m.get());
    return out;
}

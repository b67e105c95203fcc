#include "net/training/coordinator/asyncshardbook.h"

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/training/coordinator/member.h"
#include "net/training/job.h"
#include "net/training/trainingcoordinator.h"

#include <QStringList>

#include <algorithm>

namespace edgetrain::net {

void AsyncShardBook::assign(const std::vector<int> &ids, std::int64_t samples,
                            const std::vector<double> &shares)
{
    clear();
    const auto parts = splitByShares(samples, shares);
    std::int64_t first = 0;
    for (std::size_t rank = 0; rank < ids.size() && rank < parts.size(); ++rank) {
        m_parts[ids[rank]] = Part{{{first, parts[rank]}}, 0};
        first += parts[rank];
    }
}

void AsyncShardBook::clear()
{
    m_parts.clear();
    m_orphans.clear();
    m_lostApplied = 0;
}

void AsyncShardBook::applied(int id, std::int64_t samples)
{
    m_parts[id].applied += samples;
}

void AsyncShardBook::orphanRest(int id)
{
    const auto it = m_parts.find(id);
    if (it == m_parts.end())
        return;
    m_lostApplied += it->second.applied;
    std::int64_t covered = it->second.applied;
    for (const auto &[first, count] : it->second.ranges) {
        const std::int64_t done = std::min(covered, count);
        covered -= done;
        if (count > done)
            m_orphans.emplace_back(first + done, count - done);
    }
    m_parts.erase(it);
}

std::int64_t AsyncShardBook::orphaned() const
{
    std::int64_t total = 0;
    for (const auto &orphan : m_orphans)
        total += orphan.second;
    return total;
}

std::vector<AsyncShardBook::Range> AsyncShardBook::ranges(int id) const
{
    const auto it = m_parts.find(id);
    return it == m_parts.end() ? std::vector<Range>{} : it->second.ranges;
}

std::vector<std::vector<AsyncShardBook::Range>>
AsyncShardBook::handOut(const std::vector<Taker> &takers)
{
    std::vector<std::vector<Range>> out(takers.size());
    const std::int64_t total = orphaned();
    if (takers.empty() || total == 0) {
        m_orphans.clear();
        return out;
    }
    std::vector<double> speeds;
    for (const Taker &t : takers)
        speeds.push_back(t.speed);
    const auto parts = splitByShares(total, sharesFromSpeeds(speeds));
    std::size_t next = 0;  // the orphan range being handed out
    std::int64_t used = 0; // of it
    for (std::size_t i = 0; i < takers.size(); ++i) {
        for (std::int64_t want = parts[i]; want > 0 && next < m_orphans.size();) {
            const auto [first, count] = m_orphans[next];
            const std::int64_t take = std::min(want, count - used);
            out[i].emplace_back(first + used, take);
            m_parts[takers[i].id].ranges.emplace_back(first + used, take);
            want -= take;
            used += take;
            if (used == count) {
                ++next;
                used = 0;
            }
        }
    }
    m_orphans.clear();
    return out;
}

AsyncShardBook::Handed AsyncShardBook::handOut(const std::vector<Member *> &members, int epoch)
{
    const std::int64_t total = orphaned();
    std::vector<Member *> takers; // nodes of this version (older ones end their epoch as it is)
    std::vector<Taker> speeds;
    for (Member *m : members)
        if (m->ready.takes_more) {
            takers.push_back(m);
            speeds.push_back({m->id, m->speed});
        }
    if (speeds.empty() && total > 0)
        qCWarning(lcCoordinator).noquote()
            << QStringLiteral("%1 samples of epoch %2 go untrained: no node left can take a lost "
                              "node's part")
                   .arg(total)
                   .arg(epoch);
    const auto given = handOut(speeds);
    Handed handed;
    QStringList names;
    for (std::size_t i = 0; i < takers.size(); ++i) {
        if (given[i].empty())
            continue; // stays at the barrier
        std::int64_t samples = 0;
        for (const auto &range : given[i])
            samples += range.second;
        takers[i]->answer(Member::Waits::EpochEnd, moreReply(given[i]));
        handed.takers.push_back(takers[i]);
        names << QStringLiteral("%1 %2").arg(takers[i]->node.name).arg(samples);
    }
    handed.summary = QStringLiteral("%1 samples of epoch %2 that a lost node had not trained: %3")
                         .arg(total)
                         .arg(epoch)
                         .arg(names.join(QStringLiteral(", ")));
    return handed;
}

QCborMap AsyncShardBook::moreReply(const std::vector<Range> &ranges)
{
    TrainingReply more;
    more.action = ReplyAction::More;
    more.ranges = ranges;
    return more.toCbor();
}

} // namespace edgetrain::net

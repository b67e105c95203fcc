#include "net/training/coordinator/groupformer.h"

#include "net/protocol/messages/coordinatorreplies.h"
#include "net/training/coordinator/member.h"

#include <QStringList>

#include <cmath>

namespace edgetrain::net {

GroupFormer::GroupFormer(JobSpec job, std::map<QString, std::int64_t> budgets)
    : m_fitter(std::move(job), std::move(budgets))
{}

QString GroupFormer::form(const std::vector<Member *> &members)
{
    ++m_generation;
    m_shares = m_fitter.fit(members, m_fitter.groupShares(members, m_generation == 0));
    QStringList names;
    for (std::size_t i = 0; i < members.size(); ++i) {
        members[i]->rank = int(i);
        names << QStringLiteral("%1 %2%")
                     .arg(members[i]->node.name)
                     .arg(100.0 * m_shares[i], 0, 'f', 1);
    }
    return names.join(QStringLiteral(", "));
}

bool GroupFormer::wantsRebalance(const std::vector<Member *> &members)
{
    std::vector<double> speeds;
    for (const Member *m : members)
        speeds.push_back(m->speed);
    const auto shares = m_fitter.fit(members, sharesFromSpeeds(speeds));
    bool rebalance = false;
    for (std::size_t i = 0; i < shares.size() && i < m_shares.size(); ++i)
        rebalance = rebalance || std::abs(shares[i] - m_shares[i]) > 0.10 * m_shares[i];
    return rebalance;
}

GroupSpec GroupFormer::groupOf(const Member &m) const
{
    return GroupSpec{m_generation, m.rank, int(m_shares.size()), m_shares};
}

QCborMap GroupFormer::startReply(const Member &m, int epoch) const
{
    TrainingReply start;
    start.action = ReplyAction::Start;
    start.group = groupOf(m);
    start.epoch = epoch;
    return start.toCbor();
}

QCborMap GroupFormer::regroupReply(const Member &m) const
{
    TrainingReply regroup;
    regroup.action = ReplyAction::Regroup;
    regroup.group = groupOf(m);
    return regroup.toCbor();
}

} // namespace edgetrain::net

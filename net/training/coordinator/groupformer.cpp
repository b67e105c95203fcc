#include "net/training/coordinator/groupformer.h"

#include "net/protocol/protocol.h"
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

QCborMap GroupFormer::groupOf(const Member &m) const
{
    return GroupSpec{m_generation, m.rank, int(m_shares.size()), m_shares}.toCbor();
}

QCborMap GroupFormer::startReply(const Member &m, int epoch) const
{
    return QCborMap{{Action::Field, Action::Start},
                    {QStringLiteral("group"), groupOf(m)},
                    {QStringLiteral("epoch"), epoch}};
}

QCborMap GroupFormer::regroupReply(const Member &m) const
{
    return QCborMap{{Action::Field, Action::Regroup}, {QStringLiteral("group"), groupOf(m)}};
}

void GroupFormer::addNextGroup(QCborMap &answer, const Member &m) const
{
    answer.insert(QStringLiteral("next_group"), groupOf(m));
}

} // namespace edgetrain::net

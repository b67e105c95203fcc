// The groups of a run (net::GroupFormer, net::ShareFitter): ranks and batch shares, the first
// group's from the profiles, later ones' from the measured speeds, each capped by memory; what a
// member is told when it starts, regroups or goes on with a new group.

#include "coordinatortestmembers.h"
#include "core/zoo.h"
#include "net/planner/clusterplanner.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/training/coordinator/groupformer.h"
#include "net/training/job.h"

#include <QTest>

#include <numeric>

using namespace edgetrain;
using net::GroupFormer;
using net::Member;

namespace {

net::JobSpec job()
{
    net::JobSpec j;
    j.model = core::Zoo::resolve("mlp").toJson();
    j.batch = 64;
    return j;
}

/** What a node whose profile timed steps at two batch sizes says when ready. */
net::JobReady timedReady(double perSampleSeconds, double fixedSeconds)
{
    net::JobReady ready;
    ready.images_per_second = 1.0 / perSampleSeconds;
    ready.profile.small_batch = 8;
    ready.profile.large_batch = 32;
    ready.profile.small_step_seconds = fixedSeconds + 8 * perSampleSeconds;
    ready.profile.large_step_seconds = fixedSeconds + 32 * perSampleSeconds;
    return ready;
}

/** The group a training answer carries. */
net::GroupSpec groupIn(const QCborMap &answer)
{
    QString error;
    const auto reply = net::TrainingReply::fromCbor(answer, &error);
    return reply && reply->group ? *reply->group : net::GroupSpec{};
}

double sum(const std::vector<double> &v)
{
    return std::accumulate(v.begin(), v.end(), 0.0);
}

} // namespace

class TestGroupFormer : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void laterGroupsFollowTheSpeeds();
    void theFirstGroupSettlesFromTheProfiles();
    void sharesAreCappedByMemory();
    void aBudgetIsCappedByTheWorkersOwnMeasure();
    void membersAreToldTheirGroup();
    void aSpeedThatMovedRebalances();
};

void TestGroupFormer::laterGroupsFollowTheSpeeds()
{
    std::vector<std::unique_ptr<Member>> members;
    members.push_back(testMember(4, 300));
    members.push_back(testMember(1, 2700));
    GroupFormer groups(job(), {});
    QCOMPARE(groups.generation(), -1);
    const QString names = groups.form(pointers(members)); // no profiles: by speed
    QCOMPARE(groups.generation(), 0);
    QCOMPARE(members[0]->rank, 0); // ranks in the order given, not by id
    QCOMPARE(members[1]->rank, 1);
    QVERIFY(std::abs(groups.shares()[0] - 0.1) < 1e-12);
    QCOMPARE(names, QStringLiteral("node-4 10.0%, node-1 90.0%"));
    members.erase(members.begin());
    groups.form(pointers(members));
    QCOMPARE(groups.generation(), 1);
    QCOMPARE(members[0]->rank, 0);
    QCOMPARE(groups.shares(), std::vector<double>{1.0});
}

void TestGroupFormer::theFirstGroupSettlesFromTheProfiles()
{
    std::vector<std::unique_ptr<Member>> members;
    for (int i = 0; i < 2; ++i) {
        members.push_back(testMember(i));
        members.back()->ready = i == 0 ? timedReady(0.001, 0.05) : timedReady(0.004, 0.0);
        members.back()->readyBody = members.back()->ready.toCbor();
        members.back()->speed = members.back()->ready.images_per_second;
    }
    GroupFormer groups(job(), {});
    groups.form(pointers(members));
    std::vector<net::DeviceMeasurement> d{
        net::measurementFromReady(QStringLiteral("node-0"), members[0]->ready),
        net::measurementFromReady(QStringLiteral("node-1"), members[1]->ready)};
    const auto settled = net::settledShares({&d[0], &d[1]}, 64);
    QCOMPARE(groups.shares().size(), std::size_t(2));
    for (std::size_t i = 0; i < 2; ++i)
        QVERIFY(std::abs(groups.shares()[i] - settled[i]) < 1e-12);
    // ... which is not the split by the speeds at a small batch (the fixed cost is amortised)
    QVERIFY(std::abs(groups.shares()[0] - 0.8) > 0.01);
    // Later groups follow the speeds.
    groups.form(pointers(members));
    QVERIFY(std::abs(groups.shares()[0] - 0.8) < 1e-12);
}

void TestGroupFormer::sharesAreCappedByMemory()
{
    std::vector<std::unique_ptr<Member>> members;
    for (int i = 0; i < 3; ++i)
        members.push_back(testMember(i, 100));
    // node-0: a budget nothing fits in; node-1: its profile found a local batch of 12 to fit.
    members[1]->ready.profile.max_local_batch = 12;
    GroupFormer groups(job(), {{QStringLiteral("node-0"), 1}});
    groups.form(pointers(members));
    const auto &shares = groups.shares();
    QVERIFY(std::abs(sum(shares) - 1.0) < 1e-12);
    QVERIFY2(shares[0] < 0.01, qPrintable(QString::number(shares[0])));
    // node-1's part of a step: at most 2 + (65 - 3) * share samples, within its 12
    QVERIFY2(2 + 62 * shares[1] <= 12 + 1e-9, qPrintable(QString::number(shares[1])));
    QVERIFY(shares[2] > shares[1]);
}

void TestGroupFormer::aBudgetIsCappedByTheWorkersOwnMeasure()
{
    std::vector<std::unique_ptr<Member>> members;
    for (int i = 0; i < 3; ++i)
        members.push_back(testMember(i, 100));
    // Every node has a budget that takes the whole batch by the plan alone, but node-1's worker
    // measured its process growing beyond the engine's tensors: 8 samples at most.
    members[1]->ready.profile.max_local_batch = 8;
    const std::int64_t roomy = std::int64_t(1) << 40;
    GroupFormer groups(job(), {{QStringLiteral("node-0"), roomy},
                               {QStringLiteral("node-1"), roomy},
                               {QStringLiteral("node-2"), roomy}});
    groups.form(pointers(members));
    const auto &shares = groups.shares();
    QVERIFY(std::abs(sum(shares) - 1.0) < 1e-12);
    QVERIFY2(2 + 62 * shares[1] <= 8 + 1e-9, qPrintable(QString::number(shares[1])));
    QVERIFY(shares[0] > shares[1] && shares[2] > shares[1]);
}

void TestGroupFormer::membersAreToldTheirGroup()
{
    std::vector<std::unique_ptr<Member>> members;
    members.push_back(testMember(0, 100));
    members.push_back(testMember(1, 300));
    GroupFormer groups(job(), {});
    groups.form(pointers(members));
    QString error;
    const auto start = net::TrainingReply::fromCbor(groups.startReply(*members[1], 3), &error);
    QVERIFY2(start.has_value(), qPrintable(error));
    QVERIFY(start->action == net::ReplyAction::Start);
    QCOMPARE(start->epoch, std::optional<int>(3));
    QVERIFY(start->group == (net::GroupSpec{0, 1, 2, groups.shares()}));
    QVERIFY(groups.groupOf(*members[1]) == *start->group);
    groups.form(pointers(members));
    const auto regroup = net::TrainingReply::fromCbor(groups.regroupReply(*members[0]), &error);
    QVERIFY2(regroup.has_value(), qPrintable(error));
    QVERIFY(regroup->action == net::ReplyAction::Regroup);
    QCOMPARE(groupIn(groups.regroupReply(*members[0])).generation, 1);
    QCOMPARE(groups.groupOf(*members[0]).rank, 0);
}

void TestGroupFormer::aSpeedThatMovedRebalances()
{
    std::vector<std::unique_ptr<Member>> members;
    members.push_back(testMember(0, 100));
    members.push_back(testMember(1, 100));
    GroupFormer groups(job(), {});
    groups.form(pointers(members));
    QVERIFY(!groups.wantsRebalance(pointers(members)));
    members[1]->speed = 105; // shares move by under 10 %
    QVERIFY(!groups.wantsRebalance(pointers(members)));
    members[1]->speed = 150;
    QVERIFY(groups.wantsRebalance(pointers(members)));
}

QTEST_GUILESS_MAIN(TestGroupFormer)
#include "tst_groupformer.moc"

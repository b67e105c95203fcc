// Async mode's shard book (net::AsyncShardBook): each member's part of an epoch's sample order,
// what a member that leaves had not trained, and handing that out so the epoch still trains
// every sample once.

#include "coordinatortestmembers.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/training/coordinator/asyncshardbook.h"
#include "net/training/job.h"

#include <QTest>

#include <algorithm>

using namespace edgetrain;
using net::AsyncShardBook;
using Range = AsyncShardBook::Range;

namespace {

/** Every sample of the ranges, sorted: the samples they cover, each as often as covered. */
std::vector<std::int64_t> samplesOf(const std::vector<Range> &ranges)
{
    std::vector<std::int64_t> out;
    for (const auto &[first, count] : ranges)
        for (std::int64_t s = first; s < first + count; ++s)
            out.push_back(s);
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::int64_t> iota(std::int64_t first, std::int64_t end)
{
    std::vector<std::int64_t> out;
    for (std::int64_t s = first; s < end; ++s)
        out.push_back(s);
    return out;
}

} // namespace

class TestAsyncShardBook : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void anEpochIsSplitByTheSharesInRankOrder();
    void whatALeavingMemberHadNotTrainedIsOrphaned();
    void orphansGoToTheTakersBySpeed();
    void orphansOfSeveralMembersAreEachTrainedOnce();
    void withoutTakersTheOrphansAreDropped();
    void takersAreAnsweredWithTheirRanges();
    void aNewEpochForgetsTheLastOne();
};

void TestAsyncShardBook::anEpochIsSplitByTheSharesInRankOrder()
{
    AsyncShardBook book;
    const std::vector<double> shares{0.5, 0.3, 0.2};
    book.assign({5, 2, 9}, 100, shares);
    const auto parts = net::splitByShares(100, shares); // what each worker computes
    QCOMPARE(book.ranges(5), (std::vector<Range>{{0, parts[0]}}));
    QCOMPARE(book.ranges(2), (std::vector<Range>{{parts[0], parts[1]}}));
    QCOMPARE(book.ranges(9), (std::vector<Range>{{parts[0] + parts[1], parts[2]}}));
    QVERIFY(book.ranges(7).empty());
    QVERIFY(!book.hasOrphans());
}

void TestAsyncShardBook::whatALeavingMemberHadNotTrainedIsOrphaned()
{
    AsyncShardBook book;
    book.assign({0, 1}, 100, {0.5, 0.5});
    book.applied(1, 8);
    book.applied(1, 4);
    book.orphanRest(1);
    QCOMPARE(book.lostApplied(), std::int64_t(12)); // its applied pushes still count
    QCOMPARE(book.orphaned(), std::int64_t(38));
    QVERIFY(book.hasOrphans());
    QVERIFY(book.ranges(1).empty());
    book.orphanRest(1); // gone already: nothing more
    QCOMPARE(book.orphaned(), std::int64_t(38));
    QCOMPARE(book.lostApplied(), std::int64_t(12));
}

void TestAsyncShardBook::orphansGoToTheTakersBySpeed()
{
    AsyncShardBook book;
    book.assign({0, 1, 2}, 90, {1.0 / 3, 1.0 / 3, 1.0 / 3});
    book.applied(2, 10); // trained 60..69 of its 60..89
    book.orphanRest(2);
    const auto given = book.handOut({{0, 300.0}, {1, 100.0}});
    QCOMPARE(given.size(), std::size_t(2));
    const auto parts = net::splitByShares(20, net::sharesFromSpeeds({300.0, 100.0}));
    QCOMPARE(given[0], (std::vector<Range>{{70, parts[0]}}));
    QCOMPARE(given[1], (std::vector<Range>{{70 + parts[0], parts[1]}}));
    QVERIFY(!book.hasOrphans());
    // The takers train them after their own part, in that order.
    QCOMPARE(book.ranges(0), (std::vector<Range>{{0, 30}, {70, parts[0]}}));
    // Taking more and then leaving: what its pushes covered counts in order through its ranges.
    book.applied(0, 35); // all of 0..29 and 5 of the taken ones
    book.orphanRest(0);
    QCOMPARE(book.lostApplied(), std::int64_t(10 + 35));
    QCOMPARE(book.orphaned(), std::int64_t(parts[0] - 5));
}

void TestAsyncShardBook::orphansOfSeveralMembersAreEachTrainedOnce()
{
    AsyncShardBook book;
    const std::vector<double> shares{0.1, 0.2, 0.3, 0.4};
    const auto p = net::splitByShares(1000, shares);
    book.assign({0, 1, 2, 3}, 1000, shares);
    const auto mine = book.ranges(0);
    book.applied(1, 57);
    book.applied(3, 123);
    book.orphanRest(1);
    book.orphanRest(3);
    const std::int64_t orphaned = book.orphaned();
    QCOMPARE(orphaned, std::int64_t(1000 - p[0] - p[2] - 57 - 123));
    const auto given = book.handOut({{0, 120.0}, {2, 90.0}});
    std::vector<Range> all = mine;
    for (const auto &g : given)
        all.insert(all.end(), g.begin(), g.end());
    all.push_back(book.ranges(2).front()); // its own part, then what it took
    // What the survivors train now and what the lost ones trained: every sample once.
    std::vector<Range> trained = all;
    trained.emplace_back(p[0], 57);                // member 1's applied
    trained.emplace_back(p[0] + p[1] + p[2], 123); // member 3's applied
    QCOMPARE(samplesOf(trained), iota(0, 1000));
}

void TestAsyncShardBook::withoutTakersTheOrphansAreDropped()
{
    AsyncShardBook book;
    book.assign({0, 1}, 10, {0.5, 0.5});
    book.orphanRest(1);
    QVERIFY(book.hasOrphans());
    QVERIFY(book.handOut(std::vector<AsyncShardBook::Taker>{}).empty());
    QVERIFY(!book.hasOrphans());
    QCOMPARE(book.orphaned(), std::int64_t(0));
}

void TestAsyncShardBook::takersAreAnsweredWithTheirRanges()
{
    using net::Member;
    std::vector<std::unique_ptr<Member>> members;
    for (int id = 0; id < 3; ++id) {
        members.push_back(testMember(id, 100.0));
        members.back()->ready.takes_more = id != 1; // node-1 is of an older version
        members.back()->wait(Member::Waits::EpochEnd, 40 + id);
    }
    members.push_back(testMember(3));
    AsyncShardBook book;
    book.assign({0, 1, 2, 3}, 400, {0.25, 0.25, 0.25, 0.25});
    book.orphanRest(3); // 300..399
    const auto handed = book.handOut({members[0].get(), members[1].get(), members[2].get()}, 4);
    QCOMPARE(handed.takers, (std::vector<Member *>{members[0].get(), members[2].get()}));
    QCOMPARE(handed.summary,
             QStringLiteral("100 samples of epoch 4 that a lost node had not trained: node-0 50, "
                            "node-2 50"));
    const auto reply = linkOf(*members[0]).replyTo<net::TrainingReply>(40);
    QVERIFY(reply.has_value());
    QVERIFY(reply->action == net::ReplyAction::More);
    QCOMPARE(reply->ranges, (std::vector<Range>{{300, 50}}));
    QCOMPARE(linkOf(*members[2]).replyTo<net::TrainingReply>(42)->ranges,
             (std::vector<Range>{{350, 50}}));
    QVERIFY(linkOf(*members[1]).sent.empty()); // stays at the barrier
    QVERIFY(members[1]->waits(Member::Waits::EpochEnd));
    QVERIFY(!members[0]->waits(Member::Waits::EpochEnd));
}

void TestAsyncShardBook::aNewEpochForgetsTheLastOne()
{
    AsyncShardBook book;
    book.assign({0, 1}, 10, {0.5, 0.5});
    book.applied(1, 2);
    book.orphanRest(1);
    book.assign({0}, 10, {1.0});
    QCOMPARE(book.lostApplied(), std::int64_t(0));
    QVERIFY(!book.hasOrphans());
    QCOMPARE(book.ranges(0), (std::vector<Range>{{0, 10}}));
    book.clear();
    QVERIFY(book.ranges(0).empty());
}

QTEST_GUILESS_MAIN(TestAsyncShardBook)
#include "tst_asyncshardbook.moc"

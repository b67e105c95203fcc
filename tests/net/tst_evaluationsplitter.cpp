// The epoch's evaluation spread over the members (net::EvaluationSplitter): the test set split by
// speed, the parts reported, and a part that a member who left did not report evaluated by the
// others, so the epoch's figures are of the whole test set.

#include "coordinatortestmembers.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/coordinator/evaluationsplitter.h"
#include "net/training/job.h"

#include <QTest>

using namespace edgetrain;
using net::EvaluationSplitter;
using net::Member;

namespace {

std::vector<std::unique_ptr<Member>> atEpochEnd(const std::vector<double> &speeds,
                                                std::int64_t testSamples = 1000)
{
    std::vector<std::unique_ptr<Member>> members;
    for (std::size_t i = 0; i < speeds.size(); ++i) {
        members.push_back(testMember(int(i), speeds[i]));
        members.back()->ready.test_samples = testSamples;
        members.back()->ready.evaluates_more = true;
        members.back()->wait(Member::Waits::EpochEnd, 10);
    }
    return members;
}

net::EpochEval evaluated(double loss, std::int64_t correct, std::int64_t count)
{
    net::EpochEval e;
    e.loss_sum = loss;
    e.correct = correct;
    e.count = count;
    return e;
}

/** The training answer to request `request` on the member's link. */
std::optional<net::TrainingReply> answerTo(const Member &m, qint64 request)
{
    return linkOf(m).replyTo<net::TrainingReply>(request);
}

} // namespace

class TestEvaluationSplitter : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void theTestSetIsSplitBySpeed();
    void aStopIsNoEvaluation();
    void reportsAreSummed();
    void aLeavingMembersPartGoesToTheOthers();
    void withoutTakersThePartIsDropped();
};

void TestEvaluationSplitter::theTestSetIsSplitBySpeed()
{
    auto members = atEpochEnd({100, 100, 200});
    members[1]->ready.test_samples = 800; // the smallest test set any of them has
    EvaluationSplitter split;
    split.split(pointers(members), false, QByteArray("weights"));
    const auto parts = net::splitByShares(800, net::sharesFromSpeeds({100, 100, 200}));
    std::int64_t begin = 0;
    for (std::size_t i = 0; i < members.size(); ++i) {
        const auto answer = answerTo(*members[i], 10);
        QVERIFY(answer.has_value());
        QVERIFY(answer->action == net::ReplyAction::Evaluate);
        QVERIFY(answer->test_part == EvaluationSplitter::Part(begin, begin + parts[i]));
        QVERIFY(answer->weights == QByteArray("weights"));
        QCOMPARE(split.outstanding(int(i)), EvaluationSplitter::Part(begin, begin + parts[i]));
        QVERIFY(!members[i]->waits(Member::Waits::EpochEnd));
        begin += parts[i];
    }
    QCOMPARE(begin, std::int64_t(800));
    // No weights to send (the collective modes: every node holds the model).
    auto again = atEpochEnd({100});
    split.split(pointers(again), false, {});
    QVERIFY(!answerTo(*again[0], 10)->weights.has_value());
}

void TestEvaluationSplitter::aStopIsNoEvaluation()
{
    auto members = atEpochEnd({100, 100});
    EvaluationSplitter split;
    split.split(pointers(members), true, {});
    for (const auto &m : members) {
        QVERIFY(answerTo(*m, 10)->action == net::ReplyAction::Stop);
        QCOMPARE(split.outstanding(m->id), EvaluationSplitter::Part(0, 0));
    }
    split.leave(0);
    QVERIFY(!split.hasUntested());
}

void TestEvaluationSplitter::reportsAreSummed()
{
    auto members = atEpochEnd({100, 100});
    EvaluationSplitter split;
    split.split(pointers(members), false, {});
    split.reported(0, evaluated(25.0, 400, 500));
    split.reported(1, evaluated(35.0, 300, 500));
    QCOMPARE(split.outstanding(0), EvaluationSplitter::Part(0, 0));
    const auto total = split.total({0, 1});
    QCOMPARE(total.loss, 60.0);
    QCOMPARE(total.correct, std::int64_t(700));
    QCOMPARE(total.count, std::int64_t(1000));
    QCOMPARE(split.total({1}).count, std::int64_t(500));
    split.endEpoch();
    QCOMPARE(split.total({0, 1}).count, std::int64_t(0));
}

void TestEvaluationSplitter::aLeavingMembersPartGoesToTheOthers()
{
    auto members = atEpochEnd({100, 100, 100}, 900);
    EvaluationSplitter split;
    split.split(pointers(members), false, {});
    const auto lostPart = split.outstanding(2);
    QVERIFY(lostPart.second > lostPart.first);
    // Member 1 reports and leaves (its figures still count); member 2 leaves without reporting.
    split.reported(0, evaluated(10.0, 200, 300));
    split.reported(1, evaluated(20.0, 100, 300));
    split.leave(1);
    split.leave(2);
    QVERIFY(split.hasUntested());
    QCOMPARE(split.total({0}).count, std::int64_t(600));
    members[0]->ready.evaluates_more = false; // an older node
    auto taker = testMember(3);
    taker->ready.evaluates_more = true;
    for (Member *m : {members[0].get(), taker.get()})
        m->wait(Member::Waits::Evaluation, 20);
    QVERIFY(split.handOutUntested({members[0].get(), taker.get()}, 4));
    QVERIFY(!split.hasUntested());
    QVERIFY(!linkOf(*members[0]).replyTo(20).has_value()); // it waits at the barrier
    const auto answer = answerTo(*taker, 20);
    QVERIFY(answer.has_value());
    QVERIFY(answer->action == net::ReplyAction::Evaluate);
    QVERIFY(answer->test_part == lostPart);
    split.reported(3, evaluated(5.0, 250, 300));
    const auto total = split.total({0, 3});
    QCOMPARE(total.count, std::int64_t(900)); // the whole test set
    QCOMPARE(total.correct, std::int64_t(550));
    QCOMPARE(total.loss, 35.0);
}

void TestEvaluationSplitter::withoutTakersThePartIsDropped()
{
    auto members = atEpochEnd({100, 100});
    EvaluationSplitter split;
    split.split(pointers(members), false, {});
    split.reported(0, evaluated(10.0, 200, 500));
    split.leave(1);
    members[0]->ready.evaluates_more = false;
    members[0]->wait(Member::Waits::Evaluation, 20);
    QVERIFY(!split.handOutUntested({members[0].get()}, 1));
    QVERIFY(!split.hasUntested());
    QVERIFY(!linkOf(*members[0]).replyTo(20).has_value());
    QCOMPARE(split.total({0}).count, std::int64_t(500)); // reported without that part
}

QTEST_GUILESS_MAIN(TestEvaluationSplitter)
#include "tst_evaluationsplitter.moc"

// Async mode's parameter server as the workers reach it (net::ParameterServerEndpoint), without a
// process: members on recording links pull and push; a push that runs past the staleness bound is
// held until the slowest catches up; a malformed one is refused with a stop; an epoch's end checks
// what the worker holds against the server's mirror of it.

#include "core/zoo.h"
#include "fakememberlink.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/compressedexchange.h"
#include "net/training/coordinator/member.h"
#include "net/training/coordinator/parameterserverendpoint.h"
#include "net/training/job.h"
#include "net/training/parameterserver.h"

#include <QTest>

#include <cstring>

using namespace edgetrain;
using net::Member;

namespace {

net::JobSpec asyncJob(int staleness)
{
    net::JobSpec job;
    job.mode = net::TrainingMode::Async;
    job.model = core::Zoo::resolve("mlp").toJson();
    job.seed = 3;
    job.batch = 64;
    job.lr = 0.1;
    job.staleness = staleness;
    return job;
}

std::unique_ptr<Member> member(int id)
{
    auto m = std::make_unique<Member>();
    m->id = id;
    m->node = {QStringLiteral("node-%1").arg(id), QStringLiteral("127.0.0.1"), quint16(id + 1)};
    m->link = std::make_unique<FakeMemberLink>(m->node.name);
    m->state = Member::State::Training;
    return m;
}

FakeMemberLink &linkOf(const Member &m)
{
    return static_cast<FakeMemberLink &>(*m.link);
}

/** A float32 push of `floats` values of 0.01 for weights of `version`. */
net::GradientPush push(std::size_t floats, std::uint64_t version, std::int64_t samples = 32)
{
    std::vector<float> gradient(floats, 0.01f);
    net::GradientPush p;
    p.gradient = QByteArray(reinterpret_cast<const char *>(gradient.data()),
                            qsizetype(floats * sizeof(float)));
    p.version = std::int64_t(version);
    p.lr = 0.1;
    p.count = samples;
    return p;
}

/** The weights answer to request `request` on the member's link. */
std::optional<net::WeightsReply> answer(const Member &m, qint64 request)
{
    return linkOf(m).replyTo<net::WeightsReply>(request);
}

std::vector<float> floatsOf(const QByteArray &bytes)
{
    std::vector<float> out(std::size_t(bytes.size()) / sizeof(float));
    std::memcpy(out.data(), bytes.constData(), out.size() * sizeof(float));
    return out;
}

} // namespace

class TestParameterServerEndpoint : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void pullAnswersTheWeights();
    void pushIsAppliedAndAnswered();
    void aPushPastTheBoundIsHeldUntilTheSlowestCatchesUp();
    void aLeavingWorkerHoldsNobodyBack();
    void malformedPushIsRefusedWithAStop();
    void compressedPushGetsADelta();
    void epochEndChecksTheMirror();
};

void TestParameterServerEndpoint::pullAnswersTheWeights()
{
    net::ParameterServerEndpoint ps(asyncJob(4));
    auto m = member(0);
    ps.join(0);
    ps.pull(*m, 1);
    const auto reply = answer(*m, 1);
    QVERIFY(reply.has_value());
    QCOMPARE(reply->version, std::int64_t(0));
    QVERIFY(!reply->delta);
    QCOMPARE(floatsOf(reply->weights), ps.server().weights());
    QCOMPARE(ps.resultBytes().size(), qsizetype(ps.server().weights().size() * sizeof(float)));
}

void TestParameterServerEndpoint::pushIsAppliedAndAnswered()
{
    net::ParameterServerEndpoint ps(asyncJob(4));
    auto m = member(0);
    ps.join(0);
    ps.pull(*m, 1);
    const std::vector<float> before = ps.server().weights();
    const auto outcome = ps.push(*m, 2, push(ps.server().pushSize(), 0, 24));
    QVERIFY(!outcome.malformed);
    QCOMPARE(outcome.samples, std::int64_t(24));
    const auto reply = answer(*m, 2);
    QVERIFY(reply.has_value());
    QCOMPARE(reply->version, std::int64_t(1));
    const std::vector<float> after = floatsOf(reply->weights);
    QCOMPARE(after, ps.server().weights());
    QVERIFY(after != before);
    QCOMPARE(ps.server().pushes(), std::int64_t(1));
}

void TestParameterServerEndpoint::aPushPastTheBoundIsHeldUntilTheSlowestCatchesUp()
{
    net::ParameterServerEndpoint ps(asyncJob(1));
    auto fast = member(0), slow = member(1);
    ps.join(0);
    ps.join(1);
    const std::size_t floats = ps.server().pushSize();
    ps.push(*fast, 1, push(floats, ps.server().version()));
    QVERIFY(linkOf(*fast).replyTo(1).has_value());
    ps.push(*fast, 2, push(floats, ps.server().version())); // two ahead of a bound of one
    QVERIFY(!linkOf(*fast).replyTo(2).has_value());
    QVERIFY(fast->waits(Member::Waits::Push));
    QCOMPARE(ps.server().held(), std::int64_t(1));
    ps.releaseHeld({fast.get(), slow.get()});
    QVERIFY(!linkOf(*fast).replyTo(2).has_value()); // the slowest has not moved
    ps.push(*slow, 1, push(floats, 0));
    ps.releaseHeld({fast.get(), slow.get()});
    QVERIFY(linkOf(*fast).replyTo(2).has_value());
    QVERIFY(!fast->waits(Member::Waits::Push));
    QCOMPARE(answer(*fast, 2)->version, std::int64_t(ps.server().version()));
}

void TestParameterServerEndpoint::aLeavingWorkerHoldsNobodyBack()
{
    net::ParameterServerEndpoint ps(asyncJob(1));
    auto fast = member(0), slow = member(1), gone = member(2);
    for (const int id : {0, 1, 2})
        ps.join(id);
    const std::size_t floats = ps.server().pushSize();
    ps.push(*fast, 1, push(floats, ps.server().version()));
    ps.push(*fast, 2, push(floats, ps.server().version()));
    ps.push(*slow, 1, push(floats, 0));
    ps.releaseHeld({fast.get(), slow.get(), gone.get()});
    QVERIFY(!linkOf(*fast).replyTo(2).has_value()); // `gone` has pushed nothing yet
    ps.leave(2);
    ps.releaseHeld({fast.get(), slow.get()});
    QVERIFY(linkOf(*fast).replyTo(2).has_value());
    // At the epoch's barrier a worker holds nobody back either.
    ps.push(*fast, 3, push(floats, ps.server().version())); // two ahead of `slow` again
    QVERIFY(!linkOf(*fast).replyTo(3).has_value());
    ps.epochDone(*slow, net::EpochDone{});
    ps.releaseHeld({fast.get(), slow.get()});
    QVERIFY(linkOf(*fast).replyTo(3).has_value());
}

void TestParameterServerEndpoint::malformedPushIsRefusedWithAStop()
{
    net::ParameterServerEndpoint ps(asyncJob(4));
    auto m = member(0);
    ps.join(0);
    const auto shortPush = ps.push(*m, 1, push(ps.server().pushSize() - 1, 0));
    QVERIFY(shortPush.malformed);
    QVERIFY(answer(*m, 1)->stop);
    const auto future = ps.push(*m, 2, push(ps.server().pushSize(), 99)); // a version to come
    QVERIFY(future.malformed);
    QVERIFY(answer(*m, 2)->stop);
    QCOMPARE(ps.server().version(), std::uint64_t(0));
}

void TestParameterServerEndpoint::compressedPushGetsADelta()
{
    net::ParameterServerEndpoint ps(asyncJob(4));
    auto m = member(0);
    ps.join(0);
    ps.pull(*m, 1); // the worker's mirror: what it holds
    const std::size_t gradients = ps.server().gradientSize();
    const std::size_t buffers = ps.server().pushSize() - gradients;
    std::vector<float> gradient(gradients, 0.01f), buffer(buffers, 0.0f);
    net::GradientPush compressed = push(0, 0);
    compressed.compressed = true;
    compressed.gradient = {};
    compressed.gradient_bf16 = net::CompressedExchange::encode(gradient.data(), gradients);
    compressed.buffers = QByteArray(reinterpret_cast<const char *>(buffer.data()),
                                    qsizetype(buffers * sizeof(float)));
    QVERIFY(!ps.push(*m, 2, compressed).malformed);
    const auto reply = answer(*m, 2);
    QVERIFY(reply.has_value());
    QVERIFY(reply->delta);
    // A worker that never pulled has no mirror: the full weights.
    auto fresh = member(1);
    ps.join(1);
    QVERIFY(!ps.push(*fresh, 1, compressed).malformed);
    QVERIFY(!answer(*fresh, 1)->delta);
    QCOMPARE(answer(*fresh, 1)->weights.size(), qsizetype(ps.server().weights().size() * 4));
}

void TestParameterServerEndpoint::epochEndChecksTheMirror()
{
    net::ParameterServerEndpoint ps(asyncJob(4));
    auto m = member(0);
    ps.join(0);
    ps.pull(*m, 1);
    net::EpochDone done;
    QVERIFY(!ps.server().mirrorFingerprint(0).isEmpty());
    ps.epochDone(*m, done); // an older node says nothing
    QCOMPARE(ps.mirrorChecks(), std::int64_t(0));
    done.held_fingerprint = ps.server().mirrorFingerprint(0);
    ps.epochDone(*m, done);
    QCOMPARE(ps.mirrorChecks(), std::int64_t(1));
    QCOMPARE(ps.mirrorMismatches(), std::int64_t(0));
    done.held_fingerprint = QStringLiteral("00ff");
    ps.epochDone(*m, done);
    QCOMPARE(ps.mirrorChecks(), std::int64_t(2));
    QCOMPARE(ps.mirrorMismatches(), std::int64_t(1));
}

QTEST_GUILESS_MAIN(TestParameterServerEndpoint)
#include "tst_parameterserverendpoint.moc"

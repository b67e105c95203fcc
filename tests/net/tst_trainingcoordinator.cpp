// The coordinator as a whole (net::TrainingCoordinator) without a process: nodes played by
// recording links send what a node's worker sends, and the coordinator's answers, events, epochs
// and result are checked: a sync run through its barriers, a node lost mid-epoch and the group
// formed again, a stop, async's malformed push, and messages nobody expects.

#include "core/zoo.h"
#include "fakememberlink.h"
#include "net/protocol/messages/coordinatorreplies.h"
#include "net/protocol/messages/storerequest.h"
#include "net/protocol/messages/workermessages.h"
#include "net/training/coordinator/memberlink.h"
#include "net/training/job.h"
#include "net/training/trainingcoordinator.h"

#include <QSignalSpy>
#include <QTest>

#include <cstring>
#include <memory>

using namespace edgetrain;

namespace {

net::JobSpec job(net::TrainingMode mode, int epochs)
{
    net::JobSpec j;
    j.id = QStringLiteral("fake");
    j.mode = mode;
    j.model = core::Zoo::resolve("mlp").toJson();
    j.epochs = epochs;
    j.batch = 64;
    j.lr = 0.1;
    return j;
}

QCborMap ready(double imagesPerSecond)
{
    net::JobReady r;
    r.images_per_second = imagesPerSecond;
    r.train_samples = 1000;
    r.test_samples = 100;
    return r.toCbor();
}

/** A collective mode's epoch_done: the group's sums. */
QCborMap epochDone(int epoch)
{
    net::EpochDone d;
    d.epoch = epoch;
    d.seconds = 2.0;
    d.global = true;
    d.loss_sum = 50.0;
    d.correct = 600.0;
    d.seen = 1000.0;
    d.targets = 1000.0;
    return d.toCbor();
}

QCborMap evaluated(int epoch, double loss, std::int64_t correct, std::int64_t count)
{
    net::EpochEval e;
    e.epoch = epoch;
    e.loss_sum = loss;
    e.correct = correct;
    e.count = count;
    return e.toCbor();
}

QCborMap collectiveFailed(const QString &message)
{
    net::CollectiveFailed f;
    f.step = 3;
    f.message = message;
    return f.toCbor();
}

QCborMap jobDone(const QString &fingerprint, bool cancelled = false)
{
    net::JobDone d;
    d.fingerprint = fingerprint;
    d.cancelled = cancelled;
    return d.toCbor();
}

/** The coordinator and the links it was started on (owned by it; lost ones are destroyed). */
struct Run
{
    std::unique_ptr<net::TrainingCoordinator> coordinator;
    std::vector<FakeMemberLink *> nodes;

    explicit Run(const net::JobSpec &spec)
        : coordinator(std::make_unique<net::TrainingCoordinator>(spec, "key"))
    {
        coordinator->setRejoin(false);
    }
    void start(int n)
    {
        std::vector<std::unique_ptr<net::MemberLink>> links;
        for (int i = 0; i < n; ++i) {
            auto link = std::make_unique<FakeMemberLink>(QStringLiteral("node-%1").arg(i),
                                                         quint16(40000 + i));
            nodes.push_back(link.get());
            links.push_back(std::move(link));
        }
        coordinator->start(std::move(links));
    }
};

/** The training answer to request `request` on `node`. */
std::optional<net::TrainingReply> answer(const FakeMemberLink *node, qint64 request)
{
    return node->replyTo<net::TrainingReply>(request);
}

} // namespace

class TestTrainingCoordinator : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void aSyncRunGoesThroughItsBarriers();
    void aNodeLostMidEpochLeavesAGroupOfTheOthers();
    void aFailedCollectiveRegroupsEveryone();
    void stopEndsTheRunCancelled();
    void aMalformedPushPutsANodeOutOfTheRun();
    void messagesAreDispatchedByType();
    void nobodyReadyEndsTheRun();
};

void TestTrainingCoordinator::aSyncRunGoesThroughItsBarriers()
{
    Run run(job(net::TrainingMode::Sync, 2));
    QSignalSpy started(run.coordinator.get(), &net::TrainingCoordinator::trainingStarted);
    QSignalSpy epochs(run.coordinator.get(), &net::TrainingCoordinator::epochFinished);
    QSignalSpy finished(run.coordinator.get(), &net::TrainingCoordinator::finished);
    run.start(2);
    for (FakeMemberLink *n : run.nodes)
        QCOMPARE(n->count(net::Message::Job), 1);
    run.nodes[0]->receive(net::Message::JobReady, ready(100), 1);
    QVERIFY(!run.nodes[0]->replyTo(1).has_value()); // the group waits for every node
    QCOMPARE(started.count(), 0);
    run.nodes[1]->receive(net::Message::JobReady, ready(300), 1);
    QCOMPARE(started.count(), 1);
    for (int i = 0; i < 2; ++i) {
        const auto start = answer(run.nodes[std::size_t(i)], 1);
        QVERIFY(start && start->action == net::ReplyAction::Start && start->group);
        const net::GroupSpec g = *start->group;
        QCOMPARE(g.generation, 0);
        QCOMPARE(g.rank, i);
        QCOMPARE(g.size, 2);
        QVERIFY(std::abs(g.shares[0] - 0.25) < 1e-12); // by speed
    }
    qint64 request = 2;
    for (int epoch = 1; epoch <= 2; ++epoch, request += 2) {
        run.nodes[0]->receive(net::Message::EpochDone, epochDone(epoch), request);
        QVERIFY(!run.nodes[0]->replyTo(request).has_value());
        run.nodes[1]->receive(net::Message::EpochDone, epochDone(epoch), request);
        // The test set split by speed (a quarter and three quarters of its 100 samples).
        const auto parts = net::splitByShares(100, net::sharesFromSpeeds({100, 300}));
        QVERIFY(answer(run.nodes[0], request)->action == net::ReplyAction::Evaluate);
        QCOMPARE(answer(run.nodes[0], request)->test_part->second, parts[0]);
        QCOMPARE(answer(run.nodes[1], request)->test_part->first, parts[0]);
        run.nodes[0]->receive(net::Message::EpochEval, evaluated(epoch, 10.0, 20, parts[0]),
                              request + 1);
        QCOMPARE(epochs.count(), epoch - 1);
        run.nodes[1]->receive(net::Message::EpochEval, evaluated(epoch, 30.0, 60, parts[1]),
                              request + 1);
        QCOMPARE(epochs.count(), epoch);
        const auto e = epochs.last().at(0).value<net::ClusterEpoch>();
        QCOMPARE(e.epoch, epoch);
        QCOMPARE(e.samples, std::int64_t(1000));
        QCOMPARE(e.train_loss, 0.05);
        QCOMPARE(e.train_accuracy, 0.6);
        QCOMPARE(e.test_count, std::int64_t(100));
        QCOMPARE(e.test_loss, 0.4);
        QCOMPARE(e.test_accuracy, 0.8);
        QCOMPARE(e.images_per_second, 500.0);
        QCOMPARE(e.nodes, 2);
        for (FakeMemberLink *n : run.nodes)
            QVERIFY(answer(n, request + 1)->action == net::ReplyAction::Continue);
    }
    // The final weights: every rank sends them, rank 0's are the result.
    const std::vector<float> model{1.0f, 2.0f, 3.0f};
    const QByteArray bytes(reinterpret_cast<const char *>(model.data()), 12);
    net::WeightsChunk chunk;
    chunk.data = bytes;
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::Weights, chunk.toCbor());
    run.nodes[0]->receive(net::Message::JobDone, jobDone(QStringLiteral("f0")));
    QCOMPARE(finished.count(), 0);
    run.nodes[1]->receive(net::Message::JobDone, jobDone(QStringLiteral("f1")));
    QCOMPARE(finished.count(), 1);
    const net::ClusterResult &r = run.coordinator->result();
    QVERIFY(r.finished);
    QVERIFY2(r.error.isEmpty(), qPrintable(r.error));
    QCOMPARE(r.epochs.size(), std::size_t(2));
    QCOMPARE(r.generations, 1);
    QCOMPARE(r.weights, model);
    QCOMPARE(r.fingerprints.size(), std::size_t(2));
    QVERIFY(r.events.empty());
}

void TestTrainingCoordinator::aNodeLostMidEpochLeavesAGroupOfTheOthers()
{
    Run run(job(net::TrainingMode::Sync, 3));
    QSignalSpy events(run.coordinator.get(), &net::TrainingCoordinator::clusterEvent);
    run.start(3);
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::JobReady, ready(100), 1);
    // A store wait of node-2 is pending when it goes: nobody answers a link that is gone.
    net::StoreRequest wait;
    wait.kind = net::StoreRequest::Kind::Wait;
    wait.keys = {QStringLiteral("gen-0/x")};
    wait.timeout_ms = 10000;
    run.nodes[2]->receive(wait.messageType(), wait.toCbor(), 5);
    FakeMemberLink *survivor0 = run.nodes[0], *survivor1 = run.nodes[1];
    run.nodes[2]->lose(QStringLiteral("stopped answering")); // destroyed by the coordinator
    QCOMPARE(events.count(), 1);
    const auto lost = events.last().at(0).value<net::ClusterEvent>();
    QCOMPARE(lost.kind, net::ClusterEventKind::Lost);
    QCOMPARE(lost.node.name, QStringLiteral("node-2"));
    QCOMPARE(lost.message, QStringLiteral("stopped answering"));
    // The others' collective fails (or one reaches its epoch's end first): a new group of two.
    survivor0->receive(net::Message::CollectiveFailed,
                       collectiveFailed(QStringLiteral("peer gone")), 2);
    QVERIFY(!survivor0->replyTo(2).has_value());
    survivor1->receive(net::Message::EpochDone, epochDone(1), 2);
    for (FakeMemberLink *n : {survivor0, survivor1}) {
        QVERIFY(answer(n, 2)->action == net::ReplyAction::Regroup);
        const net::GroupSpec g = *answer(n, 2)->group;
        QCOMPARE(g.generation, 1);
        QCOMPARE(g.size, 2);
    }
    QCOMPARE(events.last().at(0).value<net::ClusterEvent>().kind, net::ClusterEventKind::Regrouped);
    QCOMPARE(run.coordinator->result().generations, 2);
    // The loss broke the group already: the collective's failure is no news.
    for (const auto &e : run.coordinator->result().events)
        QVERIFY(e.kind != net::ClusterEventKind::CollectiveFailed);
}

void TestTrainingCoordinator::aFailedCollectiveRegroupsEveryone()
{
    Run run(job(net::TrainingMode::Sync, 2));
    run.start(2);
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::JobReady, ready(100), 1);
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::CollectiveFailed, collectiveFailed(QStringLiteral("timeout")), 2);
    for (FakeMemberLink *n : run.nodes) {
        QVERIFY(answer(n, 2)->action == net::ReplyAction::Regroup);
        QCOMPARE(answer(n, 2)->group->generation, 1);
        QCOMPARE(answer(n, 2)->group->size, 2);
    }
    const auto &events = run.coordinator->result().events;
    QCOMPARE(events.size(), std::size_t(2)); // noted once for the group, then its new group
    QCOMPARE(events[0].kind, net::ClusterEventKind::CollectiveFailed);
    QCOMPARE(events[0].node.name, QStringLiteral("node-0"));
    QCOMPARE(events[0].message, QStringLiteral("timeout"));
    QCOMPARE(events[1].kind, net::ClusterEventKind::Regrouped);
}

void TestTrainingCoordinator::stopEndsTheRunCancelled()
{
    Run run(job(net::TrainingMode::Sync, 5));
    QSignalSpy finished(run.coordinator.get(), &net::TrainingCoordinator::finished);
    run.start(2);
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::JobReady, ready(100), 1);
    run.nodes[0]->receive(net::Message::EpochDone, epochDone(1), 2);
    run.coordinator->stop();
    for (FakeMemberLink *n : run.nodes)
        QCOMPARE(n->count(net::Message::Stop), 1);
    run.nodes[1]->receive(net::Message::EpochDone, epochDone(1), 2);
    for (FakeMemberLink *n : run.nodes)
        QVERIFY(answer(n, 2)->action == net::ReplyAction::Stop); // no evaluation when stopping
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::JobDone, jobDone(QStringLiteral("f"), true));
    QCOMPARE(finished.count(), 1);
    QVERIFY(run.coordinator->result().cancelled);
    QVERIFY(run.coordinator->result().epochs.empty());
}

void TestTrainingCoordinator::aMalformedPushPutsANodeOutOfTheRun()
{
    Run run(job(net::TrainingMode::Async, 1));
    run.start(2);
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::JobReady, ready(100), 1);
    run.nodes[0]->receive(net::Message::PsPull, {}, 2);
    QVERIFY(!run.nodes[0]->replyTo<net::WeightsReply>(2)->weights.isEmpty());
    net::GradientPush tooShort; // three floats: not the model's gradients
    tooShort.gradient = QByteArray(12, '\0');
    tooShort.lr = 0.1;
    tooShort.count = 32;
    run.nodes[1]->receive(net::Message::PsPush, tooShort.toCbor(), 2);
    QVERIFY(run.nodes[1]->replyTo<net::WeightsReply>(2)->stop);
    const auto &events = run.coordinator->result().events;
    QCOMPARE(events.size(), std::size_t(1));
    QCOMPARE(events.front().kind, net::ClusterEventKind::Failed);
    QCOMPARE(events.front().message, QStringLiteral("sent a malformed gradient push"));
    // Out of the run: its next pull is answered with a stop.
    run.nodes[1]->receive(net::Message::PsPull, {}, 3);
    QVERIFY(run.nodes[1]->replyTo<net::WeightsReply>(3)->stop);
}

void TestTrainingCoordinator::messagesAreDispatchedByType()
{
    Run run(job(net::TrainingMode::Sync, 1));
    QSignalSpy progress(run.coordinator.get(), &net::TrainingCoordinator::nodeProgress);
    run.start(1);
    // The rendezvous host's: a set, and a store request of a kind it does not know.
    net::StoreRequest set;
    set.kind = net::StoreRequest::Kind::Set;
    set.keys = {QStringLiteral("gen-0/a")};
    set.value = "v";
    run.nodes[0]->receive(set.messageType(), set.toCbor(), 1);
    QVERIFY(run.nodes[0]->replyTo<net::StoreReply>(1).has_value());
    QVERIFY(run.nodes[0]->replyTo<net::StoreReply>(1)->error.isEmpty());
    run.nodes[0]->receive(QStringLiteral("store_list"), {}, 2);
    QVERIFY(
        run.nodes[0]->replyTo<net::StoreReply>(2)->error.contains(QLatin1String("unknown type")));
    run.nodes[0]->receive(net::Message::ExchangeProbe,
                          net::ExchangeProbeRequest{QStringLiteral("p"), 8}.toCbor(), 3);
    QCOMPARE(run.nodes[0]->replyTo<net::ExchangeProbeReply>(3)->error,
             QStringLiteral("this coordinator hosts no exchange probe"));
    net::TrainingStatus status;
    status.epoch = 1;
    run.nodes[0]->receive(net::Message::Progress, status.toCbor());
    QCOMPARE(progress.count(), 1);
    QCOMPARE(progress.last().at(1).value<net::TrainingStatus>().epoch, 1);
    const std::size_t sent = run.nodes[0]->sent.size();
    run.nodes[0]->receive(net::Message::JobAccepted);
    run.nodes[0]->receive(QStringLiteral("no_such_message"), {}, 4);
    QCOMPARE(run.nodes[0]->sent.size(), sent); // acknowledged, or ignored: nothing answered
    QVERIFY(run.coordinator->result().events.empty());
    // A refusal is the node's failure; with nobody left the run ends with its words.
    run.nodes[0]->receive(net::Message::JobRefused,
                          net::Failure{QStringLiteral("no such dataset")}.toCbor());
    const net::ClusterResult &r = run.coordinator->result();
    QVERIFY(!r.finished);
    QVERIFY2(r.error.contains(QLatin1String("no such dataset")), qPrintable(r.error));
}

void TestTrainingCoordinator::nobodyReadyEndsTheRun()
{
    Run run(job(net::TrainingMode::Sync, 1));
    QSignalSpy finished(run.coordinator.get(), &net::TrainingCoordinator::finished);
    run.start(0);
    QCOMPARE(finished.count(), 1);
    QCOMPARE(run.coordinator->result().error, QStringLiteral("no nodes to train on"));
}

QTEST_GUILESS_MAIN(TestTrainingCoordinator)
#include "tst_trainingcoordinator.moc"

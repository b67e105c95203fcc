// The coordinator as a whole (net::TrainingCoordinator) without a process: nodes played by
// recording links send what a node's worker sends, and the coordinator's answers, events, epochs
// and result are checked: a sync run through its barriers, a node lost mid-epoch and the group
// formed again, a stop, async's malformed push, and messages nobody expects.

#include "core/zoo.h"
#include "fakememberlink.h"
#include "net/training/coordinator/memberlink.h"
#include "net/training/job.h"
#include "net/training/trainingcoordinator.h"

#include <QCborArray>
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
    return QCborMap{{QStringLiteral("images_per_second"), imagesPerSecond},
                    {QStringLiteral("train_samples"), 1000},
                    {QStringLiteral("test_samples"), 100}};
}

/** A collective mode's epoch_done: the group's sums. */
QCborMap epochDone(int epoch)
{
    return QCborMap{{QStringLiteral("epoch"), epoch},   {QStringLiteral("seconds"), 2.0},
                    {QStringLiteral("global"), true},   {QStringLiteral("loss_sum"), 50.0},
                    {QStringLiteral("correct"), 600.0}, {QStringLiteral("seen"), 1000.0},
                    {QStringLiteral("targets"), 1000.0}};
}

QCborMap evaluated(double loss, std::int64_t correct, std::int64_t count)
{
    return QCborMap{{QStringLiteral("loss_sum"), loss},
                    {QStringLiteral("correct"), qint64(correct)},
                    {QStringLiteral("count"), qint64(count)}};
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

net::GroupSpec groupIn(const QCborMap &answer, const QString &field = QStringLiteral("group"))
{
    QString error;
    return net::GroupSpec::fromCbor(answer.value(field).toMap(), &error).value_or(net::GroupSpec{});
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
        const auto start = run.nodes[std::size_t(i)]->replyTo(1);
        QCOMPARE(start->value(net::Action::Field).toString(), QString(net::Action::Start));
        const net::GroupSpec g = groupIn(*start);
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
        QCOMPARE(run.nodes[0]->actionTo(request), QString(net::Action::Evaluate));
        QCOMPARE(run.nodes[0]->replyTo(request)->value(QStringLiteral("test_end")).toInteger(),
                 qint64(parts[0]));
        QCOMPARE(run.nodes[1]->replyTo(request)->value(QStringLiteral("test_begin")).toInteger(),
                 qint64(parts[0]));
        run.nodes[0]->receive(net::Message::EpochEval, evaluated(10.0, 20, parts[0]), request + 1);
        QCOMPARE(epochs.count(), epoch - 1);
        run.nodes[1]->receive(net::Message::EpochEval, evaluated(30.0, 60, parts[1]), request + 1);
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
            QCOMPARE(n->actionTo(request + 1), QString(net::Action::Continue));
    }
    // The final weights: every rank sends them, rank 0's are the result.
    const std::vector<float> model{1.0f, 2.0f, 3.0f};
    const QByteArray bytes(reinterpret_cast<const char *>(model.data()), 12);
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::Weights, QCborMap{{QStringLiteral("index"), 0},
                                                   {QStringLiteral("total"), 1},
                                                   {QStringLiteral("data"), bytes}});
    run.nodes[0]->receive(net::Message::JobDone,
                          {{QStringLiteral("fingerprint"), QStringLiteral("f0")}});
    QCOMPARE(finished.count(), 0);
    run.nodes[1]->receive(net::Message::JobDone,
                          {{QStringLiteral("fingerprint"), QStringLiteral("f1")}});
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
    run.nodes[2]->receive(net::Message::StoreWait,
                          QCborMap{{QStringLiteral("keys"), QCborArray{QStringLiteral("gen-0/x")}}},
                          5);
    FakeMemberLink *survivor0 = run.nodes[0], *survivor1 = run.nodes[1];
    run.nodes[2]->lose(QStringLiteral("stopped answering")); // destroyed by the coordinator
    QCOMPARE(events.count(), 1);
    const auto lost = events.last().at(0).value<net::ClusterEvent>();
    QCOMPARE(lost.kind, net::ClusterEventKind::Lost);
    QCOMPARE(lost.node.name, QStringLiteral("node-2"));
    QCOMPARE(lost.message, QStringLiteral("stopped answering"));
    // The others' collective fails (or one reaches its epoch's end first): a new group of two.
    survivor0->receive(net::Message::CollectiveFailed,
                       QCborMap{{QStringLiteral("message"), QStringLiteral("peer gone")}}, 2);
    QVERIFY(!survivor0->replyTo(2).has_value());
    survivor1->receive(net::Message::EpochDone, epochDone(1), 2);
    for (FakeMemberLink *n : {survivor0, survivor1}) {
        QCOMPARE(n->actionTo(2), QString(net::Action::Regroup));
        const net::GroupSpec g = groupIn(*n->replyTo(2));
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
        n->receive(net::Message::CollectiveFailed,
                   QCborMap{{QStringLiteral("message"), QStringLiteral("timeout")}}, 2);
    for (FakeMemberLink *n : run.nodes) {
        QCOMPARE(n->actionTo(2), QString(net::Action::Regroup));
        QCOMPARE(groupIn(*n->replyTo(2)).generation, 1);
        QCOMPARE(groupIn(*n->replyTo(2)).size, 2);
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
        QCOMPARE(n->actionTo(2), QString(net::Action::Stop)); // no evaluation when stopping
    for (FakeMemberLink *n : run.nodes)
        n->receive(net::Message::JobDone, {{QStringLiteral("cancelled"), true}});
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
    QVERIFY(run.nodes[0]->replyTo(2)->contains(QStringLiteral("weights")));
    run.nodes[1]->receive(net::Message::PsPush,
                          QCborMap{{QStringLiteral("gradient"), QByteArray(12, '\0')},
                                   {QStringLiteral("version"), 0},
                                   {QStringLiteral("lr"), 0.1},
                                   {QStringLiteral("count"), 32}},
                          2);
    QCOMPARE(run.nodes[1]->actionTo(2), QString(net::Action::Stop));
    const auto &events = run.coordinator->result().events;
    QCOMPARE(events.size(), std::size_t(1));
    QCOMPARE(events.front().kind, net::ClusterEventKind::Failed);
    QCOMPARE(events.front().message, QStringLiteral("sent a malformed gradient push"));
    // Out of the run: its next pull is answered with a stop.
    run.nodes[1]->receive(net::Message::PsPull, {}, 3);
    QCOMPARE(run.nodes[1]->actionTo(3), QString(net::Action::Stop));
}

void TestTrainingCoordinator::messagesAreDispatchedByType()
{
    Run run(job(net::TrainingMode::Sync, 1));
    QSignalSpy progress(run.coordinator.get(), &net::TrainingCoordinator::nodeProgress);
    run.start(1);
    // The rendezvous host's: a set, and a store request of a kind it does not know.
    run.nodes[0]->receive(net::Message::StoreSet,
                          QCborMap{{QStringLiteral("key"), QStringLiteral("gen-0/a")},
                                   {QStringLiteral("value"), QByteArray("v")}},
                          1);
    QVERIFY(run.nodes[0]->replyTo(1).has_value());
    QVERIFY(!run.nodes[0]->replyTo(1)->contains(QStringLiteral("error")));
    run.nodes[0]->receive(QStringLiteral("store_list"), {}, 2);
    QVERIFY(run.nodes[0]
                ->replyTo(2)
                ->value(QStringLiteral("error"))
                .toString()
                .contains(QLatin1String("unknown type")));
    run.nodes[0]->receive(net::Message::ExchangeProbe, {}, 3);
    QCOMPARE(run.nodes[0]->replyTo(3)->value(QStringLiteral("error")).toString(),
             QStringLiteral("this coordinator hosts no exchange probe"));
    run.nodes[0]->receive(net::Message::Progress, {{QStringLiteral("epoch"), 1}});
    QCOMPARE(progress.count(), 1);
    const std::size_t sent = run.nodes[0]->sent.size();
    run.nodes[0]->receive(net::Message::JobAccepted);
    run.nodes[0]->receive(QStringLiteral("no_such_message"), {}, 4);
    QCOMPARE(run.nodes[0]->sent.size(), sent); // acknowledged, or ignored: nothing answered
    QVERIFY(run.coordinator->result().events.empty());
    // A refusal is the node's failure; with nobody left the run ends with its words.
    run.nodes[0]->receive(net::Message::JobRefused,
                          {{QStringLiteral("message"), QStringLiteral("no such dataset")}});
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

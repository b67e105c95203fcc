// The cluster planner's model (net/planner/clusterplanner.h) on synthetic devices whose answers are
// worked out by hand: the ring allreduce, the batch split, which cluster each objective picks,
// limits, memory refusals, and the modes' communication.

#include "net/planner/clusterplanner.h"

#include <QCborArray>
#include <QCborMap>
#include <QTest>

using namespace edgetrain::net;

namespace {

DeviceMeasurement device(const char *name, double perSample, double idle, double busy,
                         double linkBytesPerSecond)
{
    DeviceMeasurement d;
    d.name = QString::fromLatin1(name);
    d.step_per_sample_seconds = perSample;
    d.idle_watts = idle;
    d.busy_watts = busy;
    d.up_bytes_per_second = d.down_bytes_per_second = linkBytesPerSecond;
    d.power_source = QStringLiteral("estimated: test");
    return d;
}

/** A: 1 ms per sample at 5-10 W; B and C: 4 ms at 2-3 W. */
std::vector<DeviceMeasurement> threeDevices(double link)
{
    return {device("A", 0.001, 5, 10, link), device("B", 0.004, 2, 3, link),
            device("C", 0.004, 2, 3, link)};
}

/** 1000 samples in batches of 100, one epoch, a model of a million parameters (4 MB). */
PlanWork work()
{
    PlanWork w;
    w.train_samples = 1000;
    w.batch = 100;
    w.epochs = 1;
    w.gradient_floats = 1000000;
    w.averaged_floats = 1000000;
    return w;
}

const PlanCandidate &find(const std::vector<PlanCandidate> &all, const QStringList &names,
                          TrainingMode mode = TrainingMode::Sync)
{
    for (const auto &c : all)
        if (c.names == names && c.mode == mode)
            return c;
    qFatal("no candidate %s", qPrintable(names.join(QLatin1Char('+'))));
}

QStringList chosen(const std::vector<PlanCandidate> &all, const QString &objective)
{
    QString error;
    const auto o = PlanObjective::parse(objective, &error);
    if (!o)
        qFatal("%s", qPrintable(error));
    return ClusterPlanner::rank(all, *o).front().names;
}

} // namespace

class TestClusterPlanner : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void ringAllreduceByHand();
    void readyProfileRead();
    void sharesFollowSpeed();
    void slowLinkTrainsAlone();
    void fastLinkEachObjectiveItsCluster();
    void limitsRuleCandidatesOut();
    void memoryRefusesAndCaps();
    void modesCommunicateDifferently();
    void movingDataIsNotIdle();
    void objectivesParsed();
};

void TestClusterPlanner::ringAllreduceByHand()
{
    auto devices = threeDevices(1e6);
    for (auto &d : devices)
        d.rtt_seconds = 0.004;
    devices[2].down_bytes_per_second = 1e5; // C receives at a tenth
    ClusterPlanner p(devices, work());
    // Two ranks: 2(n-1) = 2 rounds of 500 kB at 1 MB/s plus half of both round trips.
    QCOMPARE(p.allreduceSeconds({0, 1}, 1e6), 2 * (0.004 + 0.5));
    // Three: 4 rounds of 333 kB; the hop into C is the slowest.
    QVERIFY(qAbs(p.allreduceSeconds({0, 1, 2}, 1e6) - 4 * (0.004 + 1e6 / 3 / 1e5)) < 1e-9);
    QCOMPARE(p.allreduceSeconds({1}, 1e6), 0.0);

    // A device whose CPU needs 3 us a byte to send, receive and add a chunk: where that is
    // longer than the hop over the link it sets the round (500 kB: 1.5 s against 0.504 s).
    devices[1].exchange_seconds_per_byte = 3e-6;
    devices[0].exchange_seconds_per_byte = 1e-6; // the slower end counts
    ClusterPlanner cpuBound(devices, work());
    QVERIFY(qAbs(cpuBound.allreduceSeconds({0, 1}, 1e6) - 2 * 1.5) < 1e-9);
    // Three: 333 kB rounds; B's CPU takes 1.0 s on A->B and B->C, but B->C's link is C's
    // tenth (3.337 s): the link sets it.
    QVERIFY(qAbs(cpuBound.allreduceSeconds({0, 1, 2}, 1e6) - 4 * (0.004 + 1e6 / 3 / 1e5)) < 1e-9);
    // A CPU slower than every link: 13.5 us a byte on B, 4.5 s for a 333 kB chunk against
    // the slowest hop's 3.337 s: the CPU sets it.
    devices[1].exchange_seconds_per_byte = 13.5e-6;
    ClusterPlanner slowCpu(devices, work());
    QVERIFY(qAbs(slowCpu.allreduceSeconds({0, 1, 2}, 1e6) - 4 * 13.5e-6 * 1e6 / 3) < 1e-9);

    // The rates not timed (the exchange over each link stood for them): a round is the slower
    // end's exchange figure for the chunk (A's 2 us a byte: 1 s for 500 kB), or the half round
    // trips where that is shorter.
    for (auto &d : devices) {
        d.up_bytes_per_second = d.down_bytes_per_second = 0;
        d.link_rates_timed = false;
        d.exchange_seconds_per_byte = 1e-6;
    }
    devices[0].exchange_seconds_per_byte = 2e-6;
    ClusterPlanner byExchange(devices, work());
    QVERIFY(qAbs(byExchange.allreduceSeconds({0, 1}, 1e6) - 2 * 1.0) < 1e-9);
    QVERIFY(qAbs(byExchange.allreduceSeconds({1, 2}, 1e6) - 2 * 0.5) < 1e-9);
    QVERIFY(qAbs(byExchange.allreduceSeconds({1, 2}, 1e3) - 2 * 0.004) < 1e-9);
}

void TestClusterPlanner::readyProfileRead()
{
    // What a node says when ready, as the trainer's profile() writes it.
    const QCborMap profile{
        {QStringLiteral("batches"), QCborArray{16, 64}},
        {QStringLiteral("step_seconds"), QCborArray{0.020, 0.068}},
        {QStringLiteral("update_seconds"), 0.002},
        {QStringLiteral("eval_seconds_per_sample"), 0.0004},
        {QStringLiteral("max_local_batch"), 65},
        {QStringLiteral("link"), QCborMap{{QStringLiteral("rtt_seconds"), 0.001},
                                          {QStringLiteral("up_bytes_per_second"), 1.2e7},
                                          {QStringLiteral("down_bytes_per_second"), 1.1e7}}},
        {QStringLiteral("exchange"), QCborMap{{QStringLiteral("seconds_per_byte"), 2.5e-8},
                                              {QStringLiteral("bytes"), 244000},
                                              {QStringLiteral("repeats"), 7}}}};
    const DeviceMeasurement d =
        measurementFromReady(QStringLiteral("pi"), QCborMap{{QStringLiteral("profile"), profile}});
    QVERIFY(qAbs(d.step_per_sample_seconds - 0.001) < 1e-12);
    QVERIFY(qAbs(d.step_fixed_seconds - 0.004) < 1e-12);
    QCOMPARE(d.update_seconds, 0.002);
    QCOMPARE(d.max_local_batch, 65);
    QCOMPARE(d.up_bytes_per_second, 1.2e7);
    QCOMPARE(d.exchange_seconds_per_byte, 2.5e-8);
    QVERIFY(d.link_error.isEmpty());
    // A node that could not time its exchange (an error instead of figures): no CPU bound.
    QCborMap failed = profile;
    failed.insert(QStringLiteral("exchange"),
                  QCborMap{{QStringLiteral("error"), QStringLiteral("cannot connect")}});
    const DeviceMeasurement unmeasured =
        measurementFromReady(QStringLiteral("pi"), QCborMap{{QStringLiteral("profile"), failed}});
    QCOMPARE(unmeasured.exchange_seconds_per_byte, 0.0);
    QCOMPARE(unmeasured.exchange_error, QStringLiteral("cannot connect"));
    QVERIFY(d.exchange_error.isEmpty());
    QVERIFY(d.link_rates_timed);
    QCOMPARE(d.exchange_busy_seconds_per_byte, 0.0);
    // Timed over the link, which stood for the transfers: a round trip and no rates; the
    // exchange's CPU per byte.
    QCborMap overLink = profile;
    overLink.insert(QStringLiteral("link"), QCborMap{{QStringLiteral("rtt_seconds"), 0.001}});
    overLink.insert(QStringLiteral("exchange"),
                    QCborMap{{QStringLiteral("seconds_per_byte"), 8e-8},
                             {QStringLiteral("over"), QStringLiteral("link")},
                             {QStringLiteral("busy_seconds_per_byte"), 3e-9}});
    const DeviceMeasurement noRates =
        measurementFromReady(QStringLiteral("pi"), QCborMap{{QStringLiteral("profile"), overLink}});
    QVERIFY(noRates.link_error.isEmpty());
    QVERIFY(!noRates.link_rates_timed);
    QCOMPARE(noRates.rtt_seconds, 0.001);
    QCOMPARE(noRates.up_bytes_per_second, 0.0);
    QCOMPARE(noRates.exchange_busy_seconds_per_byte, 3e-9);
    QCOMPARE(noRates.exchange_over, DeviceMeasurement::ExchangeOver::Link);
}

void TestClusterPlanner::sharesFollowSpeed()
{
    ClusterPlanner p(threeDevices(1e6), work());
    // 1000 and 250 images/s: 80 % and 20 %, as the trainer's speed rule settles; split as the
    // trainer splits (one each first, then by largest remainder).
    const auto s = p.shares({0, 1});
    QVERIFY(qAbs(s[0] - 0.8) < 1e-3 && qAbs(s[1] - 0.2) < 1e-3);
    const auto c = p.predict({0, 1}, TrainingMode::Sync);
    QCOMPARE(splitByShares(100, c.shares), (std::vector<std::int64_t>{79, 21}));
}

void TestClusterPlanner::slowLinkTrainsAlone()
{
    // 8 Mbit/s links and a 4 MB model: one allreduce costs 4 s, ten steps 40 s; A alone takes
    // 10 x 0.1 s = 1 s. Every objective but power wants A alone; power wants a small one alone.
    ClusterPlanner p(threeDevices(1e6), work());
    const auto all = p.candidates({TrainingMode::Sync});
    QCOMPARE(all.size(), std::size_t(7));
    const auto &a = find(all, {QStringLiteral("A")});
    QVERIFY(qAbs(a.seconds - 1.0) < 1e-9);
    QVERIFY(qAbs(a.watts - 10.0) < 1e-9); // busy all the time
    QVERIFY(qAbs(a.joules - 10.0) < 1e-9);
    const auto &ab = find(all, {QStringLiteral("A"), QStringLiteral("B")});
    QVERIFY(qAbs(ab.communication_seconds - 10 * 2 * (4000020.0 / 2 / 1e6)) < 1e-6);
    QCOMPARE(chosen(all, QStringLiteral("time")), QStringList{QStringLiteral("A")});
    QCOMPARE(chosen(all, QStringLiteral("energy")), QStringList{QStringLiteral("A")});
    QCOMPARE(chosen(all, QStringLiteral("edp")), QStringList{QStringLiteral("A")});
    QCOMPARE(chosen(all, QStringLiteral("power")), QStringList{QStringLiteral("B")});
}

void TestClusterPlanner::fastLinkEachObjectiveItsCluster()
{
    // Free links: all three finish first (0.68 s against A+B's 0.84 s and A's 1 s). Energy: A
    // alone 10 J, A+B 10.7 J, all three about 10.8 J, B alone 4 s x 3 W = 12 J.
    // EDP: all three (about 7.3 J·s) before A+B (9.0) and A alone (10).
    ClusterPlanner p(threeDevices(1e12), work());
    const auto all = p.candidates({TrainingMode::Sync});
    const auto &abc = find(all, {QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("C")});
    QVERIFY2(qAbs(abc.seconds - 0.68) < 0.01, qPrintable(QString::number(abc.seconds)));
    const auto &ab = find(all, {QStringLiteral("A"), QStringLiteral("B")});
    QVERIFY(qAbs(ab.seconds - 0.84) < 1e-3); // parts 79 and 21: B's 84 ms per step
    QVERIFY(qAbs(ab.joules - 0.84 * (5 + 5 * 0.79 / 0.84 + 3)) < 1e-3);
    QVERIFY(qAbs(find(all, {QStringLiteral("B")}).joules - 12.0) < 1e-9);
    QCOMPARE(chosen(all, QStringLiteral("time")),
             (QStringList{QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("C")}));
    QCOMPARE(chosen(all, QStringLiteral("energy")), QStringList{QStringLiteral("A")});
    QCOMPARE(chosen(all, QStringLiteral("edp")),
             (QStringList{QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("C")}));
    // Mixes, each figure over the best one's: energy ten times time gives A alone
    // (1/0.68 + 10 x 1.0 = 11.5 against all three's 1.0 + 10 x 1.08 = 11.8); time three times
    // energy gives all three (3.0 + 1.08 against 4.4 + 1.0).
    QCOMPARE(chosen(all, QStringLiteral("mix:time=1,energy=10")), QStringList{QStringLiteral("A")});
    QCOMPARE(chosen(all, QStringLiteral("mix:time=3,energy=1")),
             (QStringList{QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("C")}));
}

void TestClusterPlanner::movingDataIsNotIdle()
{
    // B and C at 2-3 W on 40 MB/s links: 10 steps of 4,000,020 bytes allreduced, 0.2 s of
    // compute and 0.1 s of waiting on the link each; in a ring of two each sends and receives
    // all of it. At 1 ns of busy time per byte each way, each is busy 10 x 4,000,020 x 2 ns =
    // 80.0004 ms longer: 1 W x 80 ms more energy each, in the same time.
    auto devices = threeDevices(40e6);
    const ClusterPlanner before(devices, work());
    for (auto &d : devices)
        d.up_busy_seconds_per_byte = d.down_busy_seconds_per_byte = 1e-9;
    const ClusterPlanner after(devices, work());
    const QStringList bc{QStringLiteral("B"), QStringLiteral("C")};
    const PlanCandidate was = find(before.candidates({TrainingMode::Sync}), bc);
    const PlanCandidate is = find(after.candidates({TrainingMode::Sync}), bc);
    QCOMPARE(is.seconds, was.seconds);
    QVERIFY2(qAbs(is.joules - was.joules - 2 * 1.0 * 0.0800004) < 1e-9,
             qPrintable(QStringLiteral("%1 J -> %2 J").arg(was.joules).arg(is.joules)));
    // Alone, a device moves nothing; in local SGD it moves a share: every 8 steps, 2 averages.
    QCOMPARE(find(after.candidates({TrainingMode::Sync}), {QStringLiteral("B")}).joules,
             find(before.candidates({TrainingMode::Sync}), {QStringLiteral("B")}).joules);
    const PlanCandidate localWas =
        find(before.candidates({TrainingMode::LocalSgd}), bc, TrainingMode::LocalSgd);
    const PlanCandidate localIs =
        find(after.candidates({TrainingMode::LocalSgd}), bc, TrainingMode::LocalSgd);
    QVERIFY2(qAbs(localIs.joules - localWas.joules - 2 * 1.0 * 2 * 4000020 * 2e-9) < 1e-9,
             qPrintable(QStringLiteral("%1 J -> %2 J").arg(localWas.joules).arg(localIs.joules)));
    // Where the exchange over the link measured the ring's own CPU a byte each way, that counts
    // instead of the transfers' (3 ns against their 1 + 1: 120 ms of busy time each, not 80);
    // and without the link's rates (not timed: the exchange stood for them) B and C can
    // still plan sync, not async.
    for (auto &d : devices) {
        d.exchange_busy_seconds_per_byte = 3e-9;
        d.link_rates_timed = false;
    }
    const ClusterPlanner ring(devices, work());
    const PlanCandidate byRing = find(ring.candidates({TrainingMode::Sync}), bc);
    QVERIFY2(qAbs(byRing.joules - was.joules - 2 * 1.0 * 10 * 4000020 * 3e-9) < 1e-9,
             qPrintable(QStringLiteral("%1 J -> %2 J").arg(was.joules).arg(byRing.joules)));
    const PlanCandidate async =
        find(ring.candidates({TrainingMode::Async}), bc, TrainingMode::Async);
    QVERIFY2(async.refused.contains(QLatin1String("not timed for async")),
             qPrintable(async.refused));
    // alone too: its pushes and pulls go to the coordinator's parameter server
    QVERIFY(find(ring.candidates({TrainingMode::Async}), {QStringLiteral("B")}, TrainingMode::Async)
                .refused.contains(QLatin1String("not timed for async")));
}

void TestClusterPlanner::limitsRuleCandidatesOut()
{
    ClusterPlanner p(threeDevices(1e12), work());
    const auto all = p.candidates({TrainingMode::Sync});
    QString error;
    auto o = *PlanObjective::parse(QStringLiteral("time"), &error);
    o.max_watts = 8.0; // A draws 10 W busy: only B and C are left; together they are faster
    auto ranked = ClusterPlanner::rank(all, o);
    QCOMPARE(ranked.front().names, (QStringList{QStringLiteral("B"), QStringLiteral("C")}));
    QVERIFY(ClusterPlanner::unsuitable(ranked.back(), o).contains(QLatin1String("over the limit")));
    o.max_watts = 0;
    o.deadline_seconds = 0.5; // nothing finishes in time: the fastest is still first, unsuitable
    ranked = ClusterPlanner::rank(all, o);
    QVERIFY(ClusterPlanner::unsuitable(ranked.front(), o).contains(QLatin1String("deadline")));
    // A device without a power figure: time can still be planned, energy cannot pick it.
    auto devices = threeDevices(1e12);
    devices[0].busy_watts = -1;
    ClusterPlanner q(devices, work());
    const auto some = q.candidates({TrainingMode::Sync});
    QCOMPARE(chosen(some, QStringLiteral("time")),
             (QStringList{QStringLiteral("A"), QStringLiteral("B"), QStringLiteral("C")}));
    QVERIFY(!chosen(some, QStringLiteral("energy")).contains(QStringLiteral("A")));
}

void TestClusterPlanner::memoryRefusesAndCaps()
{
    auto devices = threeDevices(1e12);
    devices[0].max_local_batch = 50; // A: at most half a batch
    devices[2].max_local_batch = 0;  // C: not one sample
    ClusterPlanner p(devices, work());
    const auto all = p.candidates({TrainingMode::Sync});
    const auto &c = find(all, {QStringLiteral("C")});
    QVERIFY(c.refused.contains(QLatin1String("C cannot hold one sample")));
    const auto &ab = find(all, {QStringLiteral("A"), QStringLiteral("B")});
    QVERIFY(ab.refused.isEmpty());
    // capped from 0.8 as the coordinator caps it: A plans its memory for its part of batch + 1,
    // at most 2 + (101 - 2) x share samples, so share <= (50 - 2) / 99
    QVERIFY(qAbs(ab.shares[0] - 48.0 / 99.0) < 1e-9);
    QVERIFY(splitByShares(101, ab.shares)[0] <= 50);
    // B holds any batch (its search reached batch + 1): alone it is not refused
    auto holds = threeDevices(1e12);
    holds[1].max_local_batch = 101;
    QVERIFY(ClusterPlanner(holds, work()).predict({1}, TrainingMode::Sync).refused.isEmpty());
    // A alone cannot hold a batch of 100
    QVERIFY(find(all, {QStringLiteral("A")}).refused.contains(QLatin1String("less than a batch")));
    // Never chosen: the ranking puts every refused candidate last.
    QString error;
    const auto ranked =
        ClusterPlanner::rank(all, *PlanObjective::parse(QStringLiteral("time"), &error));
    QVERIFY(ranked.front().refused.isEmpty());
    for (const auto &r : ranked)
        if (r.names.contains(QStringLiteral("C")))
            QVERIFY(!ClusterPlanner::unsuitable(r, PlanObjective{}).isEmpty());
}

void TestClusterPlanner::modesCommunicateDifferently()
{
    ClusterPlanner p(threeDevices(1e6), work());
    const auto all =
        p.candidates({TrainingMode::Sync, TrainingMode::LocalSgd, TrainingMode::Async});
    // Singles once (sync); pairs and the triple in every mode: 3 + 4 x 3.
    QCOMPARE(all.size(), std::size_t(15));
    const QStringList ab{QStringLiteral("A"), QStringLiteral("B")};
    const auto &sync = find(all, ab, TrainingMode::Sync);
    const auto &local = find(all, ab, TrainingMode::LocalSgd);
    const auto &async = find(all, ab, TrainingMode::Async);
    // local SGD averages twice in ten steps (at 8 and at the end) where sync reduces ten times
    QVERIFY(qAbs(local.communication_seconds - 2 * 2 * (4000020.0 / 2 / 1e6)) < 1e-6);
    QVERIFY(local.seconds < sync.seconds);
    // async: the data split 799 / 201; B pushes its 201 in local batches of 20 (11 pushes, the
    // slowest), each 1 M values up and down in bfloat16 (2 MB each way) over 1 MB/s ...
    QVERIFY2(qAbs(async.seconds - 11 * (0.08 + 4.0)) < 1e-6,
             qPrintable(QString::number(async.seconds)));
    // ... and with the float32 exchange (a job that asks for it), 4 MB each way
    PlanWork float32 = work();
    float32.async_value_bytes = 4.0;
    const auto asyncFloat32 =
        ClusterPlanner(threeDevices(1e6), float32).predict(async.devices, TrainingMode::Async);
    QVERIFY2(qAbs(asyncFloat32.seconds - 11 * (0.08 + 8.0)) < 1e-6,
             qPrintable(QString::number(asyncFloat32.seconds)));
    JobSpec job;
    job.exchange = QStringLiteral("float32");
    QCOMPARE(workFromReady(job, QCborMap{}).async_value_bytes, 4.0);
    job.exchange = QStringLiteral("bf16");
    QCOMPARE(workFromReady(job, QCborMap{}).async_value_bytes, 2.0);
    QCOMPARE(chosen(all, QStringLiteral("time")), QStringList{QStringLiteral("A")});
}

void TestClusterPlanner::objectivesParsed()
{
    QString error;
    QVERIFY(PlanObjective::parse(QStringLiteral("EDP"), &error)->kind == PlanObjective::Kind::Edp);
    const auto mix = PlanObjective::parse(QStringLiteral("mix:time=1,energy=2.5"), &error);
    QVERIFY(mix && mix->energy_weight == 2.5 && mix->time_weight == 1.0);
    QCOMPARE(mix->name(), QStringLiteral("mix:time=1,energy=2.5"));
    QVERIFY(!PlanObjective::parse(QStringLiteral("speed"), &error));
    QVERIFY(error.contains(QLatin1String("time, power, energy, edp")));
    QVERIFY(!PlanObjective::parse(QStringLiteral("mix:time=-1"), &error));
    QVERIFY(error.contains(QLatin1String("time=-1")));
    QVERIFY(!PlanObjective::parse(QStringLiteral("mix:speed=1"), &error));
    QVERIFY(!PlanObjective::parse(QStringLiteral("mix:time=0"), &error));
    QVERIFY(error.contains(QLatin1String("no weight")));
}

QTEST_GUILESS_MAIN(TestClusterPlanner)
#include "tst_clusterplanner.moc"

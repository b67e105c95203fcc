// The cluster planner's model (core/clusterplanner.h) on synthetic devices whose answers are
// worked out by hand: the ring allreduce, the batch split, which cluster each objective picks,
// limits, memory refusals, the modes' communication, and the objective's text.

#include "core/batchshares.h"
#include "core/clusterplanner.h"
#include "core/error.h"

#include <QTest>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

using namespace edgetrain::core;

namespace {

using Names = std::vector<std::string>;

PlanDevice device(const char *name, double perSample, double idle, double busy,
                  double linkBytesPerSecond)
{
    PlanDevice d;
    d.name = name;
    d.cost.step_per_sample_seconds = perSample;
    d.cost.idle_watts = idle;
    d.cost.busy_watts = busy;
    d.cost.up_bytes_per_second = d.cost.down_bytes_per_second = linkBytesPerSecond;
    return d;
}

/** A: 1 ms per sample at 5-10 W; B and C: 4 ms at 2-3 W. */
std::vector<PlanDevice> threeDevices(double link)
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

const PlanCandidate &find(const std::vector<PlanCandidate> &all, const Names &names,
                          PlanMode mode = PlanMode::Sync)
{
    for (const auto &c : all)
        if (c.names == names && c.mode == mode)
            return c;
    qFatal("no candidate of %zu devices starting %s", names.size(), names.front().c_str());
}

PlanObjective objective(const char *text)
{
    std::string error;
    const auto o = PlanObjective::parse(text, &error);
    if (!o)
        qFatal("%s", error.c_str());
    return *o;
}

Names chosen(const std::vector<PlanCandidate> &all, const char *text)
{
    return ClusterPlanner::rank(all, objective(text)).front().names;
}

bool contains(const std::string &text, const char *part)
{
    return text.find(part) != std::string::npos;
}

} // namespace

class TestClusterPlanModel : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void batchSplitByHand();
    void ringAllreduceByHand();
    void sharesFollowSpeed();
    void slowLinkTrainsAlone();
    void fastLinkEachObjectiveItsCluster();
    void limitsRuleCandidatesOut();
    void memoryRefusesAndCaps();
    void linkErrorsRefuseGroups();
    void modesCommunicateDifferently();
    void movingDataIsNotIdle();
    void objectivesParsed();
    void workRefused();
};

void TestClusterPlanModel::batchSplitByHand()
{
    // One each first, then the rest by largest remainder: 97 x 0.5 = 48.5 and 2 x 24.25.
    QCOMPARE(splitByShares(100, {0.5, 0.25, 0.25}), (std::vector<std::int64_t>{50, 25, 25}));
    QCOMPARE(splitByShares(64, {0.5, 0.25, 0.25}), (std::vector<std::int64_t>{32, 16, 16}));
    QCOMPARE(splitByShares(10, {0.8, 0.2}), (std::vector<std::int64_t>{7, 3})); // 1 + 6.4, 1 + 1.6
    // Fewer items than parts: no floor of one; all shares zero: equal parts.
    QCOMPARE(splitByShares(2, {0.2, 0.3, 0.5}), (std::vector<std::int64_t>{0, 1, 1}));
    QCOMPARE(splitByShares(4, {0.0, 0.0}), (std::vector<std::int64_t>{2, 2}));
    QCOMPARE(splitByShares(0, {0.5, 0.5}), (std::vector<std::int64_t>{0, 0}));
    // Speeds: proportional; one unknown gives equal shares.
    QCOMPARE(sharesFromSpeeds({300, 100}), (std::vector<double>{0.75, 0.25}));
    QCOMPARE(sharesFromSpeeds({300, 0}), (std::vector<double>{0.5, 0.5}));
    QCOMPARE(sharesFromSpeeds({300, NAN}), (std::vector<double>{0.5, 0.5}));
    // Caps: 0.8 capped at 0.5 gives its 0.3 to the others by their shares (0.1 and 0.1);
    // where nobody has room the excess is dropped.
    std::vector<double> s{0.8, 0.1, 0.1};
    capShares(s, {0.5, 1.0, 1.0});
    QVERIFY(std::abs(s[0] - 0.5) < 1e-12 && std::abs(s[1] - 0.25) < 1e-12 &&
            std::abs(s[2] - 0.25) < 1e-12);
    std::vector<double> full{0.6, 0.4};
    capShares(full, {0.3, 0.4});
    QCOMPARE(full, (std::vector<double>{0.3, 0.4}));
}

void TestClusterPlanModel::ringAllreduceByHand()
{
    auto devices = threeDevices(1e6);
    for (auto &d : devices)
        d.cost.rtt_seconds = 0.004;
    devices[2].cost.down_bytes_per_second = 1e5; // C receives at a tenth
    ClusterPlanner p(devices, work());
    // Two ranks: 2(n-1) = 2 rounds of 500 kB at 1 MB/s plus half of both round trips.
    QCOMPARE(p.allreduceSeconds({0, 1}, 1e6), 2 * (0.004 + 0.5));
    // Three: 4 rounds of 333 kB; the hop into C is the slowest.
    QVERIFY(qAbs(p.allreduceSeconds({0, 1, 2}, 1e6) - 4 * (0.004 + 1e6 / 3 / 1e5)) < 1e-9);
    QCOMPARE(p.allreduceSeconds({1}, 1e6), 0.0);

    // A device whose CPU needs 3 us a byte to send, receive and add a chunk: where that is
    // longer than the hop over the link it sets the round (500 kB: 1.5 s against 0.504 s).
    devices[1].cost.exchange_seconds_per_byte = 3e-6;
    devices[0].cost.exchange_seconds_per_byte = 1e-6; // the slower end counts
    ClusterPlanner cpuBound(devices, work());
    QVERIFY(qAbs(cpuBound.allreduceSeconds({0, 1}, 1e6) - 2 * 1.5) < 1e-9);
    // Three: 333 kB rounds; B's CPU takes 1.0 s on A->B and B->C, but B->C's link is C's
    // tenth (3.337 s): the link sets it.
    QVERIFY(qAbs(cpuBound.allreduceSeconds({0, 1, 2}, 1e6) - 4 * (0.004 + 1e6 / 3 / 1e5)) < 1e-9);
    // A CPU slower than every link: 13.5 us a byte on B, 4.5 s for a 333 kB chunk against
    // the slowest hop's 3.337 s: the CPU sets it.
    devices[1].cost.exchange_seconds_per_byte = 13.5e-6;
    ClusterPlanner slowCpu(devices, work());
    QVERIFY(qAbs(slowCpu.allreduceSeconds({0, 1, 2}, 1e6) - 4 * 13.5e-6 * 1e6 / 3) < 1e-9);

    // The rates not timed (the exchange over each link stood for them): a round is the slower
    // end's exchange figure for the chunk (A's 2 us a byte: 1 s for 500 kB), or the half round
    // trips where that is shorter.
    for (auto &d : devices) {
        d.cost.up_bytes_per_second = d.cost.down_bytes_per_second = 0;
        d.cost.link_rates_timed = false;
        d.cost.exchange_seconds_per_byte = 1e-6;
    }
    devices[0].cost.exchange_seconds_per_byte = 2e-6;
    ClusterPlanner byExchange(devices, work());
    QVERIFY(qAbs(byExchange.allreduceSeconds({0, 1}, 1e6) - 2 * 1.0) < 1e-9);
    QVERIFY(qAbs(byExchange.allreduceSeconds({1, 2}, 1e6) - 2 * 0.5) < 1e-9);
    QVERIFY(qAbs(byExchange.allreduceSeconds({1, 2}, 1e3) - 2 * 0.004) < 1e-9);
}

void TestClusterPlanModel::sharesFollowSpeed()
{
    ClusterPlanner p(threeDevices(1e6), work());
    // 1000 and 250 images/s: 80 % and 20 %, as the trainer's speed rule settles; split as the
    // trainer splits (one each first, then by largest remainder).
    const auto s = p.shares({0, 1});
    QVERIFY(qAbs(s[0] - 0.8) < 1e-3 && qAbs(s[1] - 0.2) < 1e-3);
    const auto c = p.predict({1, 0}, PlanMode::Sync); // in any order: the candidate sorts them
    QCOMPARE(c.devices, (std::vector<int>{0, 1}));
    QCOMPARE(splitByShares(100, c.shares), (std::vector<std::int64_t>{79, 21}));
    // A fixed cost per step makes a small part slower per sample: the settled shares are the
    // fixed point where each device's time for its own part is the same (A: 2 ms + 1 ms a
    // sample, B: 4 ms a sample; 20 + 80 gives 82 ms against 80).
    auto fixed = threeDevices(1e6);
    fixed[0].cost.step_fixed_seconds = 0.002;
    const auto settled = ClusterPlanner(fixed, work()).shares({0, 1});
    QVERIFY2(settled[0] < 0.8 - 1e-3, qPrintable(QString::number(settled[0])));
    const auto parts = splitByShares(100, settled);
    const double a = fixed[0].cost.stepSeconds(parts[0]), b = fixed[1].cost.stepSeconds(parts[1]);
    QVERIFY2(std::abs(a - b) <= 0.004 + 1e-12, qPrintable(QStringLiteral("%1 %2").arg(a).arg(b)));
}

void TestClusterPlanModel::slowLinkTrainsAlone()
{
    // 8 Mbit/s links and a 4 MB model: one allreduce costs 4 s, ten steps 40 s; A alone takes
    // 10 x 0.1 s = 1 s. Every objective but power wants A alone; power wants a small one alone.
    ClusterPlanner p(threeDevices(1e6), work());
    const auto all = p.candidates({PlanMode::Sync});
    QCOMPARE(all.size(), std::size_t(7));
    const auto &a = find(all, {"A"});
    QVERIFY(qAbs(a.seconds - 1.0) < 1e-9);
    QVERIFY(qAbs(a.watts - 10.0) < 1e-9); // busy all the time
    QVERIFY(qAbs(a.joules - 10.0) < 1e-9);
    QVERIFY(qAbs(a.edp - 10.0) < 1e-9);
    const auto &ab = find(all, {"A", "B"});
    QVERIFY(qAbs(ab.communication_seconds - 10 * 2 * (4000020.0 / 2 / 1e6)) < 1e-6);
    QCOMPARE(chosen(all, "time"), Names{"A"});
    QCOMPARE(chosen(all, "energy"), Names{"A"});
    QCOMPARE(chosen(all, "edp"), Names{"A"});
    QCOMPARE(chosen(all, "power"), Names{"B"});
}

void TestClusterPlanModel::fastLinkEachObjectiveItsCluster()
{
    // Free links: all three finish first (0.68 s against A+B's 0.84 s and A's 1 s). Energy: A
    // alone 10 J, A+B 10.7 J, all three about 10.8 J, B alone 4 s x 3 W = 12 J.
    // EDP: all three (about 7.3 J·s) before A+B (9.0) and A alone (10).
    ClusterPlanner p(threeDevices(1e12), work());
    const auto all = p.candidates({PlanMode::Sync});
    const auto &abc = find(all, {"A", "B", "C"});
    QVERIFY2(qAbs(abc.seconds - 0.68) < 0.01, qPrintable(QString::number(abc.seconds)));
    const auto &ab = find(all, {"A", "B"});
    QVERIFY(qAbs(ab.seconds - 0.84) < 1e-3); // parts 79 and 21: B's 84 ms per step
    QVERIFY(qAbs(ab.compute_seconds - 0.84) < 1e-3);
    QVERIFY(qAbs(ab.joules - 0.84 * (5 + 5 * 0.79 / 0.84 + 3)) < 1e-3);
    QVERIFY(qAbs(find(all, {"B"}).joules - 12.0) < 1e-9);
    QCOMPARE(chosen(all, "time"), (Names{"A", "B", "C"}));
    QCOMPARE(chosen(all, "energy"), Names{"A"});
    QCOMPARE(chosen(all, "edp"), (Names{"A", "B", "C"}));
    // Mixes, each figure over the best one's: energy ten times time gives A alone
    // (1/0.68 + 10 x 1.0 = 11.5 against all three's 1.0 + 10 x 1.08 = 11.8); time three times
    // energy gives all three (3.0 + 1.08 against 4.4 + 1.0).
    QCOMPARE(chosen(all, "mix:time=1,energy=10"), Names{"A"});
    QCOMPARE(chosen(all, "mix:time=3,energy=1"), (Names{"A", "B", "C"}));
}

void TestClusterPlanModel::movingDataIsNotIdle()
{
    // B and C at 2-3 W on 40 MB/s links: 10 steps of 4,000,020 bytes allreduced, 0.2 s of
    // compute and 0.1 s of waiting on the link each; in a ring of two each sends and receives
    // all of it. At 1 ns of busy time per byte each way, each is busy 10 x 4,000,020 x 2 ns =
    // 80.0004 ms longer: 1 W x 80 ms more energy each, in the same time.
    auto devices = threeDevices(40e6);
    const ClusterPlanner before(devices, work());
    for (auto &d : devices)
        d.cost.up_busy_seconds_per_byte = d.cost.down_busy_seconds_per_byte = 1e-9;
    const ClusterPlanner after(devices, work());
    const Names bc{"B", "C"};
    const PlanCandidate was = find(before.candidates({PlanMode::Sync}), bc);
    const PlanCandidate is = find(after.candidates({PlanMode::Sync}), bc);
    QCOMPARE(is.seconds, was.seconds);
    QVERIFY2(qAbs(is.joules - was.joules - 2 * 1.0 * 0.0800004) < 1e-9,
             qPrintable(QStringLiteral("%1 J -> %2 J").arg(was.joules).arg(is.joules)));
    // Alone, a device moves nothing; in local SGD it moves a share: every 8 steps, 2 averages.
    QCOMPARE(find(after.candidates({PlanMode::Sync}), {"B"}).joules,
             find(before.candidates({PlanMode::Sync}), {"B"}).joules);
    const PlanCandidate localWas =
        find(before.candidates({PlanMode::LocalSgd}), bc, PlanMode::LocalSgd);
    const PlanCandidate localIs =
        find(after.candidates({PlanMode::LocalSgd}), bc, PlanMode::LocalSgd);
    QVERIFY2(qAbs(localIs.joules - localWas.joules - 2 * 1.0 * 2 * 4000020 * 2e-9) < 1e-9,
             qPrintable(QStringLiteral("%1 J -> %2 J").arg(localWas.joules).arg(localIs.joules)));
    // Where the exchange over the link measured the ring's own CPU a byte each way, that counts
    // instead of the transfers' (3 ns against their 1 + 1: 120 ms of busy time each, not 80);
    // and without the link's rates (not timed: the exchange stood for them) B and C can
    // still plan sync, not async.
    for (auto &d : devices) {
        d.cost.exchange_busy_seconds_per_byte = 3e-9;
        d.cost.link_rates_timed = false;
    }
    const ClusterPlanner ring(devices, work());
    const PlanCandidate byRing = find(ring.candidates({PlanMode::Sync}), bc);
    QVERIFY2(qAbs(byRing.joules - was.joules - 2 * 1.0 * 10 * 4000020 * 3e-9) < 1e-9,
             qPrintable(QStringLiteral("%1 J -> %2 J").arg(was.joules).arg(byRing.joules)));
    const PlanCandidate async = find(ring.candidates({PlanMode::Async}), bc, PlanMode::Async);
    QVERIFY2(contains(async.refused, "not timed for async"), async.refused.c_str());
    // alone too: its pushes and pulls go to the coordinator's parameter server
    QVERIFY(contains(find(ring.candidates({PlanMode::Async}), {"B"}, PlanMode::Async).refused,
                     "not timed for async"));
}

void TestClusterPlanModel::limitsRuleCandidatesOut()
{
    ClusterPlanner p(threeDevices(1e12), work());
    const auto all = p.candidates({PlanMode::Sync});
    auto o = objective("time");
    o.max_watts = 8.0; // A draws 10 W busy: only B and C are left; together they are faster
    auto ranked = ClusterPlanner::rank(all, o);
    QCOMPARE(ranked.front().names, (Names{"B", "C"}));
    QVERIFY(contains(ClusterPlanner::unsuitable(ranked.back(), o), "over the limit of 8.0 W"));
    // rank and rankOrder agree
    const auto order = ClusterPlanner::rankOrder(all, o);
    for (std::size_t i = 0; i < all.size(); ++i)
        QCOMPARE(all[order[i]].names, ranked[i].names);
    o.max_watts = 0;
    o.deadline_seconds = 0.5; // nothing finishes in time: the fastest is still first, unsuitable
    ranked = ClusterPlanner::rank(all, o);
    QCOMPARE(ranked.front().names, (Names{"A", "B", "C"}));
    QVERIFY(contains(ClusterPlanner::unsuitable(ranked.front(), o), "past the deadline of 0.5 s"));
    // A device without a power figure: time can still be planned, energy cannot pick it.
    auto devices = threeDevices(1e12);
    devices[0].cost.busy_watts = -1;
    ClusterPlanner q(devices, work());
    const auto some = q.candidates({PlanMode::Sync});
    QVERIFY(!find(some, {"A", "B"}).power_known);
    QCOMPARE(chosen(some, "time"), (Names{"A", "B", "C"}));
    const Names energy = chosen(some, "energy");
    QVERIFY(std::find(energy.begin(), energy.end(), "A") == energy.end());
    QCOMPARE(ClusterPlanner::unsuitable(find(some, {"A"}), objective("energy")),
             std::string("the power of a device is not known"));
}

void TestClusterPlanModel::memoryRefusesAndCaps()
{
    auto devices = threeDevices(1e12);
    devices[0].cost.max_local_batch = 50; // A: at most half a batch
    devices[2].cost.max_local_batch = 0;  // C: not one sample
    ClusterPlanner p(devices, work());
    const auto all = p.candidates({PlanMode::Sync});
    QCOMPARE(find(all, {"C"}).refused,
             std::string("C cannot hold one sample of the model in its memory"));
    const auto &ab = find(all, {"A", "B"});
    QVERIFY(ab.refused.empty());
    // capped from 0.8 as the coordinator caps it: A plans its memory for its part of batch + 1,
    // at most 2 + (101 - 2) x share samples, so share <= (50 - 2) / 99
    QVERIFY(qAbs(ab.shares[0] - 48.0 / 99.0) < 1e-9);
    QVERIFY(splitByShares(101, ab.shares)[0] <= 50);
    // B holds any batch (its search reached batch + 1): alone it is not refused
    auto holds = threeDevices(1e12);
    holds[1].cost.max_local_batch = 101;
    QVERIFY(ClusterPlanner(holds, work()).predict({1}, PlanMode::Sync).refused.empty());
    // A alone cannot hold a batch of 100
    QCOMPARE(find(all, {"A"}).refused,
             std::string("together their memory holds less than a batch of 100"));
    // Never chosen: the ranking puts every refused candidate last.
    const auto ranked = ClusterPlanner::rank(all, objective("time"));
    QVERIFY(ranked.front().refused.empty());
    for (const auto &r : ranked)
        if (std::find(r.names.begin(), r.names.end(), "C") != r.names.end())
            QVERIFY(!ClusterPlanner::unsuitable(r, PlanObjective{}).empty());
}

void TestClusterPlanModel::linkErrorsRefuseGroups()
{
    // A link that could not be measured: the device may train alone, in no group.
    auto devices = threeDevices(1e12);
    devices[1].link_error = "probe timed out";
    ClusterPlanner p(devices, work());
    QVERIFY(p.predict({1}, PlanMode::Sync).refused.empty());
    QCOMPARE(p.predict({0, 1}, PlanMode::Sync).refused,
             std::string("the link of B was not measured: probe timed out"));
    QCOMPARE(p.predict({}, PlanMode::Sync).refused, std::string("no device"));
}

void TestClusterPlanModel::modesCommunicateDifferently()
{
    ClusterPlanner p(threeDevices(1e6), work());
    const auto all = p.candidates({PlanMode::Sync, PlanMode::LocalSgd, PlanMode::Async});
    // Singles once (sync); pairs and the triple in every mode: 3 + 4 x 3.
    QCOMPARE(all.size(), std::size_t(15));
    const Names ab{"A", "B"};
    const auto &sync = find(all, ab, PlanMode::Sync);
    const auto &local = find(all, ab, PlanMode::LocalSgd);
    const auto &async = find(all, ab, PlanMode::Async);
    // local SGD averages twice in ten steps (at 8 and at the end) where sync reduces ten times
    QVERIFY(qAbs(local.communication_seconds - 2 * 2 * (4000020.0 / 2 / 1e6)) < 1e-6);
    QVERIFY(local.seconds < sync.seconds);
    // async: the data split 799 / 201; B pushes its 201 in local batches of 20 (11 pushes, the
    // slowest), each 1 M values up and down in bfloat16 (2 MB each way) over 1 MB/s ...
    QVERIFY2(qAbs(async.seconds - 11 * (0.08 + 4.0)) < 1e-6,
             qPrintable(QString::number(async.seconds)));
    QVERIFY(qAbs(async.communication_seconds - 11 * 4.0) < 1e-6);
    // ... and with the float32 exchange (a job that asks for it), 4 MB each way
    PlanWork float32 = work();
    float32.async_value_bytes = 4.0;
    const auto asyncFloat32 =
        ClusterPlanner(threeDevices(1e6), float32).predict(async.devices, PlanMode::Async);
    QVERIFY2(qAbs(asyncFloat32.seconds - 11 * (0.08 + 8.0)) < 1e-6,
             qPrintable(QString::number(asyncFloat32.seconds)));
    QCOMPARE(chosen(all, "time"), Names{"A"});
    // Without sync among the modes a single device is planned in each mode asked for.
    QCOMPARE(p.candidates({PlanMode::LocalSgd}).size(), std::size_t(7));
}

void TestClusterPlanModel::objectivesParsed()
{
    std::string error;
    QVERIFY(PlanObjective::parse("EDP", &error)->kind == PlanObjective::Kind::Edp);
    QVERIFY(PlanObjective::parse(" energy ", &error)->kind == PlanObjective::Kind::Energy);
    const auto mix = PlanObjective::parse("mix:time=1,energy=2.5", &error);
    QVERIFY(mix && mix->energy_weight == 2.5 && mix->time_weight == 1.0);
    QCOMPARE(mix->name(), std::string("mix:time=1,energy=2.5"));
    QCOMPARE(PlanObjective::parse(mix->name(), &error)->energy_weight, 2.5);
    QCOMPARE(objective("power").name(), std::string("power"));
    QVERIFY(!PlanObjective::parse("speed", &error));
    QVERIFY(contains(error, "time, power, energy, edp"));
    QVERIFY(contains(error, "not 'speed'"));
    QVERIFY(!PlanObjective::parse("mix:time=-1", &error));
    QVERIFY(contains(error, "'time=-1'"));
    QVERIFY(!PlanObjective::parse("mix:time=x", &error));
    QVERIFY(!PlanObjective::parse("mix:time=inf", &error));
    QVERIFY(!PlanObjective::parse("mix:speed=1", &error));
    QVERIFY(contains(error, "'speed' is not time, power, energy or edp"));
    QVERIFY(!PlanObjective::parse("mix:time=0", &error));
    QVERIFY(contains(error, "no weight"));
    // What ranking reads: power only where a figure or limit asks for it.
    QVERIFY(!objective("time").needsPower());
    QVERIFY(objective("edp").needsPower());
    QVERIFY(objective("mix:time=1,energy=1").needsPower());
    auto limited = objective("time");
    limited.max_watts = 5;
    QVERIFY(limited.needsPower());
}

void TestClusterPlanModel::workRefused()
{
    QVERIFY_THROWS_EXCEPTION(Error, (void)ClusterPlanner({}, work()));
    PlanWork none = work();
    none.batch = 0;
    QVERIFY_THROWS_EXCEPTION(Error, (void)ClusterPlanner(threeDevices(1e6), none));
    std::vector<PlanDevice> many(ClusterPlanner::kMaxDevices + 1, device("X", 0.001, 1, 2, 1e6));
    QVERIFY_THROWS_EXCEPTION(Error, (void)ClusterPlanner(many, work()));
}

QTEST_APPLESS_MAIN(TestClusterPlanModel)
#include "tst_clusterplanmodel.moc"

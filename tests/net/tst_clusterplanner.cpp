// The cluster planner's adapter (net/planner/clusterplanner.h): a node's job_ready profile read
// into the model's inputs, the work from the job, and the model's answers (tests/core/
// tst_clusterplanmodel.cpp checks the maths by hand) coming back with Qt's types and the
// training modes: the same figures, names, refusals and ranking.

#include "core/batchshares.h"
#include "net/planner/clusterplanner.h"

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

} // namespace

class TestClusterPlanner : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void readyProfileRead();
    void olderNodesBodiesRead();
    void workFromTheJobAndReady();
    void answersAsTheModel();
    void planFromReadyBodies();
    void objectivesParsed();
};

void TestClusterPlanner::readyProfileRead()
{
    // What a node says when ready, as the trainer's profile() writes it.
    JobReady ready;
    ProfileReport &profile = ready.profile;
    profile.small_batch = 16;
    profile.large_batch = 64;
    profile.small_step_seconds = 0.020;
    profile.large_step_seconds = 0.068;
    profile.update_seconds = 0.002;
    profile.eval_seconds_per_sample = 0.0004;
    profile.max_local_batch = 65;
    LinkFigures link;
    link.rtt_seconds = 0.001;
    link.rates_timed = true;
    link.up_bytes_per_second = 1.2e7;
    link.down_bytes_per_second = 1.1e7;
    profile.link = link;
    profile.exchange.timed = true;
    profile.exchange.seconds_per_byte = 2.5e-8;
    profile.exchange.bytes = 244000;
    profile.exchange.repeats = 7;
    const DeviceMeasurement d = measurementFromReady(QStringLiteral("pi"), ready);
    QVERIFY(qAbs(d.step_per_sample_seconds - 0.001) < 1e-12);
    QVERIFY(qAbs(d.step_fixed_seconds - 0.004) < 1e-12);
    QCOMPARE(d.update_seconds, 0.002);
    QCOMPARE(d.max_local_batch, 65);
    QCOMPARE(d.up_bytes_per_second, 1.2e7);
    QCOMPARE(d.exchange_seconds_per_byte, 2.5e-8);
    QVERIFY(d.link_error.isEmpty());
    // The body as it came over the wire reads the same.
    const DeviceMeasurement sent = measurementFromReady(QStringLiteral("pi"), ready.toCbor());
    QCOMPARE(sent.step_per_sample_seconds, d.step_per_sample_seconds);
    QCOMPARE(sent.step_fixed_seconds, d.step_fixed_seconds);
    QCOMPARE(sent.down_bytes_per_second, 1.1e7);
    QCOMPARE(sent.exchange_seconds_per_byte, 2.5e-8);
    // A node that could not time its exchange (an error instead of figures): no CPU bound.
    JobReady failed = ready;
    failed.profile.exchange = ExchangeFigures();
    failed.profile.exchange.error = QStringLiteral("cannot connect");
    const DeviceMeasurement unmeasured = measurementFromReady(QStringLiteral("pi"), failed);
    QCOMPARE(unmeasured.exchange_seconds_per_byte, 0.0);
    QCOMPARE(unmeasured.exchange_error, QStringLiteral("cannot connect"));
    QVERIFY(d.exchange_error.isEmpty());
    QVERIFY(d.link_rates_timed);
    QCOMPARE(d.exchange_busy_seconds_per_byte, 0.0);
    // Timed over the link, which stood for the transfers: a round trip and no rates; the
    // exchange's CPU per byte.
    JobReady overLink = ready;
    overLink.profile.link = LinkFigures();
    overLink.profile.link->rtt_seconds = 0.001;
    overLink.profile.exchange = ExchangeFigures();
    overLink.profile.exchange.timed = true;
    overLink.profile.exchange.seconds_per_byte = 8e-8;
    overLink.profile.exchange.over = ExchangeFigures::Over::Link;
    overLink.profile.exchange.busy_seconds_per_byte = 3e-9;
    const DeviceMeasurement noRates = measurementFromReady(QStringLiteral("pi"), overLink);
    QVERIFY(noRates.link_error.isEmpty());
    QVERIFY(!noRates.link_rates_timed);
    QCOMPARE(noRates.rtt_seconds, 0.001);
    QCOMPARE(noRates.up_bytes_per_second, 0.0);
    QCOMPARE(noRates.exchange_busy_seconds_per_byte, 3e-9);
    QCOMPARE(noRates.exchange_over, DeviceMeasurement::ExchangeOver::Link);
    // A link probe that failed: the device trains alone or not at all.
    JobReady probeFailed = ready;
    probeFailed.profile.link = LinkFigures();
    probeFailed.profile.link->error = QStringLiteral("refused");
    QCOMPARE(measurementFromReady(QStringLiteral("pi"), probeFailed).link_error,
             QStringLiteral("refused"));
}

void TestClusterPlanner::olderNodesBodiesRead()
{
    // A job_ready as a node from before the profile wrote it (its speed and parameter count):
    // the strict reader refuses it, the planner takes its speed as the time per sample and
    // knows nothing else about it.
    const QCborMap older{{QStringLiteral("images_per_second"), 250},
                         {QStringLiteral("train_samples"), 900},
                         {QStringLiteral("parameters"), 777}};
    QString error;
    QVERIFY(!JobReady::fromCbor(older, &error));
    const DeviceMeasurement d = measurementFromReady(QStringLiteral("old"), older);
    QCOMPARE(d.step_per_sample_seconds, 0.004);
    QCOMPARE(d.step_fixed_seconds, 0.0);
    QCOMPARE(d.max_local_batch, -1);
    QCOMPARE(d.idle_watts, -1.0);
    QCOMPARE(d.busy_watts, -1.0);
    QCOMPARE(d.exchange_seconds_per_byte, 0.0);
    QCOMPARE(d.exchange_over, DeviceMeasurement::ExchangeOver::Unknown);
    QCOMPARE(d.link_error, QStringLiteral("the node did not probe it"));
    QVERIFY(!d.link_rates_timed);
    // It plans: the work from its parameter count, and a device that trains alone.
    JobSpec job;
    job.epochs = 1;
    job.batch = 100;
    const auto time = *PlanObjective::parse(QStringLiteral("time"), &error);
    const ClusterPlanResult plan =
        planCluster({{QStringLiteral("old"), older}}, job, time, {TrainingMode::Sync});
    QVERIFY(plan.error.isEmpty());
    QVERIFY(plan.chosen);
    QCOMPARE(plan.chosen->names, QStringList{QStringLiteral("old")});
    // A profile without power figures, link or exchange (a node from before them): unknown
    // watts and no link, the rest as measured.
    JobReady partial;
    partial.profile.small_batch = 16;
    partial.profile.large_batch = 64;
    partial.profile.small_step_seconds = 0.020;
    partial.profile.large_step_seconds = 0.068;
    const DeviceMeasurement p = measurementFromReady(QStringLiteral("pi"), partial.toCbor());
    QVERIFY(qAbs(p.step_per_sample_seconds - 0.001) < 1e-12);
    QCOMPARE(p.idle_watts, -1.0);
    QCOMPARE(p.link_error, QStringLiteral("the node did not probe it"));
    // Noise that would give a negative intercept: the larger batch's time per sample.
    partial.profile.small_step_seconds = 0.010;
    partial.profile.large_step_seconds = 0.064;
    const DeviceMeasurement noisy = measurementFromReady(QStringLiteral("pi"), partial);
    QCOMPARE(noisy.step_fixed_seconds, 0.0);
    QCOMPARE(noisy.step_per_sample_seconds, 0.001);
}

void TestClusterPlanner::workFromTheJobAndReady()
{
    JobSpec job;
    job.epochs = 3;
    job.batch = 32;
    job.local_steps = 4;
    job.exchange = QStringLiteral("float32");
    JobReady ready;
    ready.train_samples = 900;
    ready.test_samples = 100;
    ready.gradient_floats = 5000;
    ready.averaged_floats = 5200;
    ready.buffer_floats = 200;
    const PlanWork w = workFromReady(job, ready);
    QCOMPARE(w.train_samples, std::int64_t(900));
    QCOMPARE(w.test_samples, std::int64_t(100));
    QCOMPARE(w.epochs, 3);
    QCOMPARE(w.batch, std::int64_t(32));
    QCOMPARE(w.local_steps, 4);
    QCOMPARE(w.gradient_floats, std::int64_t(5000));
    QCOMPARE(w.averaged_floats, std::int64_t(5200));
    QCOMPARE(w.buffer_floats, std::int64_t(200));
    QCOMPARE(w.async_value_bytes, 4.0);
    job.exchange = QStringLiteral("bf16");
    QCOMPARE(workFromReady(job, JobReady()).async_value_bytes, 2.0);
    // An older node says its parameter count alone: sync reduces and local SGD averages it.
    JobReady older;
    older.parameters = 777;
    const PlanWork o = workFromReady(job, older);
    QCOMPARE(o.gradient_floats, std::int64_t(777));
    QCOMPARE(o.averaged_floats, std::int64_t(777));
}

void TestClusterPlanner::answersAsTheModel()
{
    // Devices that exercise every path: a memory cap, a device that cannot hold a sample, one
    // without a power figure, one whose link was not measured.
    auto devices = threeDevices(1e6);
    devices.push_back(device("D", 0.002, 1, 2, 1e6));
    devices[0].max_local_batch = 50;
    devices[1].busy_watts = -1;
    devices[2].link_error = QStringLiteral("probe timed out");
    devices[3].max_local_batch = 0;
    const ClusterPlanner planner(devices, work());
    std::vector<edgetrain::core::PlanDevice> planDevices;
    for (const auto &d : devices)
        planDevices.push_back(d.planDevice());
    const edgetrain::core::ClusterPlanner model(planDevices, work());

    const std::vector<TrainingMode> modes{TrainingMode::Sync, TrainingMode::LocalSgd,
                                          TrainingMode::Async};
    const auto all = planner.candidates(modes);
    const auto expected =
        model.candidates({edgetrain::core::PlanMode::Sync, edgetrain::core::PlanMode::LocalSgd,
                          edgetrain::core::PlanMode::Async});
    QCOMPARE(all.size(), expected.size());
    QCOMPARE(all.size(), std::size_t(4 + 11 * 3)); // singles once, 11 groups in each mode
    int refused = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
        const PlanCandidate &c = all[i];
        const auto &e = expected[i];
        QCOMPARE(c.devices, e.devices);
        QCOMPARE(c.names.size(), qsizetype(e.names.size()));
        for (qsizetype k = 0; k < c.names.size(); ++k)
            QCOMPARE(c.names[k], QString::fromStdString(e.names[std::size_t(k)]));
        QCOMPARE(planMode(c.mode), e.mode);
        QCOMPARE(c.refused, QString::fromStdString(e.refused));
        QCOMPARE(c.seconds, e.seconds);
        QCOMPARE(c.watts, e.watts);
        QCOMPARE(c.edp, e.edp);
        QCOMPARE(c.power_known, e.power_known);
        QCOMPARE(c.shares, e.shares);
        refused += c.refused.isEmpty() ? 0 : 1;
        // and back: the core candidate the adapter hands the model is the one it made
        const auto back = c.toCore();
        QCOMPARE(back.names, e.names);
        QCOMPARE(back.refused, e.refused);
    }
    QVERIFY(refused > 0);
    QCOMPARE(find(all, {QStringLiteral("D")}).refused,
             QStringLiteral("D cannot hold one sample of the model in its memory"));
    QCOMPARE(find(all, {QStringLiteral("A"), QStringLiteral("C")}).refused,
             QStringLiteral("the link of C was not measured: probe timed out"));

    for (const char *text : {"time", "energy", "edp", "power", "mix:time=1,energy=3"}) {
        QString error;
        auto o = *PlanObjective::parse(QString::fromLatin1(text), &error);
        o.max_watts = 12;
        const auto ranked = ClusterPlanner::rank(all, o);
        const auto order = edgetrain::core::ClusterPlanner::rankOrder(expected, o);
        for (std::size_t i = 0; i < all.size(); ++i) {
            QCOMPARE(ranked[i].devices, expected[order[i]].devices);
            QCOMPARE(ranked[i].mode, trainingMode(expected[order[i]].mode));
            QCOMPARE(ClusterPlanner::unsuitable(ranked[i], o),
                     QString::fromStdString(
                         edgetrain::core::ClusterPlanner::unsuitable(expected[order[i]], o)));
        }
    }
    QCOMPARE(planner.allreduceSeconds({0, 1, 2}, 1e6), model.allreduceSeconds({0, 1, 2}, 1e6));
    QCOMPARE(planner.shares({0, 1}), model.shares({0, 1}));
    // settledShares over measurements is the model's over their costs
    QCOMPARE(settledShares({&devices[0], &devices[1]}, 100), model.shares({0, 1}));
    QCOMPARE(ClusterPlanner::kMaxDevices, edgetrain::core::ClusterPlanner::kMaxDevices);
}

void TestClusterPlanner::planFromReadyBodies()
{
    // Two nodes' job_ready bodies: A computes 1 ms a sample (+ 4 ms a step), B four times
    // slower; free links. Over 8 Mbit/s the model's gradients would take seconds a step.
    auto ready = [](double scale, double seconds) {
        JobReady r;
        r.train_samples = 1000;
        r.gradient_floats = r.averaged_floats = 1000000;
        r.profile.small_batch = 16;
        r.profile.large_batch = 64;
        r.profile.small_step_seconds = 0.020 * scale;
        r.profile.large_step_seconds = 0.068 * scale;
        r.profile.idle_watts = 2.0;
        r.profile.busy_watts = 5.0;
        r.profile.seconds = seconds;
        LinkFigures link;
        link.rtt_seconds = 0.0005;
        link.seconds = seconds / 2;
        link.rates_timed = true;
        link.up_bytes_per_second = link.down_bytes_per_second = 1e6;
        r.profile.link = link;
        return r.toCbor();
    };
    JobSpec job;
    job.epochs = 1;
    job.batch = 100;
    QString error;
    const auto time = *PlanObjective::parse(QStringLiteral("time"), &error);
    const ClusterPlanResult plan =
        planCluster({{QStringLiteral("A"), ready(1, 3.0)}, {QStringLiteral("B"), ready(4, 5.0)}},
                    job, time, {TrainingMode::Sync});
    QVERIFY(plan.error.isEmpty());
    QCOMPARE(plan.devices.size(), std::size_t(2));
    QCOMPARE(plan.ranked.size(), std::size_t(3));
    QCOMPARE(plan.profiling_seconds, 5.0);
    QCOMPARE(plan.link_probe_seconds, 2.5);
    QVERIFY(plan.chosen);
    QCOMPARE(plan.chosen->names, QStringList{QStringLiteral("A")}); // 4 s an allreduce
    QCOMPARE(plan.objective.name(), QStringLiteral("time"));
    // No node, or more than the planner takes: an error, no plan.
    const ClusterPlanResult none = planCluster({}, job, time, {TrainingMode::Sync});
    QVERIFY(!none.chosen);
    QCOMPARE(none.error, QStringLiteral("the planner takes 1 to 12 nodes, not 0"));
}

void TestClusterPlanner::objectivesParsed()
{
    QString error;
    QVERIFY(PlanObjective::parse(QStringLiteral("EDP"), &error)->kind == PlanObjective::Kind::Edp);
    const auto mix = PlanObjective::parse(QStringLiteral("mix:time=1,energy=2.5"), &error);
    QVERIFY(mix && mix->energy_weight == 2.5 && mix->time_weight == 1.0);
    QCOMPARE(mix->name(), QStringLiteral("mix:time=1,energy=2.5"));
    QCOMPARE(PlanObjective::parse(mix->name(), &error)->energy_weight, 2.5);
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

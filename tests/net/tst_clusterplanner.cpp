// The cluster planner's adapter (net/planner/clusterplanner.h): a node's job_ready profile read
// into the model's inputs, the work from the job, and the model's answers (tests/core/
// tst_clusterplanmodel.cpp checks the maths by hand) coming back with Qt's types and the
// training modes: the same figures, names, refusals and ranking.

#include "core/batchshares.h"
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

} // namespace

class TestClusterPlanner : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void readyProfileRead();
    void workFromTheJobAndReady();
    void answersAsTheModel();
    void planFromReadyBodies();
    void objectivesParsed();
};

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

void TestClusterPlanner::workFromTheJobAndReady()
{
    JobSpec job;
    job.epochs = 3;
    job.batch = 32;
    job.local_steps = 4;
    job.exchange = QStringLiteral("float32");
    const QCborMap ready{{QStringLiteral("train_samples"), 900},
                         {QStringLiteral("test_samples"), 100},
                         {QStringLiteral("gradient_floats"), 5000},
                         {QStringLiteral("averaged_floats"), 5200},
                         {QStringLiteral("buffer_floats"), 200}};
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
    QCOMPARE(workFromReady(job, QCborMap{}).async_value_bytes, 2.0);
    // An older node says its parameter count alone: sync reduces and local SGD averages it.
    const PlanWork older = workFromReady(job, QCborMap{{QStringLiteral("parameters"), 777}});
    QCOMPARE(older.gradient_floats, std::int64_t(777));
    QCOMPARE(older.averaged_floats, std::int64_t(777));
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
        const QCborMap profile{
            {QStringLiteral("batches"), QCborArray{16, 64}},
            {QStringLiteral("step_seconds"), QCborArray{0.020 * scale, 0.068 * scale}},
            {QStringLiteral("idle_watts"), 2.0},
            {QStringLiteral("busy_watts"), 5.0},
            {QStringLiteral("seconds"), seconds},
            {QStringLiteral("link"), QCborMap{{QStringLiteral("rtt_seconds"), 0.0005},
                                              {QStringLiteral("seconds"), seconds / 2},
                                              {QStringLiteral("up_bytes_per_second"), 1e6},
                                              {QStringLiteral("down_bytes_per_second"), 1e6}}}};
        return QCborMap{{QStringLiteral("profile"), profile},
                        {QStringLiteral("train_samples"), 1000},
                        {QStringLiteral("test_samples"), 0},
                        {QStringLiteral("gradient_floats"), 1000000},
                        {QStringLiteral("averaged_floats"), 1000000}};
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

// The study's runs and what is made of their results (net/lab/clusterstudy.h), on records written
// by hand with known answers.

#include "core/error.h"
#include "net/lab/clusterstudy.h"
#include "net/lab/edgelab.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <map>
#include <set>

using namespace edgetrain;
using net::ClusterStudy;
using net::StudyRecord;
using net::StudyRun;

namespace {

const QStringList kNodes{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")};

/** A train run's record: its nodes, training seconds and joules as `train --json` says them. */
StudyRecord trained(const QStringList &nodes, double seconds, double joules)
{
    StudyRecord r;
    r.run.job = {QStringLiteral("lenet5"), 64, 4096, 512, 1};
    r.run.nodes = nodes;
    r.result.set("training_seconds", seconds).set("training_joules", joules);
    return r;
}

core::Json candidate(const QStringList &nodes, double seconds, double watts, bool suitable = true)
{
    core::Json c;
    core::Json list = core::Json::array();
    for (const QString &n : nodes)
        list.push(n.toStdString());
    c.set("nodes", std::move(list)).set("predicted_seconds", seconds);
    c.set("predicted_watts", watts).set("predicted_joules", seconds * watts);
    c.set("predicted_edp", seconds * seconds * watts).set("suitable", suitable);
    return c;
}

/** The plan run's record of a job, over kNodes, with these candidates. */
StudyRecord planned(std::initializer_list<core::Json> candidates)
{
    StudyRecord plan;
    plan.run.kind = StudyRun::Kind::Plan;
    plan.run.job = {QStringLiteral("lenet5"), 64, 4096, 512, 1};
    plan.run.nodes = kNodes;
    core::Json list = core::Json::array();
    for (const core::Json &c : candidates)
        list.push(c);
    plan.result.set("candidates", std::move(list));
    return plan;
}

} // namespace

class TestClusterStudy : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void runsOfEachPreset();
    void choiceRanksThePicksAgainstMeasurement();
    void choiceWithoutPowerJudgesTimeOnly();
    void choiceTakesAlikeDevicesAsOne();
    void contendersAreMeasuredAgain();
    void choiceJudgesOnRepeatedMeasurements();
    void scalingAveragesEpochsAndNodes();
    void recordsRoundTripAndSurviveACutLine();
    void badRecordsNameFileLineAndField();
};

void TestClusterStudy::runsOfEachPreset()
{
    ClusterStudy::Options pi = ClusterStudy::defaults(ClusterStudy::Preset::PiCluster);
    const auto piRuns = ClusterStudy::runs(pi, kNodes);
    // every job, sync and async, on the first 1, 2, 3 nodes
    QCOMPARE(piRuns.size(), pi.jobs.size() * 2 * 3);
    QCOMPARE(piRuns[0].nodes, QStringList{QStringLiteral("a")});
    QCOMPARE(piRuns[2].nodes, kNodes);
    QCOMPARE(piRuns[3].mode, net::TrainingMode::Async);
    pi.max_nodes = 2;
    QCOMPARE(ClusterStudy::runs(pi, kNodes).size(), pi.jobs.size() * 2 * 2);

    const ClusterStudy::Options choice =
        ClusterStudy::defaults(ClusterStudy::Preset::ClusterChoice);
    QCOMPARE(choice.jobs.size(), std::size_t(6)); // lenet5 and mlp x batch 32, 64, 128
    const auto runs = ClusterStudy::runs(choice, kNodes);
    QCOMPARE(runs.size(), choice.jobs.size() * (1 + 7)); // the plan, then every non-empty subset
    QCOMPARE(runs[0].kind, StudyRun::Kind::Plan);
    QCOMPARE(runs[0].nodes, kNodes);
    QCOMPARE(runs[1].nodes.size(), 1); // the smaller subsets first
    QCOMPARE(runs[7].nodes, kNodes);   // the last of the job's: all three
    std::set<QString> keys;
    for (const StudyRun &r : runs)
        keys.insert(r.key());
    QCOMPARE(keys.size(), runs.size()); // what a resumed study matches by is unique
}

void TestClusterStudy::choiceRanksThePicksAgainstMeasurement()
{
    // The plan predicts: a 10 s at 2 W, b 6 s at 5 W, a+b 4 s at 7 W, c unsuitable (out of
    // memory) though it would be fastest. Picks: time a+b (4 s), power a (2 W), energy a
    // (20 J < 28 J < 30 J), EDP a+b (112 < 180 < 200).
    StudyRecord plan = planned({candidate({"a"}, 10, 2), candidate({"b"}, 6, 5),
                                candidate({"a", "b"}, 4, 7), candidate({"c"}, 1, 1, false)});
    plan.result.set("profiling_seconds", 2.0);
    // Measured: a 11 s 22 J (2 W), b 5 s 30 J (6 W), a+b 6 s 45 J (7.5 W).
    // time: b 5 < a+b 6 < a 11 -> the pick a+b is second. power: a 2 < b 6 < a+b 7.5 -> best.
    // energy: a 22 < b 30 < a+b 45 -> best. EDP: b 150 < a 242 < a+b 270 -> the pick a+b third.
    const std::vector<StudyRecord> records{plan, trained({"a"}, 11, 22), trained({"b"}, 5, 30),
                                           trained({"a", "b"}, 6, 45)};
    const auto a = ClusterStudy::choice(records);
    QCOMPARE(a.runs.size(), std::size_t(3));
    QCOMPARE(a.cases.size(), std::size_t(4));
    QVERIFY(a.skipped.isEmpty());
    std::map<QString, int> rank;
    for (const auto &c : a.cases)
        rank[c.objective] = c.rank;
    QCOMPARE(rank["time"], 2);
    QCOMPARE(rank["power"], 1);
    QCOMPARE(rank["energy"], 1);
    QCOMPARE(rank["edp"], 3);
    QCOMPARE(a.best, 2);
    QCOMPARE(a.best_or_second, 3);
    QCOMPARE(a.cases[0].measured_best, QStringList{QStringLiteral("b")});
    QCOMPARE(a.cases[0].picked_value, 6.0);
    QCOMPARE(a.cases[0].best_value, 5.0);
    // time errors |10-11|/11, |6-5|/5, |4-6|/6: 0.0909, 0.2, 0.333 -> median 0.2
    QVERIFY(qFuzzyCompare(a.median_time_error, 0.2));
    QVERIFY(qFuzzyCompare(a.p90_time_error, 2.0 / 6.0)); // nearest rank of three: the largest
    // profiling 2 s against the fastest measured 5 s
    QVERIFY(qFuzzyCompare(a.median_profiling_share, 2.0 / 7.0));
    const QByteArray csv = ClusterStudy::choiceCasesCsv(a);
    QVERIFY2(csv.contains(
                 "lenet5,64,time,a+b,b,2,3,6,5,0.2,2,3,b,1,6,6,6,1,5,5,5,b,5,5,5,false,false\n"),
             csv.constData());
    // regret, picked / best - 1: time 6/5, power and energy 0, EDP 270/150 -> median 0.1
    QVERIFY(qFuzzyCompare(a.cases[0].regret(), 0.2));
    QVERIFY(qFuzzyCompare(a.median_regret, 0.1));
    QVERIFY(qFuzzyCompare(a.max_regret, 0.8));
}

void TestClusterStudy::choiceTakesAlikeDevicesAsOne()
{
    // a1 and a2 are alike (one profile, emulated alike), b is not.
    net::LabState lab;
    auto node = [](const char *name, const char *profile, double cores, std::int64_t bits) {
        net::LabNode n;
        n.name = QString::fromLatin1(name);
        n.profile_id = QString::fromLatin1(profile);
        n.cpu_cores = cores;
        n.cpu_quota_cores = cores * (name[1] == '1' ? 1.01 : 0.99); // corrected per node
        n.memory_limit_bytes = std::int64_t(768) << 20;
        n.link_bits_per_second = bits;
        return n;
    };
    lab.nodes = {node("a1", "pi3b", 0.1, 100000000), node("a2", "pi3b", 0.1, 100000000),
                 node("b1", "pi5", 0.55, 1000000000)};
    auto configurations = ClusterStudy::configurations(lab);
    QCOMPARE(configurations.size(), std::size_t(3));
    QCOMPARE(configurations["a1"], configurations["a2"]);
    QVERIFY(configurations["a1"] != configurations["b1"]);
    QCOMPARE(configurations["a1"], QStringLiteral("pi3b, 0.1 cores, 768 MiB, 100 Mbit/s"));
    lab.nodes[1].link_bits_per_second = 1000000000; // the same board on another link is not alike
    QVERIFY(ClusterStudy::configurations(lab)["a1"] != ClusterStudy::configurations(lab)["a2"]);

    // Predicted: a1 5 s 2 W, a2 5.1 s 2 W, b1 4 s 6 W. Picks: time b1; power a1 (a tie, the
    // faster); energy a1 (10 J); EDP a1 (50).
    // Measured: a1 6 s 12 J (2 W), a2 4 s 8.4 J (2.1 W), b1 4.5 s 27 J (6 W).
    StudyRecord plan =
        planned({candidate({"a1"}, 5, 2), candidate({"a2"}, 5.1, 2), candidate({"b1"}, 4, 6)});
    const std::vector<StudyRecord> records{plan, trained({"a1"}, 6, 12), trained({"a2"}, 4, 8.4),
                                           trained({"b1"}, 4.5, 27)};
    const auto a = ClusterStudy::choice(records, configurations);
    QCOMPARE(a.cases.size(), std::size_t(4));
    std::map<QString, std::pair<int, int>> rank; // strict, by configuration
    for (const auto &c : a.cases) {
        rank[c.objective] = {c.rank, c.configuration_rank};
        QCOMPARE(c.configurations, 2);
    }
    // time: a2 4 < b1 4.5 < a1 6, the pick second; the pi3b configuration's mean 5 s is slower
    // than b1's 4.5 (its best run alone would not be), so b1 is the best configuration.
    QCOMPARE(rank["time"], std::make_pair(2, 1));
    QCOMPARE(rank["power"], std::make_pair(1, 1));  // a1 2 < a2 2.1 < b1 6
    QCOMPARE(rank["energy"], std::make_pair(2, 1)); // a2 8.4 < a1 12 < b1 27; pi3b 10.2
    QCOMPARE(rank["edp"], std::make_pair(2, 1));    // a2 33.6 < a1 72 < b1 121.5; pi3b 52.8
    QVERIFY(a.by_configuration);
    QCOMPARE(a.best, 1);
    QCOMPARE(a.best_or_second, 4);
    QCOMPARE(a.best_by_configuration, 4);
    QCOMPARE(a.best_or_second_by_configuration, 4);
    const QByteArray csv = ClusterStudy::choiceCasesCsv(a);
    QVERIFY2(csv.contains("lenet5,64,time,b1,a2,2,3,4.5,4,0.125,1,2,a2,1,4.5,4.5,4.5,1,4,4,4,a2,4,"
                          "4,4,false,false\n"),
             csv.constData());
    const core::Json summary = ClusterStudy::choiceSummary(a);
    QCOMPARE(summary.find("best_by_configuration")->toInt(), 4);
    QCOMPARE(summary.find("by_configuration")->toBool(), true);

    // Without the lab's configurations every subset is its own: the strict ranks.
    const auto strict = ClusterStudy::choice(records);
    QVERIFY(!strict.by_configuration);
    for (const auto &c : strict.cases) {
        QCOMPARE(c.configuration_rank, c.rank);
        QCOMPARE(c.configurations, 3);
    }
    QCOMPARE(strict.best_by_configuration, strict.best);

    // Kept beside the runs (the lab is gone when a later --report-only reads them).
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("configurations.json"));
    QVERIFY(ClusterStudy::readConfigurations(path).empty()); // none kept: none
    ClusterStudy::writeConfigurations(path, configurations);
    QCOMPARE(ClusterStudy::readConfigurations(path), configurations);
    QFile bad(path);
    QVERIFY(bad.open(QIODevice::WriteOnly | QIODevice::Truncate));
    bad.write("{\"a1\": 3}");
    bad.close();
    try {
        ClusterStudy::readConfigurations(path);
        QFAIL("a number was taken for a configuration");
    } catch (const core::FormatError &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(path) &&
                     QString::fromUtf8(e.what()).contains(QLatin1String("\"a1\"")),
                 e.what());
    }
}

void TestClusterStudy::choiceWithoutPowerJudgesTimeOnly()
{
    const StudyRecord plan = planned({candidate({"a"}, 3, 2), candidate({"b"}, 2, 2)});
    StudyRecord failed = trained({"a"}, 0, 0);
    failed.error = QStringLiteral("node a lost");
    failed.result = core::Json();
    const auto a = ClusterStudy::choice({plan, failed, trained({"b"}, 2.5, 0)});
    QCOMPARE(a.cases.size(), std::size_t(1));
    QCOMPARE(a.cases[0].objective, QStringLiteral("time"));
    QCOMPARE(a.cases[0].rank, 1); // b, the only one measured
    QCOMPARE(a.cases[0].regret(), 0.0);
    QCOMPARE(a.cases[0].measured, 1);
    QCOMPARE(a.skipped, (QStringList{"power", "energy", "edp"}));
}

namespace {

/** Twins a and b (predicted 2 and 2.01 W) and a faster c: picks time c; power, energy, EDP a.
 *  First measured: a 5 s 10.5 J (2.1 W), b 5.2 s 10.4 J (2.0 W), c 3.2 s 19.2 J (6 W): time
 *  c best (a second); power b 2.0 < a 2.1; energy b 10.4 < a 10.5; EDP a 52.5 < b 54.08. */
std::vector<StudyRecord> twinsMeasuredOnce()
{
    return {planned({candidate({"a"}, 5, 2), candidate({"b"}, 5, 2.01), candidate({"c"}, 3, 6)}),
            trained({"a"}, 5, 10.5), trained({"b"}, 5.2, 10.4), trained({"c"}, 3.2, 19.2)};
}

StudyRecord again(const QStringList &nodes, double seconds, double joules, int measurement)
{
    StudyRecord r = trained(nodes, seconds, joules);
    r.run.measurement = measurement;
    return r;
}

} // namespace

void TestClusterStudy::contendersAreMeasuredAgain()
{
    ClusterStudy::Options options = ClusterStudy::defaults(ClusterStudy::Preset::ClusterChoice);
    options.jobs = {{QStringLiteral("lenet5"), 64, 4096, 512, 1}};
    QCOMPARE(options.measurements, 3);
    const std::vector<StudyRecord> once = twinsMeasuredOnce();
    // time: c and its measured second a; power, energy: a and the measured best b; EDP: a and
    // its second b. Each subset once, all second measurements, then all thirds.
    const auto runs = ClusterStudy::repeats(options, once);
    QStringList got;
    for (const StudyRun &r : runs) {
        QCOMPARE(r.kind, StudyRun::Kind::Train);
        QCOMPARE(r.mode, net::TrainingMode::Sync);
        QCOMPARE(r.job.train_limit, 4096);
        got << r.nodes.join(QLatin1Char('+')) + QLatin1Char('/') + QString::number(r.measurement);
    }
    QCOMPARE(got, QStringList({"c/2", "a/2", "b/2", "c/3", "a/3", "b/3"}));
    QCOMPARE(runs[0].key(), QStringLiteral("train/lenet5/b64/l4096/t512/e1/sync/c/m2"));
    QCOMPARE(once[3].run.key(), QStringLiteral("train/lenet5/b64/l4096/t512/e1/sync/c"));
    // The same once the repeats are in (a resumed study finds the same runs).
    std::vector<StudyRecord> all = once;
    for (const StudyRun &r : runs) {
        StudyRecord rec = again(r.nodes, 5, 10, r.measurement);
        all.push_back(rec);
    }
    const auto resumed = ClusterStudy::repeats(options, all);
    QCOMPARE(resumed.size(), runs.size());
    for (std::size_t i = 0; i < runs.size(); ++i)
        QCOMPARE(resumed[i].key(), runs[i].key());
    // A failed run is not measured: b failed, so power's, energy's and EDP's contender is
    // c (the second after a); time's c and a.
    std::vector<StudyRecord> failed = once;
    failed[2].error = QStringLiteral("exit status 1");
    QStringList withoutB;
    for (const StudyRun &r : ClusterStudy::repeats(options, failed))
        withoutB << r.nodes.join(QLatin1Char('+')) + QLatin1Char('/') +
                        QString::number(r.measurement);
    QCOMPARE(withoutB, QStringList({"c/2", "a/2", "c/3", "a/3"}));
    // Another job's records, a study measuring once, pi-cluster, a job not yet planned: none.
    options.jobs[0].batch = 32;
    QVERIFY(ClusterStudy::repeats(options, once).empty());
    options.jobs[0].batch = 64;
    options.measurements = 1;
    QVERIFY(ClusterStudy::repeats(options, once).empty());
    options.measurements = 2;
    QCOMPARE(ClusterStudy::repeats(options, once).size(), std::size_t(3));
    options.preset = ClusterStudy::Preset::PiCluster;
    QVERIFY(ClusterStudy::repeats(options, once).empty());
    options.preset = ClusterStudy::Preset::ClusterChoice;
    QVERIFY(ClusterStudy::repeats(options, {once.begin() + 1, once.end()}).empty());

    // The measurement is kept in the record; an older record without it was the first.
    StudyRecord r = again({"a"}, 5, 10, 2);
    const core::Json j = ClusterStudy::recordJson(r);
    QCOMPARE(ClusterStudy::recordFromJson(j, "x").run.measurement, 2);
    core::Json old = j;
    auto &fields = old.toObject();
    fields.erase(std::remove_if(fields.begin(), fields.end(),
                                [](const auto &f) { return f.first == "measurement"; }),
                 fields.end());
    QCOMPARE(ClusterStudy::recordFromJson(old, "x").run.measurement, 1);
    core::Json bad = j;
    bad.set("measurement", 0);
    try {
        ClusterStudy::recordFromJson(bad, "runs.jsonl:4");
        QFAIL("a measurement 0 was read");
    } catch (const core::FormatError &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("runs.jsonl:4")) &&
                     QString::fromUtf8(e.what()).contains(QLatin1String("measurement")),
                 e.what());
    }
}

void TestClusterStudy::choiceJudgesOnRepeatedMeasurements()
{
    std::vector<StudyRecord> records = twinsMeasuredOnce();
    // c measured again: 3.1 s 18.6 J, 3.3 s 19.8 J (time: still the best by far).
    records.push_back(again({"c"}, 3.1, 18.6, 2));
    records.push_back(again({"c"}, 3.3, 19.8, 3));
    // The twins measured again: a 2.1, 1.95, 2.0 W (mean 2.017), b 2.0, 2.1, 2.05 W (2.05):
    // the pick a is the best on the means for power, energy and EDP.
    std::vector<StudyRecord> better = records;
    better.push_back(again({"a"}, 5, 9.75, 2));
    better.push_back(again({"a"}, 5, 10.0, 3));
    better.push_back(again({"b"}, 5, 10.5, 2));
    better.push_back(again({"b"}, 5, 10.25, 3));
    const auto a = ClusterStudy::choice(better);
    QCOMPARE(a.cases.size(), std::size_t(4));
    QCOMPARE(a.best, 2); // time and EDP on the first runs
    QCOMPARE(a.best_on_repeats, 4);
    QCOMPARE(a.best_within_spread, 4);
    QCOMPARE(a.repeated, 4);
    const auto &power = a.cases[1];
    QCOMPARE(power.objective, QStringLiteral("power"));
    QCOMPARE(power.rank, 2);
    QCOMPARE(power.contender, QStringList{QStringLiteral("b")});
    QCOMPARE(power.picked_measurements, 3);
    QCOMPARE(power.contender_measurements, 3);
    QVERIFY(qFuzzyCompare(power.picked_mean, (2.1 + 1.95 + 2.0) / 3));
    QVERIFY(qFuzzyCompare(power.picked_low, 1.95));
    QVERIFY(qFuzzyCompare(power.contender_high, 2.1));
    QCOMPARE(a.cases[0].contender, QStringList{QStringLiteral("a")}); // time: c's second
    // The runs' table keeps the first measurement, with the count of runs.
    for (const auto &run : a.runs) {
        QCOMPARE(run.measurements, 3);
        if (run.nodes == QStringList{QStringLiteral("a")})
            QVERIFY(qFuzzyCompare(run.measured_watts, 2.1));
    }
    const QByteArray csv = ClusterStudy::choiceCasesCsv(a);
    QVERIFY2(csv.contains("lenet5,64,power,a,b,2,3,2.1,2,0.05,2,3,b,3,2.01667,1.95,2.1,3,2.05,"
                          "2,2.1,a,2.01667,1.95,2.1,true,true\n"),
             csv.constData());
    const core::Json summary = ClusterStudy::choiceSummary(a);
    QCOMPARE(summary.find("best_on_repeats")->toInt(), 4);
    QCOMPARE(summary.find("best_within_spread")->toInt(), 4);
    QCOMPARE(summary.find("repeated_cases")->toInt(), 4);
    QCOMPARE(summary.find("most_measurements")->toInt(), 3);

    // Or a measured again 2.3 and 2.4 W, b 1.95 and 2.02 W: power a [2.1, 2.4] against
    // b [1.95, 2.02], apart (the same for energy); EDP a 52.5, 57.5, 60 (mean 56.7) against
    // b 54.08, 48.75, 50.5 (51.1): b the best, a's first run below b's highest: within the
    // spread. The first runs' EDP hit is not the best on the means.
    std::vector<StudyRecord> worse = records;
    worse.push_back(again({"a"}, 5, 11.5, 2));
    worse.push_back(again({"a"}, 5, 12, 3));
    worse.push_back(again({"b"}, 5, 9.75, 2));
    worse.push_back(again({"b"}, 5, 10.1, 3));
    const auto w = ClusterStudy::choice(worse);
    std::map<QString, std::pair<bool, bool>> judged; // best on repeats, within the spread
    for (const auto &c : w.cases)
        judged[c.objective] = {c.best_on_repeats, c.within_spread};
    QCOMPARE(judged["time"], std::make_pair(true, true));
    QCOMPARE(judged["power"], std::make_pair(false, false));
    QCOMPARE(judged["energy"], std::make_pair(false, false));
    QCOMPARE(judged["edp"], std::make_pair(false, true));
    QCOMPARE(w.best, 2);
    QCOMPARE(w.best_on_repeats, 1);
    QCOMPARE(w.best_within_spread, 2);

    // The best on the means can be a third subset, measured once. Predicted a 5, b 6, c 7 s:
    // the pick a; first measured a 5.5 (the best), b 5.6 (its contender), c 5.8; again a 6.0
    // and 6.2 (mean 5.9), b 6.1 and 6.3 (6.0): c's 5.8 the lowest mean, within a's range.
    const std::vector<StudyRecord> third{
        planned({candidate({"a"}, 5, 2), candidate({"b"}, 6, 2), candidate({"c"}, 7, 2)}),
        trained({"a"}, 5.5, 11),
        trained({"b"}, 5.6, 11.2),
        trained({"c"}, 5.8, 11.6),
        again({"a"}, 6.0, 12, 2),
        again({"a"}, 6.2, 12.4, 3),
        again({"b"}, 6.1, 12.2, 2),
        again({"b"}, 6.3, 12.6, 3)};
    const auto t = ClusterStudy::choice(third);
    const auto &time = t.cases[0];
    QCOMPARE(time.objective, QStringLiteral("time"));
    QCOMPARE(time.rank, 1);
    QCOMPARE(time.contender, QStringList{QStringLiteral("b")});
    QCOMPARE(time.lowest_mean_subset, QStringList{QStringLiteral("c")});
    QVERIFY(qFuzzyCompare(time.lowest_mean, 5.8));
    QVERIFY(!time.best_on_repeats);
    QVERIFY(time.within_spread);

    // Measured once: the repeated judgement is the strict one.
    const auto o = ClusterStudy::choice(twinsMeasuredOnce());
    QCOMPARE(o.repeated, 0);
    QCOMPARE(o.best_on_repeats, o.best);
    QCOMPARE(o.best_within_spread, o.best);
}

void TestClusterStudy::scalingAveragesEpochsAndNodes()
{
    StudyRecord r;
    r.run.job = {QStringLiteral("resnet20"), 32, 1024, 512, 2};
    r.run.mode = net::TrainingMode::Async;
    r.run.nodes = {QStringLiteral("a"), QStringLiteral("b")};
    core::Json epochs = core::Json::array();
    epochs.push(core::Json().set("train_seconds", 3.0).set("test_accuracy", 0.4));
    epochs.push(core::Json().set("train_seconds", 5.0).set("test_accuracy", 0.5));
    core::Json usage = core::Json::array();
    usage.push(core::Json()
                   .set("node", "a")
                   .set("cpu_percent", 40.0)
                   .set("rss_peak_bytes", std::int64_t(100) << 20)
                   .set("received_bytes", std::int64_t(4096))
                   .set("sent_bytes", std::int64_t(2048)));
    usage.push(core::Json()
                   .set("node", "b")
                   .set("cpu_percent", 60.0)
                   .set("rss_peak_bytes", std::int64_t(200) << 20)
                   .set("received_bytes", std::int64_t(8192))
                   .set("sent_bytes", std::int64_t(0)));
    r.result.set("epochs", std::move(epochs)).set("resources_by_node", std::move(usage));
    r.result.set("training_seconds", 8.5);
    const auto rows = ClusterStudy::scaling({r});
    QCOMPARE(rows.size(), std::size_t(1));
    const auto &row = rows[0];
    QCOMPARE(row.devices, 2);
    QCOMPARE(row.epochs, 2);
    QCOMPARE(row.epoch_seconds, 4.0);
    QCOMPARE(row.training_seconds, 8.5);
    QCOMPARE(row.test_accuracy, 0.5);
    QVERIFY(row.resources);
    QCOMPARE(row.cpu_percent, 50.0);
    QCOMPARE(row.rss_mib, 150.0);
    QCOMPARE(row.received_kib, 3.0); // (4 + 8) KiB / 2 nodes / 2 epochs
    QCOMPARE(row.sent_kib, 0.5);
    QCOMPARE(ClusterStudy::nodeUsage({r}).size(), std::size_t(2));
    const QByteArray csv = ClusterStudy::scalingCsv(rows);
    QVERIFY2(csv.contains("resnet20,32,async,2,2,4,8.5,0.5,50,150,3,0.5,\"\"\n"), csv.constData());
    // a run with no epoch is an error row, not a zero
    StudyRecord none;
    none.run = r.run;
    QCOMPARE(ClusterStudy::scaling({none})[0].error, QStringLiteral("no epoch finished"));
}

void TestClusterStudy::recordsRoundTripAndSurviveACutLine()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("runs.jsonl"));
    QVERIFY(ClusterStudy::readRecords(path).empty()); // no file yet: no records
    StudyRecord a = trained({"a", "b"}, 4.25, 17.5);
    a.run.mode = net::TrainingMode::LocalSgd;
    a.wall_seconds = 6.5;
    StudyRecord b = trained({"c"}, 0, 0);
    b.run.kind = StudyRun::Kind::Plan;
    b.exit_code = 1;
    b.error = QStringLiteral("no cluster was chosen");
    ClusterStudy::appendRecord(path, a);
    ClusterStudy::appendRecord(path, b);
    auto records = ClusterStudy::readRecords(path);
    QCOMPARE(records.size(), std::size_t(2));
    QCOMPARE(records[0].run.key(), a.run.key());
    QCOMPARE(records[0].run.mode, net::TrainingMode::LocalSgd);
    QCOMPARE(records[0].wall_seconds, 6.5);
    QCOMPARE(records[0].result.find("training_joules")->toDouble(), 17.5);
    QCOMPARE(records[1].run.kind, StudyRun::Kind::Plan);
    QCOMPARE(records[1].error, b.error);
    QCOMPARE(records[1].exit_code, 1);
    // killed while writing the third: the two before it stand, the cut one is run again
    QFile f(path);
    QVERIFY(f.open(QIODevice::Append));
    f.write("{\"key\":\"train/lenet5/b64\",\"kind\":\"tr");
    f.close();
    QCOMPARE(ClusterStudy::readRecords(path).size(), std::size_t(2));
    // the study continues: that run, done again, is appended after the two, not glued to the
    // cut line; and being the same run as the failed b, it replaces b in what is reported
    StudyRecord again = b;
    again.error.clear();
    again.exit_code = 0;
    ClusterStudy::appendRecord(path, again);
    records = ClusterStudy::readRecords(path);
    QCOMPARE(records.size(), std::size_t(3));
    QVERIFY(records[2].ok());
    const auto latest = ClusterStudy::latest(records);
    QCOMPARE(latest.size(), std::size_t(2));
    QCOMPARE(latest[0].run.key(), a.run.key());
    QCOMPARE(latest[1].run.key(), b.run.key());
    QVERIFY(latest[1].ok());
}

void TestClusterStudy::badRecordsNameFileLineAndField()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("runs.jsonl"));
    ClusterStudy::appendRecord(path, trained({"a"}, 1, 1));
    const QByteArray good = [&] {
        QFile f(path);
        f.open(QIODevice::ReadOnly);
        return f.readAll();
    }();
    struct Case
    {
        QByteArray from, to, message;
    };
    const Case cases[] = {
        {"\"batch\":64", "\"batch\":0", "field \"batch\" must be an integer from 1"},
        {"\"mode\":\"sync\"", "\"mode\":\"gossip\"", "field \"mode\" must be sync, async"},
        {"\"kind\":\"train\"", "\"kind\":\"fly\"", "field \"kind\" must be"},
        {"\"nodes\":[\"a\"]", "\"nodes\":[]", "field \"nodes\" must be a non-empty array"},
        {",\"wall_seconds\":0", "", "missing field \"wall_seconds\""},
    };
    for (const Case &c : cases) {
        QVERIFY2(good.contains(c.from), c.from.constData());
        QByteArray bad = good;
        bad.replace(c.from, c.to);
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(good + bad + good); // the bad one is line 2
        f.close();
        try {
            ClusterStudy::readRecords(path);
            QFAIL(c.message.constData());
        } catch (const core::FormatError &e) {
            const QString what = QString::fromUtf8(e.what());
            QVERIFY2(what.contains(path + QStringLiteral(":2")), qPrintable(what));
            QVERIFY2(what.contains(QString::fromUtf8(c.message)), qPrintable(what));
        }
    }
}

QTEST_GUILESS_MAIN(TestClusterStudy)
#include "tst_clusterstudy.moc"

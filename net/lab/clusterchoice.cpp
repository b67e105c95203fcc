#include "core/error.h"
#include "net/lab/clusterstudy.h"
#include "net/lab/edgelab.h"
#include "net/lab/studyfields.h"

#include <QFile>

#include <algorithm>
#include <cmath>
#include <map>

// The cluster-choice analysis of a study: the planner's pick for each job and objective against
// what the study measured (ClusterStudy's `--- cluster-choice` part).
namespace edgetrain::net {

using studyfields::median;
using studyfields::names;
using studyfields::num;
using studyfields::number;

namespace {

/** A subset's configuration: its nodes' configurations, sorted (a node not in the map is its
 *  own). */
QStringList configurationOf(const QStringList &nodes,
                            const std::map<QString, QString> &configurations)
{
    QStringList k;
    for (const QString &n : nodes) {
        const auto it = configurations.find(n);
        k.append(it == configurations.end() ? QStringLiteral("node ") + n : it->second);
    }
    k.sort();
    return k;
}

/** The objective's value of a measurement (seconds, joules). */
double objectiveValue(const QString &objective, double seconds, double joules)
{
    if (objective == QLatin1String("time"))
        return seconds;
    if (objective == QLatin1String("power"))
        return seconds > 0 ? joules / seconds : 0.0;
    if (objective == QLatin1String("energy"))
        return joules;
    return joules * seconds; // edp
}

double predictedValue(const QString &objective, const ClusterStudy::ChoiceRun &r)
{
    if (objective == QLatin1String("time"))
        return r.predicted_seconds;
    if (objective == QLatin1String("power"))
        return r.predicted_watts;
    if (objective == QLatin1String("energy"))
        return r.predicted_joules;
    return r.predicted_edp;
}

} // namespace

const QStringList &ClusterStudy::objectives()
{
    static const QStringList list{QStringLiteral("time"), QStringLiteral("power"),
                                  QStringLiteral("energy"), QStringLiteral("edp")};
    return list;
}

std::map<QString, QString> ClusterStudy::configurations(const LabState &lab)
{
    std::map<QString, QString> c;
    for (const LabNode &n : lab.nodes) {
        QString d = n.profile_id;
        if (n.cpu_cores > 0)
            d += QStringLiteral(", %1 cores").arg(n.cpu_cores, 0, 'g', 4);
        if (n.memory_limit_bytes > 0)
            d += QStringLiteral(", %1 MiB").arg(n.memory_limit_bytes >> 20);
        if (n.link_bits_per_second > 0)
            d += QStringLiteral(", %1 Mbit/s").arg(double(n.link_bits_per_second) / 1e6, 0, 'g', 4);
        c[n.name] = d;
    }
    return c;
}

void ClusterStudy::writeConfigurations(const QString &path,
                                       const std::map<QString, QString> &configurations)
{
    core::Json j = core::Json::object();
    for (const auto &[name, description] : configurations)
        j.set(name.toStdString(), description.toStdString());
    QFile file(path);
    const QByteArray data = QByteArray::fromStdString(j.dump(1) + "\n");
    if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(data) != data.size())
        throw core::IoError("cannot write '" + path.toStdString() + "'");
}

std::map<QString, QString> ClusterStudy::readConfigurations(const QString &path)
{
    std::map<QString, QString> c;
    if (!QFile::exists(path))
        return c;
    const core::Json j = core::Json::parseFile(path.toStdString(), "cannot read");
    if (!j.isObject())
        throw core::FormatError(path.toStdString() +
                                ": must be an object of node names and their configurations");
    for (const auto &[name, description] : j.toObject()) {
        if (!description.isString())
            throw core::FormatError(path.toStdString() + ": \"" + name +
                                    "\" must be a configuration's description (a string)");
        c[QString::fromStdString(name)] = QString::fromStdString(description.toString());
    }
    return c;
}

namespace {

using Measured = std::pair<double, double>; // seconds, joules

/** One job of a study: its plan's candidates (by the subset's names) and its measured subsets. */
struct StudiedJob
{
    QString model;
    int batch = 0;
    double profiling_seconds = 0;
    std::map<QStringList, ClusterStudy::ChoiceRun> predicted;
    std::map<QStringList, Measured> measured;         // the first measurement
    std::map<QStringList, std::vector<Measured>> all; // every measurement
};

/** The study's jobs in the order the records first name them, keyed by the plan's key without
 *  its kind and nodes. */
struct StudiedJobs
{
    std::map<QString, StudiedJob> byKey;
    std::vector<QString> order;
};

StudiedJobs collectJobs(const std::vector<StudyRecord> &records)
{
    StudiedJobs jobs;
    auto jobKey = [](const StudyRun &run) {
        return QStringLiteral("%1/%2/%3/%4/%5")
            .arg(run.job.model)
            .arg(run.job.batch)
            .arg(run.job.train_limit)
            .arg(run.job.test_limit)
            .arg(run.job.epochs);
    };
    for (const StudyRecord &r : records) {
        const QString key = jobKey(r.run);
        if (!jobs.byKey.count(key))
            jobs.order.push_back(key);
        StudiedJob &job = jobs.byKey[key];
        job.model = r.run.job.model;
        job.batch = r.run.job.batch;
        if (r.run.kind == StudyRun::Kind::Plan) {
            job.profiling_seconds = number(r.result, "profiling_seconds");
            const core::Json *candidates = r.result.find("candidates");
            if (!candidates || !candidates->isArray())
                continue;
            for (const core::Json &c : candidates->toArray()) {
                ClusterStudy::ChoiceRun run;
                run.model = job.model;
                run.batch = job.batch;
                run.nodes = names(c.find("nodes"));
                run.predicted_seconds = number(c, "predicted_seconds");
                run.predicted_watts = number(c, "predicted_watts");
                run.predicted_joules = number(c, "predicted_joules");
                run.predicted_edp = number(c, "predicted_edp");
                const core::Json *suitable = c.find("suitable");
                run.suitable = !suitable || !suitable->isBool() || suitable->toBool();
                job.predicted[run.nodes] = run;
            }
        } else if (r.ok() && r.result.find("training_seconds")) {
            const Measured m{number(r.result, "training_seconds"),
                             number(r.result, "training_joules")};
            if (r.run.measurement == 1)
                job.measured[r.run.nodes] = m;
            job.all[r.run.nodes].push_back(m);
        }
    }
    return jobs;
}

/** The planner's pick for an objective: the best predicted of the suitable candidates. */
const ClusterStudy::ChoiceRun *pickOf(const StudiedJob &job, const QString &objective)
{
    const ClusterStudy::ChoiceRun *pick = nullptr;
    for (const auto &[nodes, c] : job.predicted) {
        if (!c.suitable)
            continue;
        const double v = predictedValue(objective, c);
        if (!pick || v < predictedValue(objective, *pick) ||
            (v == predictedValue(objective, *pick) &&
             c.predicted_seconds < pick->predicted_seconds))
            pick = &c;
    }
    return pick;
}

using MeasuredSubsets = std::vector<std::pair<QStringList, Measured>>;

/** The pick's place among the configurations: each configuration's runs averaged, the means
 *  ranked (the first runs, as the strict ranks; the repeats are judged apart). */
void rankByConfiguration(ClusterStudy::ChoiceCase &c, const MeasuredSubsets &measured,
                         const QStringList &pick, const std::map<QString, QString> &configurations)
{
    struct Sum
    {
        double value = 0, seconds = 0;
        int runs = 0;
    };
    std::map<QStringList, Sum> sums;
    for (const auto &[nodes, m] : measured) {
        Sum &sum = sums[configurationOf(nodes, configurations)];
        sum.value += objectiveValue(c.objective, m.first, m.second);
        sum.seconds += m.first;
        ++sum.runs;
    }
    std::vector<std::pair<QStringList, std::pair<double, double>>> means; // value, seconds
    for (const auto &[k, sum] : sums)
        means.push_back({k, {sum.value / sum.runs, sum.seconds / sum.runs}});
    std::stable_sort(means.begin(), means.end(), [](const auto &x, const auto &y) {
        return x.second.first != y.second.first ? x.second.first < y.second.first
                                                : x.second.second < y.second.second;
    });
    c.configurations = int(means.size());
    const QStringList picked = configurationOf(pick, configurations);
    for (std::size_t i = 0; i < means.size(); ++i)
        if (means[i].first == picked)
            c.configuration_rank = int(i) + 1;
}

/** A subset's runs for an objective: their mean, lowest and highest value. */
struct Spread
{
    QStringList nodes;
    double mean = 0, low = 0, high = 0, seconds = 0;
    int runs = 0;
};

/** The case on the repeated measurements: every subset's runs (the first alone for most), the
 *  pick's and its contender's spreads against the lowest mean's. */
void judgeOnRepeats(ClusterStudy::ChoiceCase &c, const MeasuredSubsets &measured,
                    const StudiedJob &job, const QStringList &pick)
{
    c.contender = measured.size() < 2              ? QStringList()
                  : measured.front().first == pick ? measured[1].first
                                                   : measured.front().first;
    std::vector<Spread> spreads;
    for (const auto &[nodes, first] : measured) {
        Spread sp{nodes};
        for (const auto &[seconds, joules] : job.all.at(nodes)) {
            const double v = objectiveValue(c.objective, seconds, joules);
            sp.low = sp.runs ? std::min(sp.low, v) : v;
            sp.high = sp.runs ? std::max(sp.high, v) : v;
            sp.mean += v;
            sp.seconds += seconds;
            ++sp.runs;
        }
        sp.mean /= sp.runs;
        sp.seconds /= sp.runs;
        spreads.push_back(sp);
    }
    std::stable_sort(spreads.begin(), spreads.end(), [](const auto &x, const auto &y) {
        return x.mean != y.mean ? x.mean < y.mean : x.seconds < y.seconds;
    });
    auto spreadOf = [&](const QStringList &nodes) {
        const auto it = std::find_if(spreads.begin(), spreads.end(),
                                     [&](const Spread &sp) { return sp.nodes == nodes; });
        return it == spreads.end() ? Spread{} : *it;
    };
    const Spread mine = spreadOf(pick), other = spreadOf(c.contender);
    c.picked_measurements = mine.runs;
    c.picked_mean = mine.mean;
    c.picked_low = mine.low;
    c.picked_high = mine.high;
    c.contender_measurements = other.runs;
    c.contender_mean = other.mean;
    c.contender_low = other.low;
    c.contender_high = other.high;
    const Spread &lowest = spreads.front();
    c.lowest_mean_subset = lowest.nodes;
    c.lowest_mean = lowest.mean;
    c.lowest_low = lowest.low;
    c.lowest_high = lowest.high;
    c.best_on_repeats = mine.runs > 0 && lowest.nodes == pick;
    c.within_spread =
        c.best_on_repeats || (mine.runs > 0 && mine.low <= lowest.high && lowest.low <= mine.high);
}

/** One job and objective judged: the pick against the measured order, by subset and by
 *  configuration, and on the repeats. */
ClusterStudy::ChoiceCase judge(const StudiedJob &job, const QString &objective,
                               const ClusterStudy::ChoiceRun &pick,
                               const std::map<QString, QString> &configurations)
{
    MeasuredSubsets measured(job.measured.begin(), job.measured.end());
    std::stable_sort(measured.begin(), measured.end(), [&](const auto &x, const auto &y) {
        const double vx = objectiveValue(objective, x.second.first, x.second.second);
        const double vy = objectiveValue(objective, y.second.first, y.second.second);
        return vx != vy ? vx < vy : x.second.first < y.second.first;
    });
    ClusterStudy::ChoiceCase c;
    c.model = job.model;
    c.batch = job.batch;
    c.objective = objective;
    c.picked = pick.nodes;
    c.measured_best = measured.front().first;
    c.measured = int(measured.size());
    c.best_value =
        objectiveValue(objective, measured.front().second.first, measured.front().second.second);
    for (std::size_t i = 0; i < measured.size(); ++i)
        if (measured[i].first == pick.nodes) {
            c.rank = int(i) + 1;
            c.picked_value =
                objectiveValue(objective, measured[i].second.first, measured[i].second.second);
        }
    rankByConfiguration(c, measured, pick.nodes, configurations);
    judgeOnRepeats(c, measured, job, pick.nodes);
    return c;
}

} // namespace

ClusterStudy::ChoiceAnalysis ClusterStudy::choice(const std::vector<StudyRecord> &records,
                                                  const std::map<QString, QString> &configurations)
{
    ChoiceAnalysis a;
    StudiedJobs jobs = collectJobs(records);
    std::vector<double> errors, shares;
    std::map<QString, bool> powerKnown; // by job: every measured run has its energy
    for (const QString &key : jobs.order) {
        StudiedJob &job = jobs.byKey[key];
        if (job.predicted.empty() || job.measured.empty())
            continue;
        for (auto &[nodes, m] : job.measured) {
            const auto p = job.predicted.find(nodes);
            if (p == job.predicted.end())
                continue;
            ChoiceRun run = p->second;
            run.measured_seconds = m.first;
            run.measured_joules = m.second;
            run.measured_watts = m.first > 0 ? m.second / m.first : 0.0;
            run.measured_edp = m.first * m.second;
            run.measurements = int(job.all[nodes].size());
            if (m.second <= 0)
                powerKnown[key] = false;
            else
                powerKnown.emplace(key, true);
            if (m.first > 0)
                errors.push_back(std::abs(run.predicted_seconds - m.first) / m.first);
            a.runs.push_back(run);
        }
        double best = 0;
        for (const auto &[nodes, m] : job.measured)
            best = best == 0 ? m.first : std::min(best, m.first);
        a.jobs.push_back({job.model, job.batch, job.profiling_seconds, best});
        if (best > 0)
            shares.push_back(job.profiling_seconds / (job.profiling_seconds + best));
    }
    for (const QString &key : jobs.order) {
        const StudiedJob &job = jobs.byKey[key];
        if (job.predicted.empty() || job.measured.empty())
            continue;
        for (const QString &objective : objectives()) {
            if (objective != QLatin1String("time") && !powerKnown[key]) {
                if (!a.skipped.contains(objective))
                    a.skipped.append(objective);
                continue;
            }
            const ChoiceRun *pick = pickOf(job, objective);
            if (!pick)
                continue;
            const ChoiceCase c = judge(job, objective, *pick, configurations);
            a.by_configuration = a.by_configuration || c.configurations < c.measured;
            a.best_on_repeats += c.best_on_repeats;
            a.best_within_spread += c.within_spread;
            a.repeated += c.picked_measurements > 1 || c.contender_measurements > 1;
            a.measurements =
                std::max({a.measurements, c.picked_measurements, c.contender_measurements});
            a.best += c.rank == 1;
            a.best_or_second += c.rank == 1 || c.rank == 2;
            a.best_by_configuration += c.configuration_rank == 1;
            a.best_or_second_by_configuration +=
                c.configuration_rank == 1 || c.configuration_rank == 2;
            a.cases.push_back(c);
        }
    }
    a.median_time_error = median(errors);
    if (!errors.empty()) {
        std::sort(errors.begin(), errors.end());
        // nearest rank: the smallest error at least 90 % of them do not exceed
        a.p90_time_error = errors[std::size_t(std::ceil(0.9 * double(errors.size()))) - 1];
    }
    a.median_profiling_share = median(shares);
    std::vector<double> regrets;
    for (const ChoiceCase &c : a.cases)
        if (c.regret() >= 0)
            regrets.push_back(c.regret());
    a.median_regret = median(regrets);
    a.max_regret = regrets.empty() ? 0.0 : *std::max_element(regrets.begin(), regrets.end());
    return a;
}

QByteArray ClusterStudy::choiceRunsCsv(const ChoiceAnalysis &a)
{
    QByteArray csv = "model,batch,nodes,predicted_seconds,measured_seconds,predicted_watts,"
                     "measured_watts,predicted_joules,measured_joules,predicted_edp,measured_edp,"
                     "suitable,measurements\n";
    for (const ChoiceRun &r : a.runs)
        csv += r.model.toUtf8() + ',' + QByteArray::number(r.batch) + ',' +
               r.nodes.join(QLatin1Char('+')).toUtf8() + ',' + num(r.predicted_seconds) + ',' +
               num(r.measured_seconds) + ',' + num(r.predicted_watts) + ',' +
               num(r.measured_watts) + ',' + num(r.predicted_joules) + ',' +
               num(r.measured_joules) + ',' + num(r.predicted_edp) + ',' + num(r.measured_edp) +
               ',' + (r.suitable ? "true" : "false") + ',' + QByteArray::number(r.measurements) +
               '\n';
    return csv;
}

QByteArray ClusterStudy::choiceCasesCsv(const ChoiceAnalysis &a)
{
    QByteArray csv = "model,batch,objective,picked,measured_best,rank,measured_subsets,"
                     "picked_value,best_value,regret,configuration_rank,configurations,"
                     "contender,picked_measurements,picked_mean,picked_low,picked_high,"
                     "contender_measurements,contender_mean,contender_low,contender_high,"
                     "lowest_mean_subset,lowest_mean,lowest_low,lowest_high,best_on_repeats,"
                     "within_spread\n";
    for (const ChoiceCase &c : a.cases)
        csv += c.model.toUtf8() + ',' + QByteArray::number(c.batch) + ',' + c.objective.toUtf8() +
               ',' + c.picked.join(QLatin1Char('+')).toUtf8() + ',' +
               c.measured_best.join(QLatin1Char('+')).toUtf8() + ',' + QByteArray::number(c.rank) +
               ',' + QByteArray::number(c.measured) + ',' + num(c.picked_value) + ',' +
               num(c.best_value) + ',' + num(c.regret()) + ',' +
               QByteArray::number(c.configuration_rank) + ',' +
               QByteArray::number(c.configurations) + ',' +
               c.contender.join(QLatin1Char('+')).toUtf8() + ',' +
               QByteArray::number(c.picked_measurements) + ',' + num(c.picked_mean) + ',' +
               num(c.picked_low) + ',' + num(c.picked_high) + ',' +
               QByteArray::number(c.contender_measurements) + ',' + num(c.contender_mean) + ',' +
               num(c.contender_low) + ',' + num(c.contender_high) + ',' +
               c.lowest_mean_subset.join(QLatin1Char('+')).toUtf8() + ',' + num(c.lowest_mean) +
               ',' + num(c.lowest_low) + ',' + num(c.lowest_high) + ',' +
               (c.best_on_repeats ? "true" : "false") + ',' + (c.within_spread ? "true" : "false") +
               '\n';
    return csv;
}

core::Json ClusterStudy::choiceSummary(const ChoiceAnalysis &a)
{
    core::Json j;
    const double n = double(std::max<std::size_t>(1, a.cases.size()));
    j.set("cases", int(a.cases.size())).set("best", a.best).set("best_or_second", a.best_or_second);
    j.set("best_fraction", a.cases.empty() ? 0.0 : a.best / n)
        .set("best_or_second_fraction", a.cases.empty() ? 0.0 : a.best_or_second / n);
    j.set("runs", int(a.runs.size()))
        .set("median_time_error", a.median_time_error)
        .set("p90_time_error", a.p90_time_error);
    j.set("median_profiling_share", a.median_profiling_share);
    j.set("median_regret", a.median_regret).set("max_regret", a.max_regret);
    j.set("by_configuration", a.by_configuration)
        .set("best_by_configuration", a.best_by_configuration)
        .set("best_or_second_by_configuration", a.best_or_second_by_configuration);
    j.set("best_by_configuration_fraction", a.cases.empty() ? 0.0 : a.best_by_configuration / n)
        .set("best_or_second_by_configuration_fraction",
             a.cases.empty() ? 0.0 : a.best_or_second_by_configuration / n);
    j.set("repeated_cases", a.repeated)
        .set("most_measurements", a.measurements)
        .set("best_on_repeats", a.best_on_repeats)
        .set("best_within_spread", a.best_within_spread);
    j.set("best_on_repeats_fraction", a.cases.empty() ? 0.0 : a.best_on_repeats / n)
        .set("best_within_spread_fraction", a.cases.empty() ? 0.0 : a.best_within_spread / n);
    core::Json jobs = core::Json::array();
    for (const ChoiceJob &job : a.jobs) {
        core::Json x;
        x.set("model", job.model.toStdString()).set("batch", job.batch);
        x.set("profiling_seconds", job.profiling_seconds)
            .set("best_training_seconds", job.best_training_seconds);
        jobs.push(std::move(x));
    }
    j.set("jobs", std::move(jobs));
    core::Json skipped = core::Json::array();
    for (const QString &s : a.skipped)
        skipped.push(s.toStdString());
    j.set("skipped_objectives", std::move(skipped));
    return j;
}

} // namespace edgetrain::net

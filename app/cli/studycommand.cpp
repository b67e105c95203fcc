#include "studycommand.h"

#include "app/report/studyreport.h"
#include "clicontext.h"
#include "clusterplan.h"
#include "core/error.h"
#include "core/numbertext.h"
#include "labcommand.h"
#include "net/lab/clusterstudy.h"
#include "net/lab/edgelab.h"
#include "net/planner/clusterplanner.h"
#include "studyrunner.h"

#include <QCoreApplication>
#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QSaveFile>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <map>
#include <set>
#include <unistd.h>

namespace edgetrain::app {

namespace {

using net::ClusterStudy;
using net::StudyJob;
using net::StudyRecord;
using net::StudyRun;

/** The jobs the options ask for: the preset's, with --models / --batches / --epochs /
 *  --test-limit replacing what they name. */
std::vector<StudyJob> jobsFrom(const CliContext &cli, const ClusterStudy::Options &preset)
{
    std::vector<std::pair<QString, int>> models; // name, train limit
    if (cli.isSet("models")) {
        for (const QString &item : QString::fromStdString(cli.text("models"))
                                       .split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            const QStringList parts = item.trimmed().split(QLatin1Char(':'));
            bool ok = true;
            const int limit = parts.size() > 1 ? parts[1].toInt(&ok) : 8192;
            if (parts.size() > 2 || parts[0].isEmpty() || !ok || limit < 0 || limit > 60000)
                throw UsageError("--models: '" + item.toStdString() +
                                 "' is not MODEL or MODEL:TRAIN-LIMIT, a limit from 0 to 60000 "
                                 "(e.g. lenet5:8192)");
            models.emplace_back(parts[0], limit);
        }
        if (models.empty())
            throw UsageError("--models names no model");
    } else {
        for (const StudyJob &j : preset.jobs)
            if (std::none_of(models.begin(), models.end(),
                             [&](const auto &m) { return m.first == j.model; }))
                models.emplace_back(j.model, j.train_limit);
    }
    QList<int> batches;
    if (cli.isSet("batches"))
        for (const QString &b : QString::fromStdString(cli.text("batches"))
                                    .split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            bool ok = false;
            const int batch = b.trimmed().toInt(&ok);
            if (!ok || batch < 1 || batch > 65536)
                throw UsageError("--batches: '" + b.toStdString() +
                                 "' is not a batch size from 1 to 65536");
            batches.append(batch);
        }
    std::vector<StudyJob> jobs;
    for (const auto &[model, limit] : models) {
        StudyJob base{model, 64, limit, 1024, 1};
        QList<int> sizes = batches;
        for (const StudyJob &j : preset.jobs)
            if (j.model == model) {
                base.test_limit = j.test_limit;
                base.epochs = j.epochs;
                if (batches.isEmpty() && !sizes.contains(j.batch))
                    sizes.append(j.batch);
            }
        if (sizes.isEmpty())
            sizes.append(base.batch);
        if (cli.isSet("epochs"))
            base.epochs = int(cli.integer("epochs", 1, 1000));
        if (cli.isSet("test-limit"))
            base.test_limit = int(cli.integer("test-limit", 0, 10000));
        for (int batch : sizes) {
            StudyJob job = base;
            job.batch = batch;
            jobs.push_back(job);
        }
    }
    return jobs;
}

void writeFile(const QString &path, const QByteArray &data, QStringList *written)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(data) != data.size() || !file.commit())
        throw core::IoError("cannot write '" + path.toStdString() + "'");
    written->append(path);
}

void addStudyOptions(CliContext &cli)
{
    cli.addOption("preset", "pi-cluster or cluster-choice.", "NAME");
    cli.addOption("out", "The study's folder (default: study-PRESET here).", "DIR");
    addLabUpOptions(cli);
    cli.addOption("lab",
                  "Use the lab that is up in this folder (lab up --out DIR) instead of starting "
                  "one in OUT/lab (--devices and the other lab options are then ignored).",
                  "DIR");
    cli.addOption("models",
                  "The models, with how many training images each: lenet5:8192,... "
                  "(default: the preset's).",
                  "LIST");
    cli.addOption("batches", "Batch sizes, comma-separated (default: the preset's).", "LIST");
    cli.addOption("epochs", "Epochs of each run (default: the preset's).", "N");
    cli.addOption("test-limit", "Test images after each epoch (default: the preset's).", "N");
    cli.addOption("modes", "pi-cluster: the modes compared.", "MODES", "sync,async");
    cli.addOption("max-nodes", "pi-cluster: train on the first 1..N nodes (default: all).", "N");
    cli.addOption("quick", "A first look in seconds: a small share of the data, one epoch, one "
                           "model (pi-cluster: 1-2 nodes).");
    cli.addOption("fresh", "Start over: set aside runs.jsonl of an earlier study in --out.");
    cli.addOption("report-only", "Run nothing: write the CSV files, charts and PDF from the runs "
                                 "already in --out (and --lab's description, if given; else "
                                 "the study's configurations.json).");
    cli.addOption("measurements",
                  "cluster-choice: how many times each case's pick and its closest contender "
                  "are trained in all, once every subset has trained once (1: once, as the "
                  "others).",
                  "N", "3");
    cli.addOption("run-timeout", "A run taking longer is stopped and recorded as failed.",
                  "DURATION", "1800s");
}

/** The lab the study runs on: one that is up (--lab), or its own in OUT/lab (`own` then set:
 *  the caller takes it down however it leaves); none with --report-only. */
net::LabState studyLab(const CliContext &cli, ClusterStudy::Preset preset, const QString &out,
                       bool *own)
{
    net::LabState lab;
    if (cli.isSet("lab")) {
        lab = net::EdgeLab::read(QString::fromStdString(cli.text("lab")));
    } else if (!cli.isSet("report-only")) {
        net::LabOptions o =
            labUpOptions(cli, cli.isSet("devices") ? QString::fromStdString(cli.text("devices"))
                                                   : ClusterStudy::defaultDevices(preset));
        o.dir = out + QStringLiteral("/lab");
        o.stop = CliContext::stopFlag();
        int devices = 0;
        for (const auto &d : o.devices)
            devices += d.count;
        if (preset == ClusterStudy::Preset::ClusterChoice &&
            devices > net::ClusterPlanner::kMaxDevices)
            throw UsageError("--devices: cluster-choice trains every subset of the devices, and "
                             "the planner takes at most " +
                             std::to_string(net::ClusterPlanner::kMaxDevices) + ", not " +
                             std::to_string(devices));
        if (QFile::exists(o.dir + QStringLiteral("/lab.json"))) {
            cli.message("an earlier study's lab is still up in " + o.dir.toStdString() +
                        ": taking it down");
            net::EdgeLab::down(o.dir);
        }
        lab = net::EdgeLab::up(o, [&](const QString &line) { cli.message(line.toStdString()); });
        *own = true;
        for (const QString &m : lab.not_emulated)
            cli.message("not emulated: " + m.toStdString());
    }
    return lab;
}

/** What the finished runs show, written to OUT (CSV files; cluster-choice: summary.json) and
 *  said; the summary for --json. */
core::Json writeFindings(const CliContext &cli, ClusterStudy::Preset preset,
                         const ClusterStudy::Options &options,
                         const std::vector<StudyRecord> &records,
                         const std::map<QString, QString> &configurations, const QString &out,
                         QStringList *written)
{
    core::Json summary;
    if (preset == ClusterStudy::Preset::PiCluster) {
        const auto rows = ClusterStudy::scaling(records);
        writeFile(out + QStringLiteral("/pi-cluster.csv"), ClusterStudy::scalingCsv(rows), written);
        writeFile(out + QStringLiteral("/pi-cluster-nodes.csv"),
                  ClusterStudy::nodeUsageCsv(ClusterStudy::nodeUsage(records)), written);
        core::Json list = core::Json::array();
        for (const auto &r : rows) {
            core::Json j;
            j.set("model", r.model.toStdString()).set("batch", r.batch);
            j.set("mode", net::modeName(r.mode).toStdString()).set("devices", r.devices);
            j.set("epoch_seconds", r.epoch_seconds).set("training_seconds", r.training_seconds);
            j.set("test_accuracy",
                  r.test_accuracy >= 0 ? core::Json(r.test_accuracy) : core::Json());
            // null where the nodes were not sampled while the run trained (under a second)
            auto measured = [&](double v) { return r.resources ? core::Json(v) : core::Json(); };
            j.set("cpu_percent", measured(r.cpu_percent)).set("rss_mib", measured(r.rss_mib));
            j.set("received_kib_per_epoch", measured(r.received_kib))
                .set("sent_kib_per_epoch", measured(r.sent_kib));
            if (!r.error.isEmpty())
                j.set("error", r.error.toStdString());
            list.push(std::move(j));
        }
        summary.set("rows", std::move(list));
    } else {
        const auto analysis = ClusterStudy::choice(records, configurations);
        writeFile(out + QStringLiteral("/cluster-choice-runs.csv"),
                  ClusterStudy::choiceRunsCsv(analysis), written);
        writeFile(out + QStringLiteral("/cluster-choice-cases.csv"),
                  ClusterStudy::choiceCasesCsv(analysis), written);
        summary = ClusterStudy::choiceSummary(analysis);
        writeFile(out + QStringLiteral("/summary.json"),
                  QByteArray::fromStdString(summary.dump(1) + "\n"), written);
        cli.message(
            "the planner picked the measured best in " + std::to_string(analysis.best) + " of " +
            std::to_string(analysis.cases.size()) + " cases, best or second in " +
            std::to_string(analysis.best_or_second) +
            (analysis.by_configuration
                 ? " (alike devices as one: " + std::to_string(analysis.best_by_configuration) +
                       " and " + std::to_string(analysis.best_or_second_by_configuration) + ")"
                 : std::string()) +
            (analysis.repeated > 0
                 ? "; with each case's pick and closest contender measured up to " +
                       std::to_string(options.measurements) +
                       " times, the best on their means in " +
                       std::to_string(analysis.best_on_repeats) + ", within the lab's spread in " +
                       std::to_string(analysis.best_within_spread)
                 : std::string()) +
            "; median training-time error " +
            core::NumberText::format(std::round(analysis.median_time_error * 1000) / 10) + " %");
    }
    return summary;
}

ClusterStudy::Options studyOptions(const CliContext &cli, ClusterStudy::Preset preset)
{
    ClusterStudy::Options options = ClusterStudy::defaults(preset, cli.isSet("quick"));
    options.jobs = jobsFrom(cli, options);
    if (preset == ClusterStudy::Preset::PiCluster) {
        options.modes = parseModeList(cli);
        if (cli.isSet("max-nodes"))
            options.max_nodes = int(cli.integer("max-nodes", 1, 64));
    } else {
        options.measurements = int(cli.integer("measurements", 1, 20));
    }
    return options;
}

/** The study's folder (--out, else study-PRESET here) with its logs/; --fresh sets an earlier
 *  study's runs.jsonl aside. */
QString studyFolder(const CliContext &cli, const QString &presetName)
{
    const QString out = QDir(cli.isSet("out") ? QString::fromStdString(cli.text("out"))
                                              : QStringLiteral("study-") + presetName)
                            .absolutePath();
    if (!QDir().mkpath(out + QStringLiteral("/logs")))
        throw core::IoError("cannot create '" + out.toStdString() + "'");
    const QString recordsPath = out + QStringLiteral("/runs.jsonl");
    if (cli.isSet("fresh") && QFile::exists(recordsPath)) {
        const QString aside =
            out +
            QStringLiteral("/runs-%1.jsonl")
                .arg(QDateTime::currentDateTimeUtc().toString(QStringLiteral("yyyyMMdd-hhmmss")));
        if (!QFile::rename(recordsPath, aside))
            throw core::IoError("cannot move '" + recordsPath.toStdString() + "' aside");
        cli.message("the earlier runs are in " + aside.toStdString());
    }
    return out;
}

/** The lab's nodes and what it could not emulate, for --json. */
void labJson(const net::LabState &lab, core::Json *j)
{
    core::Json nodes = core::Json::array();
    for (const net::LabNode &n : lab.nodes) {
        core::Json x;
        x.set("name", n.name.toStdString()).set("profile", n.profile_id.toStdString());
        x.set("cpu_quota_cores", n.cpu_quota_cores)
            .set("memory_limit_bytes", n.memory_limit_bytes)
            .set("link_bits_per_second", n.link_bits_per_second);
        nodes.push(std::move(x));
    }
    j->set("nodes", std::move(nodes));
    core::Json notEmulated = core::Json::array();
    for (const QString &m : lab.not_emulated)
        notEmulated.push(m.toStdString());
    j->set("not_emulated", std::move(notEmulated));
}

/** Which nodes are alike (cluster-choice): the lab's, kept beside the runs for a later
 *  --report-only. */
std::map<QString, QString> studyConfigurations(ClusterStudy::Preset preset,
                                               const net::LabState &lab, const QString &out)
{
    std::map<QString, QString> configurations;
    if (preset == ClusterStudy::Preset::ClusterChoice) {
        const QString path = out + QStringLiteral("/configurations.json");
        configurations = ClusterStudy::configurations(lab);
        if (!configurations.empty())
            ClusterStudy::writeConfigurations(path, configurations);
        else
            configurations = ClusterStudy::readConfigurations(path);
    }
    return configurations;
}

/** The charts and study.pdf (app/report). */
void writeReport(ClusterStudy::Preset preset, const net::LabState &lab,
                 const std::map<QString, QString> &configurations,
                 const std::vector<StudyRecord> &records, int runsPlanned, const QString &out,
                 QStringList *written)
{
    StudyReportContent content;
    content.preset = preset;
    content.lab = lab;
    content.configurations = configurations;
    content.records = records;
    content.runs_planned = runsPlanned;
    QString error;
    if (!StudyReport::write(out, content, written, &error))
        throw core::IoError(error.toStdString());
}

/** Takes the study's own lab down however the study leaves. */
struct LabGuard
{
    const net::LabState &lab;
    bool own;
    const CliContext &cli;
    ~LabGuard()
    {
        if (!own)
            return;
        try {
            net::EdgeLab::down(lab.dir);
        } catch (const core::Error &e) {
            cli.message(std::string("lab down: ") + e.what());
        }
    }
};

} // namespace

int StudyCommand::run(const QStringList &arguments)
{
    CliContext cli(
        QStringLiteral("study"),
        QStringLiteral(
            "The seed papers' experiments on an edge lab. pi-cluster: each model on 1..N "
            "nodes, sync against async (time per epoch, accuracy, each node's CPU, memory, "
            "network). cluster-choice: the planner's prediction for every subset of the nodes "
            "against every subset trained (does it pick the best by time, power, energy, EDP?). "
            "Writes runs.jsonl as runs end (the same command again continues), CSV files, "
            "charts (PNG, SVG) and study.pdf to --out."),
        arguments);
    addStudyOptions(cli);
    if (!cli.parse())
        return ExitSuccess;
    if (!cli.isSet("preset"))
        throw UsageError("--preset is required: pi-cluster or cluster-choice");
    const auto preset = ClusterStudy::parsePreset(QString::fromStdString(cli.text("preset")));
    if (!preset)
        throw UsageError("--preset: '" + cli.text("preset") +
                         "' is not pi-cluster or cluster-choice");
    const ClusterStudy::Options options = studyOptions(cli, *preset);
    const auto runTimeout = parseDuration(cli.text("run-timeout"), "run-timeout");
    const QString presetName = ClusterStudy::presetName(*preset);
    const QString out = studyFolder(cli, presetName);
    const QString recordsPath = out + QStringLiteral("/runs.jsonl");
    // What an earlier study here finished: read before anything starts, so a damaged file is
    // said at once (naming its line), not after the lab is up.
    const std::vector<StudyRecord> earlier =
        ClusterStudy::latest(ClusterStudy::readRecords(recordsPath));
    CliContext::installStopHandler();

    // The lab: one that is up (--lab), or our own in OUT/lab, taken down however we leave.
    bool ownLab = false;
    const net::LabState lab = studyLab(cli, *preset, out, &ownLab);
    const LabGuard guard{lab, ownLab, cli};

    QStringList names;
    for (const net::LabNode &n : lab.nodes)
        names.append(n.name);
    if (*preset == ClusterStudy::Preset::ClusterChoice &&
        names.size() > net::ClusterPlanner::kMaxDevices)
        throw UsageError("--lab: cluster-choice trains every subset of the nodes, and the "
                         "planner takes at most " +
                         std::to_string(net::ClusterPlanner::kMaxDevices) + ", not " +
                         std::to_string(names.size()));
    const std::map<QString, QString> configurations = studyConfigurations(*preset, lab, out);
    std::vector<StudyRun> runs = ClusterStudy::runs(options, names);
    std::set<QString> wanted;
    for (const StudyRun &r : runs)
        wanted.insert(r.key());
    std::set<QString> done; // a run that failed is done again
    for (const StudyRecord &r : earlier)
        if (r.ok())
            done.insert(r.run.key());

    StudyRunner runner(cli, lab, out, recordsPath, runTimeout);
    const int total = int(runs.size());
    const int already = int(std::count_if(runs.begin(), runs.end(),
                                          [&](const StudyRun &r) { return done.count(r.key()); }));
    if (!cli.isSet("report-only")) {
        cli.message(presetName.toStdString() + ": " + std::to_string(total) + " runs on " +
                    std::to_string(names.size()) + " nodes" +
                    (already ? " (" + std::to_string(already) + " done before)" : std::string()) +
                    "; each run's log in " + out.toStdString() + "/logs");
        int index = 0;
        for (const StudyRun &run : runs) {
            ++index;
            if (!done.count(run.key()) && !runner.run(run, index, total))
                break;
        }
    }
    // cluster-choice: each case's pick and closest contender trained again, judged on all their
    // runs. Which subsets follows from the first runs, so a resumed study (or --report-only)
    // finds the same ones.
    auto studyRecords = [&] {
        std::vector<StudyRecord> kept;
        for (StudyRecord &r : ClusterStudy::latest(ClusterStudy::readRecords(recordsPath)))
            if (wanted.count(r.run.key()) || (cli.isSet("report-only") && names.isEmpty()))
                kept.push_back(std::move(r));
        return kept;
    };
    const std::vector<StudyRun> again = runner.cancelled()
                                            ? std::vector<StudyRun>()
                                            : ClusterStudy::repeats(options, studyRecords());
    for (const StudyRun &r : again)
        wanted.insert(r.key());
    if (!again.empty() && !cli.isSet("report-only")) {
        const int before = int(std::count_if(
            again.begin(), again.end(), [&](const StudyRun &r) { return done.count(r.key()); }));
        cli.message("measured again: " + std::to_string(again.size()) +
                    " runs, each case's pick and closest contender up to " +
                    std::to_string(options.measurements) + " times" +
                    (before ? " (" + std::to_string(before) + " done before)" : std::string()));
        int index = 0;
        for (const StudyRun &run : again) {
            ++index;
            if (!done.count(run.key()) &&
                !runner.run(run, total + index, total + int(again.size())))
                break;
        }
    }

    // What the finished runs show (this study's only: runs.jsonl may hold other settings').
    const std::vector<StudyRecord> records = studyRecords();
    QStringList written;
    int failed = 0;
    for (const StudyRecord &r : records)
        failed += !r.ok();
    core::Json summary =
        writeFindings(cli, *preset, options, records, configurations, out, &written);
    writeReport(*preset, lab, configurations, records, total + int(again.size()), out, &written);
    for (const QString &f : written)
        cli.message("wrote " + f.toStdString());
    if (cli.json()) {
        core::Json j;
        j.set("command", "study").set("preset", presetName.toStdString());
        j.set("out", out.toStdString()).set("runs_planned", total);
        j.set("runs_done", int(records.size())).set("runs_failed", failed);
        j.set("runs_now", runner.ran()).set("cancelled", runner.cancelled());
        j.set("runs_again", int(again.size()));
        labJson(lab, &j);
        core::Json files = core::Json::array();
        for (const QString &f : written)
            files.push(f.toStdString());
        j.set("files", std::move(files)).set("summary", std::move(summary));
        cli.printJson(j);
    }
    if (runner.cancelled()) {
        cli.message("cancelled: " + std::to_string(records.size()) + " of " +
                    std::to_string(total + int(again.size())) +
                    " runs done; the same command continues the study");
        return ExitFailure;
    }
    const bool anyOk =
        std::any_of(records.begin(), records.end(), [](const StudyRecord &r) { return r.ok(); });
    return anyOk ? ExitSuccess : ExitFailure;
}

} // namespace edgetrain::app

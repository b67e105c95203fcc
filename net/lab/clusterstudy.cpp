#include "net/lab/clusterstudy.h"

#include "core/error.h"
#include "core/fieldcheck.h"
#include "net/lab/edgelab.h"

#include <QFile>

#include <algorithm>
#include <bit>
#include <cmath>
#include <fcntl.h>
#include <map>
#include <unistd.h>

namespace edgetrain::net {

namespace {

using core::FieldCheck::missing;
using core::FieldCheck::mustBe;

const core::Json &field(const core::Json &j, const char *name, const std::string &source)
{
    const core::Json *v = j.find(name);
    if (!v)
        throw core::FormatError(source + ": " + missing(name));
    return *v;
}

int intField(const core::Json &j, const char *name, int lo, int hi, const std::string &source)
{
    const core::Json &v = field(j, name, source);
    if (!v.isInteger() || v.toInt() < lo || v.toInt() > hi)
        throw core::FormatError(source + ": " +
                                mustBe(name, core::FieldCheck::integerFrom(lo, hi), v.dump()));
    return int(v.toInt());
}

QString textField(const core::Json &j, const char *name, const std::string &source)
{
    const core::Json &v = field(j, name, source);
    if (!v.isString())
        throw core::FormatError(source + ": " + mustBe(name, "a string", v.dump()));
    return QString::fromStdString(v.toString());
}

/** A number of a run's result, or `otherwise` where the result has none. */
double number(const core::Json &j, const char *name, double otherwise = 0.0)
{
    const core::Json *v = j.find(name);
    return v && v->isNumber() ? v->toDouble() : otherwise;
}

QStringList names(const core::Json *array)
{
    QStringList list;
    if (array && array->isArray())
        for (const core::Json &n : array->toArray())
            if (n.isString())
                list.append(QString::fromStdString(n.toString()));
    return list;
}

QByteArray num(double v)
{
    return QByteArray::number(v, 'g', 6); // locale-free
}

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

double median(std::vector<double> v)
{
    if (v.empty())
        return 0.0;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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

QString StudyRun::key() const
{
    const QString first =
        QStringLiteral("%1/%2/b%3/l%4/t%5/e%6/%7/%8")
            .arg(kind == Kind::Plan ? QStringLiteral("plan") : QStringLiteral("train"), job.model)
            .arg(job.batch)
            .arg(job.train_limit)
            .arg(job.test_limit)
            .arg(job.epochs)
            .arg(modeName(mode), nodes.join(QLatin1Char('+')));
    return measurement > 1 ? first + QStringLiteral("/m%1").arg(measurement) : first;
}

std::optional<ClusterStudy::Preset> ClusterStudy::parsePreset(const QString &text)
{
    if (text == QLatin1String("pi-cluster"))
        return Preset::PiCluster;
    if (text == QLatin1String("cluster-choice"))
        return Preset::ClusterChoice;
    return std::nullopt;
}

QString ClusterStudy::presetName(Preset preset)
{
    return preset == Preset::PiCluster ? QStringLiteral("pi-cluster")
                                       : QStringLiteral("cluster-choice");
}

QString ClusterStudy::defaultDevices(Preset preset)
{
    return preset == Preset::PiCluster ? QStringLiteral("pi3:5")
                                       : QStringLiteral("pi3:2,pi4:2,pi5:1");
}

ClusterStudy::Options ClusterStudy::defaults(Preset preset, bool quick)
{
    Options o;
    o.preset = preset;
    if (preset == Preset::PiCluster) {
        // The paper trains LeNet and ResNet-32 for an epoch of all the data, for hours; here a
        // share of Fashion-MNIST keeps each run under about a minute on emulated Pi 3s.
        o.modes = {TrainingMode::Sync, TrainingMode::Async};
        if (quick) {
            o.jobs = {{QStringLiteral("lenet5"), 64, 512, 256, 1}};
            o.max_nodes = 2;
        } else {
            o.jobs = {{QStringLiteral("lenet5"), 64, 8192, 1024, 2},
                      {QStringLiteral("resnet20"), 32, 1024, 512, 1}};
        }
    } else {
        o.modes = {TrainingMode::Sync};
        if (quick) {
            o.jobs = {{QStringLiteral("lenet5"), 64, 512, 256, 1}};
        } else {
            for (const char *model : {"lenet5", "mlp"})
                for (int batch : {32, 64, 128})
                    o.jobs.push_back({QLatin1String(model), batch,
                                      QLatin1String(model) == QLatin1String("mlp") ? 4096 : 8192,
                                      1024, 1});
        }
    }
    return o;
}

std::vector<StudyRun> ClusterStudy::runs(const Options &options, const QStringList &nodes)
{
    std::vector<StudyRun> list;
    const int n = int(nodes.size());
    if (options.preset == Preset::PiCluster) {
        const int most = options.max_nodes > 0 ? std::min(options.max_nodes, n) : n;
        for (const StudyJob &job : options.jobs)
            for (TrainingMode mode : options.modes)
                for (int k = 1; k <= most; ++k)
                    list.push_back({StudyRun::Kind::Train, job, mode, nodes.mid(0, k)});
        return list;
    }
    for (const StudyJob &job : options.jobs) {
        list.push_back({StudyRun::Kind::Plan, job, TrainingMode::Sync, nodes});
        // every non-empty subset, smaller ones first, each in the lab's order
        for (int k = 1; k <= n; ++k)
            for (unsigned mask = 1; mask < (1u << n); ++mask) {
                if (std::popcount(mask) != k)
                    continue;
                QStringList subset;
                for (int i = 0; i < n; ++i)
                    if (mask & (1u << i))
                        subset.append(nodes[i]);
                list.push_back({StudyRun::Kind::Train, job, TrainingMode::Sync, subset});
            }
    }
    return list;
}

std::vector<StudyRun> ClusterStudy::repeats(const Options &options,
                                            const std::vector<StudyRecord> &records)
{
    if (options.preset != Preset::ClusterChoice || options.measurements < 2)
        return {};
    // Each job's contenders, each subset once, in the order its cases name them.
    std::vector<std::pair<StudyJob, std::vector<QStringList>>> contenders;
    for (const StudyJob &job : options.jobs) {
        std::vector<StudyRecord> own;
        for (const StudyRecord &r : records)
            if (r.run.job.model == job.model && r.run.job.batch == job.batch &&
                r.run.job.train_limit == job.train_limit &&
                r.run.job.test_limit == job.test_limit && r.run.job.epochs == job.epochs)
                own.push_back(r);
        std::vector<QStringList> subsets;
        for (const ChoiceCase &c : choice(own).cases) {
            if (c.rank == 0 || c.contender.isEmpty())
                continue; // the pick was not measured, or nothing else was
            for (const QStringList &nodes : {c.picked, c.contender})
                if (std::find(subsets.begin(), subsets.end(), nodes) == subsets.end())
                    subsets.push_back(nodes);
        }
        if (!subsets.empty())
            contenders.emplace_back(job, std::move(subsets));
    }
    std::vector<StudyRun> list;
    for (int m = 2; m <= options.measurements; ++m)
        for (const auto &[job, subsets] : contenders)
            for (const QStringList &nodes : subsets)
                list.push_back({StudyRun::Kind::Train, job, TrainingMode::Sync, nodes, m});
    return list;
}

core::Json ClusterStudy::recordJson(const StudyRecord &r)
{
    core::Json j;
    j.set("key", r.run.key().toStdString());
    j.set("kind", r.run.kind == StudyRun::Kind::Plan ? "plan" : "train");
    j.set("model", r.run.job.model.toStdString()).set("batch", r.run.job.batch);
    j.set("train_limit", r.run.job.train_limit).set("test_limit", r.run.job.test_limit);
    j.set("epochs", r.run.job.epochs).set("mode", modeName(r.run.mode).toStdString());
    core::Json nodes = core::Json::array();
    for (const QString &n : r.run.nodes)
        nodes.push(n.toStdString());
    j.set("nodes", std::move(nodes));
    j.set("measurement", r.run.measurement);
    j.set("exit_code", r.exit_code).set("wall_seconds", r.wall_seconds);
    j.set("error", r.error.toStdString());
    j.set("result", r.result);
    return j;
}

StudyRecord ClusterStudy::recordFromJson(const core::Json &j, const std::string &source)
{
    if (!j.isObject())
        throw core::FormatError(source + ": a run must be a JSON object");
    StudyRecord r;
    const QString kind = textField(j, "kind", source);
    if (kind != QLatin1String("train") && kind != QLatin1String("plan"))
        throw core::FormatError(source + ": " +
                                mustBe("kind", "\"train\" or \"plan\"", kind.toStdString()));
    r.run.kind = kind == QLatin1String("plan") ? StudyRun::Kind::Plan : StudyRun::Kind::Train;
    r.run.job.model = textField(j, "model", source);
    r.run.job.batch = intField(j, "batch", 1, 1 << 20, source);
    r.run.job.train_limit = intField(j, "train_limit", 0, 1 << 30, source);
    r.run.job.test_limit = intField(j, "test_limit", 0, 1 << 30, source);
    r.run.job.epochs = intField(j, "epochs", 1, 100000, source);
    const QString mode = textField(j, "mode", source);
    const auto parsed = parseMode(mode);
    if (!parsed)
        throw core::FormatError(source + ": " +
                                mustBe("mode", "sync, async or local-sgd", mode.toStdString()));
    r.run.mode = *parsed;
    const core::Json &nodes = field(j, "nodes", source);
    if (!nodes.isArray() || nodes.toArray().empty())
        throw core::FormatError(source + ": " +
                                mustBe("nodes", "a non-empty array of node names", nodes.dump()));
    r.run.nodes = names(&nodes);
    if (r.run.nodes.size() != qsizetype(nodes.toArray().size()))
        throw core::FormatError(source + ": " + mustBe("nodes", "node names", nodes.dump()));
    // absent from an older study's runs: each was the first
    r.run.measurement = j.find("measurement") ? intField(j, "measurement", 1, 100, source) : 1;
    r.exit_code = intField(j, "exit_code", -1000, 1000, source);
    const core::Json &wall = field(j, "wall_seconds", source);
    if (!wall.isNumber() || !(wall.toDouble() >= 0))
        throw core::FormatError(source + ": " +
                                mustBe("wall_seconds", "a number of seconds", wall.dump()));
    r.wall_seconds = wall.toDouble();
    r.error = textField(j, "error", source);
    r.result = field(j, "result", source);
    return r;
}

std::vector<StudyRecord> ClusterStudy::readRecords(const QString &path)
{
    QFile file(path);
    if (!file.exists())
        return {};
    if (!file.open(QIODevice::ReadOnly))
        throw core::IoError("cannot read '" + path.toStdString() + "'");
    const QByteArray data = file.readAll();
    std::vector<StudyRecord> records;
    qsizetype start = 0;
    int line = 0;
    while (start < data.size()) {
        const qsizetype end = data.indexOf('\n', start);
        if (end < 0)
            break; // cut off while it was written: that run is done again
        ++line;
        const QByteArray text = data.mid(start, end - start).trimmed();
        start = end + 1;
        if (text.isEmpty())
            continue;
        const std::string source = path.toStdString() + ":" + std::to_string(line);
        records.push_back(recordFromJson(
            core::Json::parse(std::string_view(text.constData(), std::size_t(text.size())), source),
            source));
    }
    return records;
}

void ClusterStudy::appendRecord(const QString &path, const StudyRecord &record)
{
    const std::string line = recordJson(record).dump() + "\n";
    // A line cut off when an earlier study was killed (readRecords skips it) goes first, or
    // this record would be glued to it.
    {
        QFile file(path);
        if (file.exists() && file.open(QIODevice::ReadWrite)) {
            const QByteArray data = file.readAll();
            if (!data.isEmpty() && !data.endsWith('\n') && !file.resize(data.lastIndexOf('\n') + 1))
                throw core::IoError("cannot repair '" + path.toStdString() + "'");
        }
    }
    const int fd = ::open(QFile::encodeName(path).constData(),
                          O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        throw core::IoError("cannot write '" + path.toStdString() + "'");
    std::size_t written = 0;
    while (written < line.size()) {
        const ssize_t n = ::write(fd, line.data() + written, line.size() - written);
        if (n <= 0) {
            ::close(fd);
            throw core::IoError("cannot write '" + path.toStdString() + "' (disk full?)");
        }
        written += std::size_t(n);
    }
    const bool synced = ::fsync(fd) == 0;
    if (::close(fd) != 0 || !synced)
        throw core::IoError("cannot write '" + path.toStdString() + "'");
}

std::vector<StudyRecord> ClusterStudy::latest(std::vector<StudyRecord> records)
{
    std::map<QString, std::size_t> at; // key -> index in `kept`
    std::vector<StudyRecord> kept;
    for (StudyRecord &r : records) {
        const QString key = r.run.key();
        const auto it = at.find(key);
        if (it == at.end()) {
            at.emplace(key, kept.size());
            kept.push_back(std::move(r));
        } else {
            kept[it->second] = std::move(r);
        }
    }
    return kept;
}

// --- pi-cluster ---------------------------------------------------------------------------

std::vector<ClusterStudy::ScalingRow> ClusterStudy::scaling(const std::vector<StudyRecord> &records)
{
    std::vector<ScalingRow> rows;
    for (const StudyRecord &r : records) {
        if (r.run.kind != StudyRun::Kind::Train)
            continue;
        ScalingRow row;
        row.model = r.run.job.model;
        row.batch = r.run.job.batch;
        row.mode = r.run.mode;
        row.devices = int(r.run.nodes.size());
        row.error = r.error;
        const core::Json *epochs = r.result.find("epochs");
        double sum = 0.0;
        if (epochs && epochs->isArray()) {
            for (const core::Json &e : epochs->toArray()) {
                sum += number(e, "train_seconds");
                row.test_accuracy = number(e, "test_accuracy", -1.0);
            }
            row.epochs = int(epochs->toArray().size());
        }
        row.epoch_seconds = row.epochs > 0 ? sum / row.epochs : 0.0;
        row.training_seconds = number(r.result, "training_seconds", sum);
        const core::Json *usage = r.result.find("resources_by_node");
        if (usage && usage->isArray() && !usage->toArray().empty()) {
            row.resources = true;
            const double n = double(usage->toArray().size());
            const double epochsRun = std::max(1, row.epochs);
            for (const core::Json &u : usage->toArray()) {
                row.cpu_percent += number(u, "cpu_percent") / n;
                row.rss_mib += number(u, "rss_peak_bytes") / (1024.0 * 1024.0) / n;
                row.received_kib += number(u, "received_bytes") / 1024.0 / epochsRun / n;
                row.sent_kib += number(u, "sent_bytes") / 1024.0 / epochsRun / n;
            }
        }
        if (row.error.isEmpty() && row.epochs == 0)
            row.error = QStringLiteral("no epoch finished");
        rows.push_back(row);
    }
    return rows;
}

std::vector<ClusterStudy::NodeUsage>
ClusterStudy::nodeUsage(const std::vector<StudyRecord> &records)
{
    std::vector<NodeUsage> rows;
    for (const StudyRecord &r : records) {
        const core::Json *usage = r.result.find("resources_by_node");
        if (r.run.kind != StudyRun::Kind::Train || !usage || !usage->isArray())
            continue;
        for (const core::Json &u : usage->toArray()) {
            NodeUsage n;
            n.model = r.run.job.model;
            n.batch = r.run.job.batch;
            n.mode = r.run.mode;
            n.devices = int(r.run.nodes.size());
            const core::Json *name = u.find("node");
            n.node =
                name && name->isString() ? QString::fromStdString(name->toString()) : QString();
            n.cpu_percent = number(u, "cpu_percent");
            n.agent_cpu_percent = number(u, "agent_cpu_percent");
            n.rss_peak_bytes = std::int64_t(number(u, "rss_peak_bytes"));
            n.received_bytes = std::int64_t(number(u, "received_bytes"));
            n.sent_bytes = std::int64_t(number(u, "sent_bytes"));
            rows.push_back(n);
        }
    }
    return rows;
}

QByteArray ClusterStudy::scalingCsv(const std::vector<ScalingRow> &rows)
{
    QByteArray csv = "model,batch,mode,devices,epochs,epoch_seconds,training_seconds,"
                     "test_accuracy,cpu_percent,rss_mib,received_kib_per_epoch,"
                     "sent_kib_per_epoch,error\n";
    for (const ScalingRow &r : rows) {
        QByteArray error = r.error.toUtf8();
        error.replace('"', "\"\"");
        csv += r.model.toUtf8() + ',' + QByteArray::number(r.batch) + ',' +
               modeName(r.mode).toUtf8() + ',' + QByteArray::number(r.devices) + ',' +
               QByteArray::number(r.epochs) + ',' + num(r.epoch_seconds) + ',' +
               num(r.training_seconds) + ',' +
               (r.test_accuracy < 0 ? QByteArray() : num(r.test_accuracy)) + ',' +
               (r.resources ? num(r.cpu_percent) + ',' + num(r.rss_mib) + ',' +
                                  num(r.received_kib) + ',' + num(r.sent_kib)
                            : QByteArray(",,,")) +
               ",\"" + error + "\"\n";
    }
    return csv;
}

QByteArray ClusterStudy::nodeUsageCsv(const std::vector<NodeUsage> &rows)
{
    QByteArray csv = "model,batch,mode,devices,node,cpu_percent,agent_cpu_percent,"
                     "rss_peak_bytes,received_bytes,sent_bytes\n";
    for (const NodeUsage &n : rows)
        csv += n.model.toUtf8() + ',' + QByteArray::number(n.batch) + ',' +
               modeName(n.mode).toUtf8() + ',' + QByteArray::number(n.devices) + ",\"" +
               n.node.toUtf8().replace('"', "\"\"") + "\"," + num(n.cpu_percent) + ',' +
               num(n.agent_cpu_percent) + ',' + QByteArray::number(qint64(n.rss_peak_bytes)) + ',' +
               QByteArray::number(qint64(n.received_bytes)) + ',' +
               QByteArray::number(qint64(n.sent_bytes)) + '\n';
    return csv;
}

// --- cluster-choice -----------------------------------------------------------------------

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

ClusterStudy::ChoiceAnalysis ClusterStudy::choice(const std::vector<StudyRecord> &records,
                                                  const std::map<QString, QString> &configurations)
{
    ChoiceAnalysis a;
    // One job: its plan's candidates (by the subset's names) and its measured subsets.
    struct Job
    {
        QString model;
        int batch = 0;
        double profiling_seconds = 0;
        std::map<QStringList, ChoiceRun> predicted;
        std::map<QStringList, std::pair<double, double>> measured; // the first: seconds, joules
        std::map<QStringList, std::vector<std::pair<double, double>>> all; // every measurement
    };
    std::map<QString, Job> jobs; // by the plan's key without its kind and nodes
    std::vector<QString> order;
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
        if (!jobs.count(key))
            order.push_back(key);
        Job &job = jobs[key];
        job.model = r.run.job.model;
        job.batch = r.run.job.batch;
        if (r.run.kind == StudyRun::Kind::Plan) {
            job.profiling_seconds = number(r.result, "profiling_seconds");
            const core::Json *candidates = r.result.find("candidates");
            if (!candidates || !candidates->isArray())
                continue;
            for (const core::Json &c : candidates->toArray()) {
                ChoiceRun run;
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
            const std::pair<double, double> m{number(r.result, "training_seconds"),
                                              number(r.result, "training_joules")};
            if (r.run.measurement == 1)
                job.measured[r.run.nodes] = m;
            job.all[r.run.nodes].push_back(m);
        }
    }

    std::vector<double> errors, shares;
    std::map<QString, bool> powerKnown; // by job: every measured run has its energy
    for (const QString &key : order) {
        Job &job = jobs[key];
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
    for (const QString &key : order) {
        const Job &job = jobs[key];
        if (job.predicted.empty() || job.measured.empty())
            continue;
        for (const QString &objective : objectives()) {
            if (objective != QLatin1String("time") && !powerKnown[key]) {
                if (!a.skipped.contains(objective))
                    a.skipped.append(objective);
                continue;
            }
            // the planner's pick: the best predicted of the suitable candidates
            const ChoiceRun *pick = nullptr;
            for (const auto &[nodes, c] : job.predicted) {
                if (!c.suitable)
                    continue;
                const double v = predictedValue(objective, c);
                if (!pick || v < predictedValue(objective, *pick) ||
                    (v == predictedValue(objective, *pick) &&
                     c.predicted_seconds < pick->predicted_seconds))
                    pick = &c;
            }
            if (!pick)
                continue;
            std::vector<std::pair<QStringList, std::pair<double, double>>> measured(
                job.measured.begin(), job.measured.end());
            std::stable_sort(measured.begin(), measured.end(), [&](const auto &x, const auto &y) {
                const double vx = objectiveValue(objective, x.second.first, x.second.second);
                const double vy = objectiveValue(objective, y.second.first, y.second.second);
                return vx != vy ? vx < vy : x.second.first < y.second.first;
            });
            ChoiceCase c;
            c.model = job.model;
            c.batch = job.batch;
            c.objective = objective;
            c.picked = pick->nodes;
            c.measured_best = measured.front().first;
            c.measured = int(measured.size());
            c.best_value = objectiveValue(objective, measured.front().second.first,
                                          measured.front().second.second);
            for (std::size_t i = 0; i < measured.size(); ++i)
                if (measured[i].first == pick->nodes) {
                    c.rank = int(i) + 1;
                    c.picked_value = objectiveValue(objective, measured[i].second.first,
                                                    measured[i].second.second);
                }
            // The same by configuration: each configuration's runs averaged, the means ranked
            // (the first runs, as the strict ranks; the repeats are judged below).
            struct Sum
            {
                double value = 0, seconds = 0;
                int runs = 0;
            };
            std::map<QStringList, Sum> sums;
            for (const auto &[nodes, m] : measured) {
                Sum &sum = sums[configurationOf(nodes, configurations)];
                sum.value += objectiveValue(objective, m.first, m.second);
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
            const QStringList picked = configurationOf(pick->nodes, configurations);
            for (std::size_t i = 0; i < means.size(); ++i)
                if (means[i].first == picked)
                    c.configuration_rank = int(i) + 1;
            a.by_configuration = a.by_configuration || means.size() < measured.size();
            // On the repeated measurements: every subset's runs (the first alone for most),
            // their mean, lowest and highest value.
            c.contender = measured.size() < 2                     ? QStringList()
                          : measured.front().first == pick->nodes ? measured[1].first
                                                                  : measured.front().first;
            struct Spread
            {
                QStringList nodes;
                double mean = 0, low = 0, high = 0, seconds = 0;
                int runs = 0;
            };
            std::vector<Spread> spreads;
            for (const auto &[nodes, first] : measured) {
                Spread sp{nodes};
                for (const auto &[seconds, joules] : job.all.at(nodes)) {
                    const double v = objectiveValue(objective, seconds, joules);
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
            const Spread mine = spreadOf(pick->nodes), other = spreadOf(c.contender);
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
            c.best_on_repeats = mine.runs > 0 && lowest.nodes == pick->nodes;
            c.within_spread = c.best_on_repeats ||
                              (mine.runs > 0 && mine.low <= lowest.high && lowest.low <= mine.high);
            a.best_on_repeats += c.best_on_repeats;
            a.best_within_spread += c.within_spread;
            a.repeated += mine.runs > 1 || other.runs > 1;
            a.measurements = std::max({a.measurements, mine.runs, other.runs});
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

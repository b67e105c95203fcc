#include "net/lab/clusterstudy.h"

#include "core/error.h"
#include "core/fieldcheck.h"
#include "net/lab/edgelab.h"
#include "net/lab/studyfields.h"

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
using studyfields::names;
using studyfields::num;
using studyfields::number;

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

} // namespace edgetrain::net

#include "session.h"

#include "csvfield.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSaveFile>

// The session's files: session.json (written by sessionjson.cpp, read by sessionread.cpp) and the
// CSV files of device readings and training progress, each written atomically.

namespace edgetrain::app {

namespace {

/** One CSV record's fields (RFC 4180: quoted fields may hold commas and doubled quotes). */
QList<QByteArray> csvFields(const QByteArray &line)
{
    QList<QByteArray> fields;
    QByteArray field;
    bool quoted = false;
    for (qsizetype i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
                field += line[++i];
            else if (c == '"')
                quoted = false;
            else
                field += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.append(field);
            field.clear();
        } else {
            field += c;
        }
    }
    fields.append(field);
    return fields;
}

/** The records of a CSV file after its header, at most `limit` of them (-1: all); none if the file
 *  is missing. A damaged file loses its charts, never the session, so nothing here fails. */
QList<QList<QByteArray>> csvRecords(const QString &path, qint64 limit)
{
    QList<QList<QByteArray>> records;
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return records;
    f.readLine(); // header
    while (!f.atEnd() && (limit < 0 || records.size() < limit)) {
        QByteArray line = f.readLine();
        while (line.count('"') % 2 == 1 && !f.atEnd()) // a quoted field holding a line break
            line += f.readLine();
        const QByteArray trimmed = line.endsWith("\r\n") ? line.chopped(2)
                                   : line.endsWith('\n') ? line.chopped(1)
                                                         : line;
        if (!trimmed.isEmpty())
            records.append(csvFields(trimmed));
    }
    return records;
}

} // namespace

std::int64_t PlanSettings::budgetBytesFor(const QString &node) const
{
    const auto b = deviceBudgetBytes.find(node);
    return b != deviceBudgetBytes.end() ? b->second : budgetAllBytes;
}

bool Session::hasLabels() const
{
    return QFileInfo::exists(path(QStringLiteral("labels.json")));
}

bool Session::hasDataset() const
{
    return dataset.kind == QLatin1String("crops") ? datasetStats.has_value()
                                                  : frameStats.has_value();
}

const vision::DetectorScore *VerifiedRound::score(const std::string &name) const
{
    for (const vision::DetectorScore &s : scores)
        if (s.name == name)
            return &s;
    return nullptr;
}

const vision::FigureIntervals *VerifiedRound::interval(const std::string &name) const
{
    for (std::size_t i = 0; i < scores.size() && i < intervals.size(); ++i)
        if (scores[i].name == name)
            return &intervals[i];
    return nullptr;
}

const vision::BootstrapDifference *VerifiedRound::lead(const std::string &baseline) const
{
    for (const vision::BootstrapDifference &d : differences)
        if (d.a == "student" && d.b == baseline)
            return &d;
    return nullptr;
}

bool writeFileAtomically(const QString &path, const QByteArray &data, QString *error)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(data) != data.size() || !file.commit()) {
        *error = QStringLiteral("cannot write '%1': %2").arg(path, file.errorString());
        return false;
    }
    return true;
}

bool Session::save(QString *error) const
{
    if (!QDir().mkpath(dir)) {
        *error = QStringLiteral("cannot create the session folder '%1'").arg(dir);
        return false;
    }
    // Three files cannot be replaced at once, and a save cut short (the app killed, the disk full)
    // leaves some of them new. session.json decides: it counts the rows of each CSV that are its
    // own and open() reads no further. Within a run the rows only grow, so a CSV with rows goes
    // first: cut short after it, it holds rows the older session.json leaves out. A new run has
    // none, so its empty CSV goes last: cut short before it, the old run's rows are still there,
    // and the new session.json counts none of them.
    const struct
    {
        QString file;
        QByteArray csv;
        bool rows;
    } csvs[] = {{QStringLiteral("metrics.csv"), metricsCsv(), !training.metrics.empty()},
                {QStringLiteral("progress.csv"), progressCsv(), !training.progress.empty()}};
    for (const auto &c : csvs)
        if (c.rows && !writeFileAtomically(path(c.file), c.csv, error))
            return false;
    if (!writeFileAtomically(path(QStringLiteral("session.json")),
                             QJsonDocument(toJson()).toJson(QJsonDocument::Indented), error))
        return false;
    for (const auto &c : csvs)
        if (!c.rows && !writeFileAtomically(path(c.file), c.csv, error))
            return false;
    return true;
}

std::optional<Session> Session::open(const QString &dir, QString *error)
{
    Session s;
    s.dir = QDir(dir).absolutePath();
    const QString manifest = s.path(QStringLiteral("session.json"));
    QFile file(manifest);
    if (!file.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("cannot open '%1': %2").arg(manifest, file.errorString());
        return std::nullopt;
    }
    QJsonParseError parse;
    const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &parse);
    if (parse.error != QJsonParseError::NoError || !doc.isObject()) {
        *error = QStringLiteral("'%1' is not a JSON object (%2 at byte %3)")
                     .arg(manifest, parse.errorString())
                     .arg(parse.offset);
        return std::nullopt;
    }
    if (!s.fromJson(doc.object(), error)) {
        *error = QStringLiteral("'%1': %2").arg(manifest, *error);
        return std::nullopt;
    }
    // The device readings and the training progress; a damaged file loses the charts, not the
    // session. Numbers are read as they were written: locale-free. Only the rows session.json
    // counts (all in sessions from before it counted them): a save cut short may have left a CSV
    // with the rows of a newer one (see save()).
    const QJsonObject counts = doc.object().value(QStringLiteral("training")).toObject();
    const qint64 metricRows = counts.value(QStringLiteral("metrics_rows")).toInteger(-1);
    const qint64 progressRows = counts.value(QStringLiteral("progress_rows")).toInteger(-1);
    for (const QList<QByteArray> &f :
         csvRecords(s.path(QStringLiteral("metrics.csv")), metricRows)) {
        if (f.size() < 11)
            continue;
        MetricRow m;
        m.seconds = f[0].toDouble();
        m.node = QString::fromUtf8(f[1]);
        m.cpuPercent = f[2].toDouble();
        m.memoryUsedBytes = f[3].toDouble();
        m.rxBytesPerSecond = f[4].toDouble();
        m.txBytesPerSecond = f[5].toDouble();
        m.phase = QString::fromUtf8(f[6]);
        m.epoch = f[7].toInt();
        m.loss = f[8].toDouble();
        m.accuracy = f[9].toDouble();
        m.imagesPerSecond = f[10].toDouble();
        if (f.size() >= 14 && !f[11].isEmpty()) { // sessions from before power have 11 columns
            m.powerWatts = f[11].toDouble();
            m.powerMeasured = f[12] == "measured";
            m.energyJoules = f[13].toDouble();
        }
        if (f.size() >= 15 && !f[14].isEmpty()) // sessions from before it have 14 columns
            m.processRssBytes = f[14].toDouble();
        s.training.metrics.push_back(m);
    }
    for (const QList<QByteArray> &f :
         csvRecords(s.path(QStringLiteral("progress.csv")), progressRows)) {
        if (f.size() < 7)
            continue;
        ProgressRow p;
        p.seconds = f[0].toDouble();
        p.node = QString::fromUtf8(f[1]);
        p.epoch = f[2].toInt();
        p.step = f[3].toLongLong();
        p.loss = f[4].toDouble();
        p.accuracy = f[5].toDouble();
        p.imagesPerSecond = f[6].toDouble();
        s.training.progress.push_back(p);
    }
    return s;
}

QString Session::reconcile(const vision::LabelResult *labels)
{
    if (labels && labels->round > round)
        round = labels->round;
    const std::string folder = dir.toStdString();
    try {
        if (const auto built = vision::CropDataset::stats(folder))
            datasetStats = built;
    } catch (const std::exception &) { // damaged: session.json's figures stay
    }
    try {
        if (const auto built = vision::FrameDataset::stats(folder)) {
            if (built->round <= round) {
                frameStats = built;
            } else {
                frameStats.reset();
                return QStringLiteral("the frame dataset was built by a self-training pass for "
                                      "round %1 that stopped before it saved its labels: it does "
                                      "not go with the labels of round %2. Build the dataset "
                                      "again (step 3) or self-train again")
                    .arg(built->round)
                    .arg(round);
            }
        }
    } catch (const std::exception &) { // damaged: session.json's figures stay
    }
    return {};
}

QByteArray Session::metricsCsv() const
{
    QByteArray out = "seconds,node,cpu_percent,memory_used_bytes,rx_bytes_per_second,"
                     "tx_bytes_per_second,phase,epoch,loss,accuracy,images_per_second,"
                     "power_watts,power,energy_joules,process_rss_bytes\n";
    for (const MetricRow &m : training.metrics) {
        const QByteArray rss =
            m.processRssBytes < 0 ? QByteArray() : QByteArray::number(qint64(m.processRssBytes));
        out += QByteArray::number(m.seconds, 'f', 3) + ',' + csvField(m.node) + ',' +
               QByteArray::number(m.cpuPercent, 'f', 1) + ',' +
               QByteArray::number(qint64(m.memoryUsedBytes)) + ',' +
               QByteArray::number(m.rxBytesPerSecond, 'f', 0) + ',' +
               QByteArray::number(m.txBytesPerSecond, 'f', 0) + ',' + csvField(m.phase) + ',' +
               QByteArray::number(m.epoch) + ',' + QByteArray::number(m.loss, 'g', 6) + ',' +
               QByteArray::number(m.accuracy, 'g', 6) + ',' +
               QByteArray::number(m.imagesPerSecond, 'f', 1) + ',' +
               (m.powerWatts < 0 ? QByteArray(",,")
                                 : QByteArray::number(m.powerWatts, 'f', 3) + ',' +
                                       (m.powerMeasured ? "measured" : "estimated") + ',' +
                                       QByteArray::number(m.energyJoules, 'f', 3)) +
               ',' + rss + '\n';
    }
    return out;
}

QByteArray Session::progressCsv() const
{
    QByteArray out = "seconds,node,epoch,step,loss,accuracy,images_per_second\n";
    for (const ProgressRow &p : training.progress)
        out += QByteArray::number(p.seconds, 'f', 3) + ',' + csvField(p.node) + ',' +
               QByteArray::number(p.epoch) + ',' + QByteArray::number(qint64(p.step)) + ',' +
               QByteArray::number(p.loss, 'g', 6) + ',' + QByteArray::number(p.accuracy, 'g', 6) +
               ',' + QByteArray::number(p.imagesPerSecond, 'f', 1) + '\n';
    return out;
}

QByteArray Session::epochsCsv() const
{
    QByteArray out = "epoch,nodes,train_loss,train_accuracy,validation_loss,validation_accuracy,"
                     "samples,seconds,images_per_second\n";
    for (const auto &e : training.epochs)
        out += QByteArray::number(e.epoch) + ',' + QByteArray::number(e.nodes) + ',' +
               QByteArray::number(e.train_loss, 'g', 6) + ',' +
               QByteArray::number(e.train_accuracy, 'g', 6) + ',' +
               QByteArray::number(e.test_loss, 'g', 6) + ',' +
               QByteArray::number(e.test_accuracy, 'g', 6) + ',' +
               QByteArray::number(qint64(e.samples)) + ',' + QByteArray::number(e.seconds, 'f', 3) +
               ',' + QByteArray::number(e.images_per_second, 'f', 1) + '\n';
    return out;
}

} // namespace edgetrain::app

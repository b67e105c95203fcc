// The same bytes in every locale: edgetrain-cli run under a comma-decimal locale (de_DE.UTF-8,
// as on most laptops in continental Europe) writes JSON, model specs, safetensors headers, labels
// and metrics that a standard parser reads and that the C locale reads back, and a session saved
// under German reopens equal under C (and back).

#include "../net/nodeprocess.h"
#include "../support/walkingvideo.h"
#include "app/session/session.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLocale>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QtEndian>

#include <clocale>

namespace {

constexpr const char *kGerman = "de_DE.UTF-8";

struct Run
{
    int status = -1;
    QString out, err;
    QJsonObject json; // the last stdout line, parsed strictly
    QString jsonError;
};

/** edgetrain-cli under `locale` (LANG and LC_ALL, as a shell has them). */
Run cliIn(const char *locale, const QStringList &args)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("LANG"), QString::fromLatin1(locale));
    env.insert(QStringLiteral("LC_ALL"), QString::fromLatin1(locale));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-cli"), args);
    Run r;
    if (!p.waitForFinished(300000))
        return r;
    r.status = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    QJsonParseError error;
    const QJsonDocument doc =
        QJsonDocument::fromJson(r.out.trimmed().split(QLatin1Char('\n')).last().toUtf8(), &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        r.jsonError = error.errorString() + QStringLiteral(" in: ") +
                      r.out.trimmed().split(QLatin1Char('\n')).last();
    r.json = doc.object();
    return r;
}

/** A file read whole and parsed strictly as JSON; the parser's complaint otherwise. */
QJsonDocument jsonFile(const QString &path, QString *error)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("cannot open ") + path;
        return {};
    }
    QJsonParseError e;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &e);
    if (e.error != QJsonParseError::NoError)
        *error = path + QStringLiteral(": ") + e.errorString();
    return doc;
}

/** The safetensors header (8-byte little-endian length, then JSON), parsed strictly. */
QJsonObject safetensorsHeader(const QString &path, QString *error)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("cannot open ") + path;
        return {};
    }
    const QByteArray length = f.read(8);
    const QByteArray header = f.read(qFromLittleEndian<qint64>(length.constData()));
    QJsonParseError e;
    const QJsonDocument doc = QJsonDocument::fromJson(header, &e);
    if (e.error != QJsonParseError::NoError)
        *error = e.errorString();
    return doc.object();
}

/** Sets the process locale as Qt does from LANG (the C library's and QLocale's default). */
void useLocale(const char *name, QLocale::Language language)
{
    QVERIFY2(std::setlocale(LC_ALL, name),
             qPrintable(QStringLiteral("%1 is not generated (scripts/install-deps.sh does it)")
                            .arg(QString::fromLatin1(name))));
    QLocale::setDefault(QLocale(language));
}

} // namespace

class TestLocale : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void trainingFilesAcrossLocales();
    void labelsDatasetAndDetect();
    void monitorCsv();
    void sessionAcrossLocales();
    void cleanup();

private:
    QTemporaryDir m_dir;
    QString m_video;
};

void TestLocale::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_video = m_dir.filePath(QStringLiteral("walk.avi"));
    edgetrain::tests::writeWalkingVideo(m_video);
}

void TestLocale::cleanup()
{
    std::setlocale(LC_ALL, "C");
    QLocale::setDefault(QLocale::c());
}

void TestLocale::trainingFilesAcrossLocales()
{
    // A spec with fractions (dropout 0.25) and a step schedule with a fraction: written under
    // German, each number means what it says.
    const QString spec = m_dir.filePath(QStringLiteral("spec.json"));
    QFile f(spec);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"name": "dropnet", "input": [1, 28, 28], "stages": [{"type": "flatten"},
        {"type": "linear", "out_features": 32}, {"type": "relu"}, {"type": "dropout", "p": 0.25},
        {"type": "linear", "out_features": 10}]})");
    f.close();
    const QString weights = m_dir.filePath(QStringLiteral("w.safetensors"));
    const Run train = cliIn(kGerman, {"train", "--model", spec, "--epochs", "1", "--train-limit",
                                      "512", "--test-limit", "256", "--lr", "0.05", "--schedule",
                                      "step:1:0.5", "--save", weights, "--threads", "1", "--json"});
    QVERIFY2(train.status == 0, qPrintable(train.err));
    QVERIFY2(train.jsonError.isEmpty(), qPrintable(train.jsonError));
    QCOMPARE(train.json.value(QLatin1String("lr")).toDouble(), 0.05);
    const double accuracy = train.json.value(QLatin1String("test_accuracy")).toDouble(-1);
    QVERIFY(accuracy > 0 && accuracy < 1);
    // The weights' header is JSON; the spec inside it keeps p = 0.25.
    QString error;
    const QJsonObject header = safetensorsHeader(weights, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QString inside = header.value(QLatin1String("__metadata__"))
                               .toObject()
                               .value(QLatin1String("edgetrain.model_spec"))
                               .toString();
    QVERIFY2(QJsonDocument::fromJson(inside.toUtf8()).isObject(), qPrintable(inside));
    QVERIFY2(inside.contains(QLatin1String("0.25")), qPrintable(inside));
    // Read back under C: the same weights give the same accuracy on the same test samples.
    const Run evaluate = cliIn(
        "C", {"evaluate", "--model", spec, "--weights", weights, "--test-limit", "256", "--json"});
    QVERIFY2(evaluate.status == 0, qPrintable(evaluate.err));
    QVERIFY2(evaluate.jsonError.isEmpty(), qPrintable(evaluate.jsonError));
    QCOMPARE(evaluate.json.value(QLatin1String("test_accuracy")).toDouble(-1), accuracy);
    // The memory planner's numbers, under German.
    const Run memory =
        cliIn(kGerman, {"memory", "--model", spec, "--input", "1x28x28", "--batch", "8", "--json"});
    QVERIFY2(memory.status == 0, qPrintable(memory.err));
    QVERIFY2(memory.jsonError.isEmpty(), qPrintable(memory.jsonError));
    QVERIFY(memory.json.value(QLatin1String("predicted_recompute_factor")).toDouble() >= 1.0);
    const Run bench = cliIn(kGerman, {"bench", "--model", spec, "--batch", "8", "--input",
                                      "1x28x28", "--steps", "2", "--threads", "1", "--json"});
    QVERIFY2(bench.status == 0, qPrintable(bench.err));
    QVERIFY2(bench.jsonError.isEmpty(), qPrintable(bench.jsonError));
    QVERIFY(bench.json.value(QLatin1String("images_per_second")).toDouble() > 0);
    // A fraction is read as itself: p = 1.5 is refused as 1.5 (not truncated to 1).
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    f.write(
        R"({"name": "bad", "input": [4], "stages": [{"type": "dropout", "p": 1.5}, {"type": "linear", "out_features": 2}]})");
    f.close();
    const Run refused = cliIn(kGerman, {"memory", "--model", spec, "--batch", "8"});
    QCOMPARE(refused.status, 1);
    QVERIFY2(refused.err.contains(QLatin1String("got 1.5")), qPrintable(refused.err));
}

void TestLocale::labelsDatasetAndDetect()
{
    const QString session = m_dir.filePath(QStringLiteral("labels-de"));
    const Run label =
        cliIn(kGerman, {"label", "--source", m_video, "--teacher", "motion", "--every", "2",
                        "--out", session, "--threads", "1", "--json"});
    QVERIFY2(label.status == 0, qPrintable(label.err));
    QVERIFY2(label.jsonError.isEmpty(), qPrintable(label.jsonError));
    QVERIFY(label.json.value(QLatin1String("label_seconds")).toDouble() > 0);
    // labels.json: strict JSON, boxes with their fractions.
    QString error;
    const QJsonDocument labels = jsonFile(session + QStringLiteral("/labels.json"), &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY(labels.object().value(QLatin1String("seconds")).toDouble() > 0);
    QVERIFY(!labels.object().value(QLatin1String("tracks")).toArray().isEmpty());
    // Read under C: the labels cut into a dataset.
    const Run dataset = cliIn("C", {"dataset", "--session", session, "--size", "16x32", "--json"});
    QVERIFY2(dataset.status == 0, qPrintable(dataset.err));
    QVERIFY2(dataset.jsonError.isEmpty(), qPrintable(dataset.jsonError));
    QVERIFY(dataset.json.value(QLatin1String("train"))
                .toObject()
                .value(QLatin1String("positives"))
                .toInt() > 0);
    // detect's boxes under German: numbers, in source pixels, where the person is.
    const Run detect = cliIn(kGerman, {"detect", "--source", m_video, "--detector", "motion",
                                       "--frames", "30", "--json"});
    QVERIFY2(detect.status == 0, qPrintable(detect.err));
    QVERIFY2(detect.jsonError.isEmpty(), qPrintable(detect.jsonError));
    const QJsonArray boxes = detect.json.value(QLatin1String("frames"))
                                 .toArray()
                                 .first()
                                 .toObject()
                                 .value(QLatin1String("boxes"))
                                 .toArray();
    QVERIFY(!boxes.isEmpty());
    const double x = boxes.first().toObject().value(QLatin1String("x")).toDouble(-1);
    QVERIFY2(std::abs(x - edgetrain::tests::walkingPersonAt(30).x) < 8,
             qPrintable(QString::number(x)));
    QVERIFY(detect.json.value(QLatin1String("fps")).toDouble() > 0);
    // Ground truth with fractional boxes imported under German, exported under C as COCO: the
    // same numbers.
    QFile gt(m_dir.filePath(QStringLiteral("gt.txt")));
    QVERIFY(gt.open(QIODevice::WriteOnly));
    gt.write("31,1,80.5,100.25,20.5,50,1,1,1\n");
    gt.close();
    const Run imported = cliIn(kGerman, {"truth", "import", "--session", session, "--format", "mot",
                                         "--file", gt.fileName(), "--json"});
    QVERIFY2(imported.status == 0, qPrintable(imported.err));
    QVERIFY2(imported.jsonError.isEmpty(), qPrintable(imported.jsonError));
    QCOMPARE(imported.json.value(QLatin1String("boxes")).toInt(), 1);
    const QString coco = m_dir.filePath(QStringLiteral("truth.coco.json"));
    const Run exported = cliIn("C", {"truth", "export", "--session", session, "--format", "coco",
                                     "--out", coco, "--json"});
    QVERIFY2(exported.status == 0, qPrintable(exported.err));
    const QJsonDocument cocoDoc = jsonFile(coco, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    const QJsonArray bbox = cocoDoc.object()
                                .value(QLatin1String("annotations"))
                                .toArray()
                                .first()
                                .toObject()
                                .value(QLatin1String("bbox"))
                                .toArray();
    QCOMPARE(bbox, (QJsonArray{79.5, 99.25, 20.5, 50})); // MOT counts pixels from 1, COCO from 0
}

void TestLocale::monitorCsv()
{
    // A node's readings streamed to CSV under German: fractions with a point, and a node whose
    // name holds a comma stays one field.
    const QString keyFile = m_dir.filePath(QStringLiteral("cluster.key"));
    QFile key(keyFile);
    QVERIFY(key.open(QIODevice::WriteOnly));
    key.write("locale test cluster key 0123456789\n");
    key.close();
    QFile::setPermissions(keyFile, QFile::ReadOwner | QFile::WriteOwner);
    // as a Pi 3B: its power is the profile's estimate, so the CSV carries watts and joules too
    NodeProcess node(
        QStringLiteral("pi, rack 2"), keyFile,
        {QStringLiteral("--device-profile"), QStringLiteral("pi3"), QStringLiteral("--emulated")});
    QVERIFY2(node.waitReady(), qPrintable(node.log()));
    const Run nodes =
        cliIn(kGerman, {"nodes", "--probe", QStringLiteral("127.0.0.1:%1").arg(node.discoveryPort),
                        "--timeout", "2s", "--json"});
    QVERIFY2(nodes.status == 0, qPrintable(nodes.err));
    QVERIFY2(nodes.jsonError.isEmpty(), qPrintable(nodes.jsonError));
    QVERIFY2(nodes.out.contains(QLatin1String("pi, rack 2")), qPrintable(nodes.out));
    const QString csv = m_dir.filePath(QStringLiteral("metrics.csv"));
    const Run monitor =
        cliIn(kGerman, {"monitor", "--nodes", QStringLiteral("127.0.0.1:%1").arg(node.port),
                        "--key-file", keyFile, "--csv", csv, "--duration", "3s"});
    QVERIFY2(monitor.status == 0, qPrintable(monitor.err));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
    QVERIFY2(lines.size() >= 2, "no reading written");
    const int columns = int(lines.first().count(',')) + 1;
    QCOMPARE(columns, 17);
    for (qsizetype i = 1; i < lines.size(); ++i) {
        // "…","pi, rack 2","127.0.0.1:port",12.50,…: the quoted name, then numbers with points.
        const QByteArray &line = lines[i];
        QVERIFY2(line.contains(",\"pi, rack 2\","), line.constData());
        const QList<QByteArray> after = line.mid(line.indexOf("\"pi, rack 2\",") + 13).split(',');
        QCOMPARE(int(after.size()), columns - 2);
        bool ok = false;
        after[1].toDouble(&ok); // cpu_percent
        QVERIFY2(ok && after[1].contains('.'), line.constData());
        const double watts = after[columns - 5].toDouble(&ok); // power_watts
        QVERIFY2(ok && watts >= 1.4 && watts <= 3.7 && after[columns - 5].contains('.'),
                 line.constData());
        QCOMPARE(after[columns - 4], QByteArray("estimated: pi3b"));
        after[columns - 3].toDouble(&ok); // energy_joules
        QVERIFY2(ok && after[columns - 3].contains('.'), line.constData());
    }
}

void TestLocale::sessionAcrossLocales()
{
    using edgetrain::app::Session;
    Session s;
    s.dir = m_dir.filePath(QStringLiteral("session"));
    s.plan.lr = 0.05;
    s.plan.deviceBudgetBytes[QStringLiteral("pi, rack 2")] = 123456789;
    s.dataset.negativesPerPositive = 2.5;
    s.training.seconds = 12.375;
    s.training.metrics.push_back({1.5, QStringLiteral("pi, rack 2"), 37.5, 1.5e8, 1024.5, 2048.25,
                                  QStringLiteral("train"), 1, 0.6931, 0.125, 812.5});
    s.training.progress.push_back({2.25, QStringLiteral("pi, rack 2"), 1, 17, 0.5, 0.875, 640.5});
    auto equalAfterReopening = [&](const char *saveIn, QLocale::Language saveLanguage,
                                   const char *openIn, QLocale::Language openLanguage) {
        useLocale(saveIn, saveLanguage);
        QString error;
        QVERIFY2(s.save(&error), qPrintable(error));
        useLocale(openIn, openLanguage);
        const auto back = Session::open(s.dir, &error);
        QVERIFY2(back, qPrintable(error));
        QCOMPARE(back->toJson(), s.toJson());
        QCOMPARE(back->metricsCsv(), s.metricsCsv());
        QCOMPARE(back->progressCsv(), s.progressCsv());
        QCOMPARE(back->plan.lr, 0.05);
        QCOMPARE(back->training.metrics.front().cpuPercent, 37.5);
    };
    equalAfterReopening(kGerman, QLocale::German, "C", QLocale::C);
    equalAfterReopening("C", QLocale::C, kGerman, QLocale::German);
    // What German wrote is what C writes: the same bytes.
    useLocale(kGerman, QLocale::German);
    const QByteArray german = QJsonDocument(s.toJson()).toJson() + s.metricsCsv();
    useLocale("C", QLocale::C);
    QCOMPARE(QJsonDocument(s.toJson()).toJson() + s.metricsCsv(), german);
}

QTEST_GUILESS_MAIN(TestLocale)
#include "tst_locale.moc"

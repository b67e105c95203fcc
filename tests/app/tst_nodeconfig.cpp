// edgetrain-node's config file (the packaged service's /etc/edgetrain/node.conf): what it sets,
// how a bad line is refused, and that the real agent takes it with the command line winning.

#include "app/node/nodeconfig.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <limits>

using namespace edgetrain;

namespace {

bool writeFile(const QString &path, const QByteArray &text)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(text) == text.size();
}

} // namespace

class TstNodeConfig : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void readsEveryField();
    void badLines_data();
    void badLines();
    void missingFile();
    void agentTakesTheFileAndTheCommandLineWins();
    void agentRefusesABadFile();
    void cameraIsAPathOrADevice();
    void cameraRate_data();
    void cameraRate();
    void agentRefusesACameraItCannotOpen();
};

void TstNodeConfig::readsEveryField()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("node.conf"));
    QVERIFY(writeFile(path, "# a Raspberry Pi on the loading bay\n"
                            "\n"
                            "name = pi-bay-2\n"
                            "port=47801\n"
                            "  threads =  3  \n"
                            "memory-limit = 900MiB\n"
                            "data-dir = /srv/datasets/fashion-mnist\n"
                            "key-file = keys/cluster.key\n"
                            "discovery-port = 45455\n"
                            "multicast = no\n"));
    app::NodeConfig c;
    QString error;
    QVERIFY2(c.readFile(path, &error), qPrintable(error));
    QCOMPARE(c.options.name, QStringLiteral("pi-bay-2"));
    QCOMPARE(c.options.port, quint16(47801));
    QCOMPARE(c.threads, 3);
    QCOMPARE(c.options.memory_limit, std::int64_t(900) << 20);
    QCOMPARE(c.options.data_dir, QStringLiteral("/srv/datasets/fashion-mnist"));
    // A relative path is the file's neighbour, not the agent's working directory's.
    QCOMPARE(c.key_file, QDir(dir.path()).filePath(QStringLiteral("keys/cluster.key")));
    QCOMPARE(c.options.discovery_port, quint16(45455));
    QCOMPARE(c.options.multicast, false);

    // What the file does not name keeps the agent's defaults.
    app::NodeConfig d;
    QVERIFY(writeFile(path, "name = n\n"));
    QVERIFY2(d.readFile(path, &error), qPrintable(error));
    QCOMPARE(d.options.port, app::NodeConfig::kDefaultPort);
    QCOMPARE(d.options.memory_limit, std::int64_t(-1));
    QCOMPARE(d.options.multicast, true);
    QVERIFY(d.key_file.isEmpty());
}

void TstNodeConfig::badLines_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message"); // after "FILE:"
    QTest::newRow("port too large")
        << QByteArray("port = 99999\n")
        << "1: field \"port\" must be an integer from 0 to 65535, got '99999'";
    QTest::newRow("no threads, after comments")
        << QByteArray("# the agent\n\nthreads = 0\n")
        << "3: field \"threads\" must be an integer from 1 to 256, got '0'";
    QTest::newRow("threads not a number")
        << QByteArray("threads = all\n")
        << "1: field \"threads\" must be an integer from 1 to 256, got 'all'";
    QTest::newRow("unknown field") << QByteArray("name = a\ncolour = blue\n")
                                   << "2: unknown field \"colour\" (known: name, port";
    QTest::newRow("no equals sign")
        << QByteArray("port 47700\n") << "1: expected 'field = value', got 'port 47700'";
    QTest::newRow("size without sense")
        << QByteArray("memory-limit = lots\n")
        << "1: field \"memory-limit\" must be a size such as 900MiB, 1.5GiB or 800MB, got 'lots'";
    QTest::newRow("multicast maybe") << QByteArray("multicast = maybe\n")
                                     << "1: field \"multicast\" must be yes or no, got 'maybe'";
    QTest::newRow("empty key file")
        << QByteArray("key-file =\n") << "1: field \"key-file\" must be a path, got ''";
    QTest::newRow("field twice") << QByteArray("port = 1\nname = a\nport = 2\n")
                                 << "3: field \"port\" was already given on line 1";
}

void TstNodeConfig::badLines()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("node.conf"));
    QVERIFY(writeFile(path, text));
    app::NodeConfig c;
    QString error;
    QVERIFY(!c.readFile(path, &error));
    QVERIFY2(error.startsWith(path + QLatin1Char(':') + message), qPrintable(error));
}

void TstNodeConfig::missingFile()
{
    app::NodeConfig c;
    QString error;
    QVERIFY(!c.readFile(QStringLiteral("/nonexistent/node.conf"), &error));
    QVERIFY2(error.contains(QLatin1String("'/nonexistent/node.conf'")), qPrintable(error));
}

void TstNodeConfig::agentTakesTheFileAndTheCommandLineWins()
{
    QTemporaryDir dir;
    const QString key = dir.filePath(QStringLiteral("cluster.key"));
    QVERIFY(writeFile(key, "a-test-key\n"));
    QVERIFY(QFile::setPermissions(key, QFile::ReadOwner | QFile::WriteOwner));
    // The file's key does not exist and its port is "any": the agent can only start with the
    // command line's key, and it listens on a port other than the default only through the file.
    const QByteArray conf = "name = conf-node\nport = 0\nmulticast = no\n"
                            "key-file = missing.key\ndiscovery-port = " +
                            QByteArray::number(40000 + QRandomGenerator::global()->bounded(20000)) +
                            "\n";
    const QString path = dir.filePath(QStringLiteral("node.conf"));
    QVERIFY(writeFile(path, conf));
    QProcess node;
    node.start(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-node"),
               {QStringLiteral("--config"), path, QStringLiteral("--key-file"), key,
                QStringLiteral("--print-port")});
    QVERIFY(node.waitForStarted(5000));
    QVERIFY2(node.waitForReadyRead(10000), node.readAllStandardError().constData());
    const uint port = node.readAllStandardOutput().trimmed().toUInt();
    node.terminate();
    QVERIFY(node.waitForFinished(5000));
    QVERIFY(port > 0);
    QVERIFY(port != app::NodeConfig::kDefaultPort);
}

void TstNodeConfig::agentRefusesABadFile()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("node.conf"));
    QVERIFY(writeFile(path, "name = n\nthreads = many\n"));
    QProcess node;
    node.start(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-node"),
               {QStringLiteral("--config"), path});
    QVERIFY(node.waitForFinished(10000));
    QCOMPARE(node.exitCode(), 2);
    const QString err = QString::fromUtf8(node.readAllStandardError());
    QVERIFY2(err.contains(path + QStringLiteral(":2: field \"threads\"")), qPrintable(err));
}

void TstNodeConfig::cameraIsAPathOrADevice()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("node.conf"));
    QVERIFY(writeFile(path, "camera = clips/door.avi\n"));
    app::NodeConfig file;
    QString error;
    QVERIFY2(file.readFile(path, &error), qPrintable(error));
    QCOMPARE(file.camera, QDir(dir.path()).filePath(QStringLiteral("clips/door.avi")));
    QVERIFY(writeFile(path, "camera = camera:0\n"));
    app::NodeConfig device;
    QVERIFY2(device.readFile(path, &error), qPrintable(error));
    QCOMPARE(device.camera, QStringLiteral("camera:0"));
    QVERIFY(app::NodeConfig().camera.isEmpty());      // no camera unless the node is given one
    QCOMPARE(app::NodeConfig().camera_rate_fps, 0.0); // a file at its own frame rate
}

void TstNodeConfig::cameraRate_data()
{
    QTest::addColumn<QByteArray>("value");
    QTest::addColumn<bool>("accepted");
    QTest::addColumn<double>("fps"); // what camera_rate_fps becomes (infinity: unpaced)
    const double unpaced = std::numeric_limits<double>::infinity();
    QTest::newRow("max: unpaced") << QByteArray("max") << true << unpaced;
    QTest::newRow("a rate") << QByteArray("12.5") << true << 12.5;
    QTest::newRow("the slowest") << QByteArray("0.1") << true << 0.1;
    QTest::newRow("zero") << QByteArray("0") << false << 0.0;
    QTest::newRow("too fast") << QByteArray("5000") << false << 0.0;
    QTest::newRow("a word") << QByteArray("fast") << false << 0.0;
    QTest::newRow("MAX is not max") << QByteArray("MAX") << false << 0.0;
}

void TstNodeConfig::cameraRate()
{
    QFETCH(QByteArray, value);
    QFETCH(bool, accepted);
    QFETCH(double, fps);
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("node.conf"));
    QVERIFY(writeFile(path, "camera = clips/door.avi\ncamera-rate = " + value + "\n"));
    app::NodeConfig c;
    QString error;
    QCOMPARE(c.readFile(path, &error), accepted);
    if (accepted) {
        QCOMPARE(c.camera_rate_fps, fps);
        return;
    }
    QCOMPARE(c.camera_rate_fps, 0.0); // a refused value leaves the file's own rate
    QVERIFY2(error.contains(QStringLiteral(":2: field \"camera-rate\" must be max or a number "
                                           "from 0.1 to 1000, got '%1'")
                                .arg(QString::fromUtf8(value))),
             qPrintable(error));
}

void TstNodeConfig::agentRefusesACameraItCannotOpen()
{
    QTemporaryDir dir;
    const QString key = dir.filePath(QStringLiteral("cluster.key"));
    QVERIFY(writeFile(key, "a-test-key\n"));
    QVERIFY(QFile::setPermissions(key, QFile::ReadOwner | QFile::WriteOwner));
    const QString missing = dir.filePath(QStringLiteral("no-such-video.avi"));
    QProcess node;
    node.start(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-node"),
               {QStringLiteral("--key-file"), key, QStringLiteral("--port"), QStringLiteral("0"),
                QStringLiteral("--no-multicast"), QStringLiteral("--camera"), missing});
    QVERIFY(node.waitForFinished(10000));
    QCOMPARE(node.exitCode(), 2);
    const QString err = QString::fromUtf8(node.readAllStandardError());
    QVERIFY2(err.contains(QLatin1String("--camera: ")) && err.contains(missing), qPrintable(err));
}

QTEST_GUILESS_MAIN(TstNodeConfig)
#include "tst_nodeconfig.moc"

// A student deployed to real edgetrain-node processes (issue #42): three nodes each run it on
// vtest.avi and report, a killed node is reported, Stop stops every node, a node that loses its
// coordinator stops after the grace period, and a node refuses a truncated, an oversized and a
// foreign file, a model whose input is not a colour frame or is huge, and one whose spec
// declares more weights than its file holds, living on to run the real student; and it refuses
// outright when it has no camera, as a node too old to know deployments does - each with a
// message that says so.

#include "../net/nodeprocess.h"
#include "app/session/deploymentrun.h"
#include "core/model.h"
#include "core/safetensors.h"
#include "core/zoo.h"
#include "net/agent/deploymenthost.h"
#include "net/protocol/controlchannel.h"
#include "net/protocol/messages/handshake.h"
#include "net/protocol/messages/nodeinfo.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"
#include "vision/framestudent.h"
#include "vision/framestudenttrainer.h"

#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <opencv2/imgcodecs.hpp>

#include <memory>

using namespace edgetrain;

namespace {

const QString kVideo = QStringLiteral("/usr/share/doc/opencv-doc/examples/data/vtest.avi");

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

bool writeAll(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

/** A node whose agent predates deployments: it proves the key and answers pings, and every
 *  other message is an unknown type to it (as protocol.h's older nodes answer). */
class OldNode : public QObject
{
public:
    explicit OldNode(QByteArray key) : m_key(std::move(key))
    {
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *socket = m_server.nextPendingConnection())
                serve(new net::ControlChannel(socket, this));
        });
        m_server.listen(QHostAddress::LocalHost);
    }
    quint16 port() const { return m_server.serverPort(); }

private:
    void serve(net::ControlChannel *channel)
    {
        auto nonces = std::make_shared<std::pair<QByteArray, QByteArray>>();
        connect(channel, &net::ControlChannel::frameReceived, this, [=, this](const net::Frame &f) {
            namespace Message = net::Message;
            if (f.type == Message::Hello) {
                nonces->first = net::Hello::fromCbor(f.body).nonce;
                nonces->second = net::randomBytes(net::Handshake::kNonceBytes);
                channel->send(
                    Message::Challenge,
                    net::Challenge{nonces->second, net::Handshake::serverProof(m_key, nonces->first,
                                                                               nonces->second)}
                        .toCbor());
            } else if (f.type == Message::Auth) {
                channel->setSessionKey(
                    net::Handshake::sessionKey(m_key, nonces->first, nonces->second));
                net::NodeInfo info;
                info.id = info.name = QStringLiteral("old-node");
                info.control_port = port();
                channel->send(Message::Welcome, info.withCapabilities());
            } else if (f.type == Message::Ping) {
                channel->send(Message::Pong, f.body);
            } else if (f.type != Message::Subscribe) {
                channel->send(
                    Message::Error,
                    net::Failure{QStringLiteral("unknown message type '%1'").arg(f.type)}.toCbor());
            }
        });
    }

    QByteArray m_key;
    QTcpServer m_server;
};

} // namespace

class TestDeployment : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanup() { m_nodes.clear(); }
    void threeNodesRunTheStudentUntilStopped();
    void aNodeThatLosesItsCoordinatorStops();
    void theNodeRefusesWhatIsNotItsModel_data();
    void theNodeRefusesWhatIsNotItsModel();
    void aNodeWithoutACameraRefuses();
    void aNodeTooOldToDeployRefuses();

private:
    /** A node on loopback; `camera`: with --camera vtest.avi. */
    NodeProcess &startNode(const QString &name, bool camera);
    app::DeploymentSetup setup(const QString &model) const;

    QTemporaryDir m_dir;
    QString m_keyFile;
    QString m_model; // a detector.safetensors as the Train step saves it
    QByteArray m_key = "deployment test key 0123456789";
    std::vector<std::unique_ptr<NodeProcess>> m_nodes;
};

void TestDeployment::initTestCase()
{
    QVERIFY(QFile::exists(kVideo));
    m_keyFile = m_dir.path() + QStringLiteral("/cluster.key");
    QVERIFY(writeAll(m_keyFile, m_key + "\n"));
    QVERIFY(QFile::setPermissions(m_keyFile, QFile::ReadOwner | QFile::WriteOwner));
    // The Train step's detector at the session's default input width, freshly initialised: what
    // travels and runs is the same file format and the same amount of work per frame as a
    // trained student's (which boxes it finds is the evaluation's business, not this test's).
    core::Model model(vision::FrameStudentTrainer::spec(cv::Size(256, 192)), 7);
    m_model = m_dir.path() + QStringLiteral("/detector.safetensors");
    vision::FrameStudent::saveModel(model, m_model.toStdString(), 0.5f);
}

NodeProcess &TestDeployment::startNode(const QString &name, bool camera)
{
    QStringList extra{QStringLiteral("--threads"), QStringLiteral("1")};
    if (camera)
        extra << QStringLiteral("--camera") << kVideo;
    m_nodes.push_back(std::make_unique<NodeProcess>(name, m_keyFile, extra));
    return *m_nodes.back();
}

app::DeploymentSetup TestDeployment::setup(const QString &model) const
{
    app::DeploymentSetup s;
    s.modelPath = model;
    s.key = m_key;
    for (const auto &n : m_nodes)
        s.nodes.append({QStringLiteral("127.0.0.1"), n->port});
    return s;
}

void TestDeployment::threeNodesRunTheStudentUntilStopped()
{
    for (int i = 0; i < 3; ++i)
        QVERIFY2(startNode(QStringLiteral("cam-%1").arg(i), true).waitReady(),
                 qPrintable(m_nodes.back()->log()));
    app::DeploymentRun run;
    std::map<QString, app::DeviceView> latest;
    connect(&run, &app::DeploymentRun::view, this,
            [&](const app::DeviceView &v) { latest[v.node] = v; });
    QSignalSpy failed(&run, &app::DeploymentRun::nodeFailed);
    QSignalSpy done(&run, &app::DeploymentRun::done);
    QElapsedTimer running;
    running.start();
    run.start(setup(m_model));

    // Every node reports frames it ran, with a picture of the latest.
    const auto reported = [&] {
        if (latest.size() != 3)
            return false;
        return std::all_of(latest.begin(), latest.end(),
                           [](const auto &v) { return v.second.frames >= 3; });
    };
    QTRY_VERIFY2_WITH_TIMEOUT(reported(), "not every node reported frames", 30000);
    for (const auto &[name, v] : latest) {
        QCOMPARE(v.source, QStringLiteral("vtest.avi"));
        QVERIFY2(v.fps > 0, qPrintable(name));
        QVERIFY(v.latencyMsP50 > 0 && v.latencyMsP95 >= v.latencyMsP50);
        QVERIFY(v.rssBytes > 0);
        QVERIFY(v.detections >= v.frameDetections);
        const std::vector<uchar> bytes(v.jpeg.begin(), v.jpeg.end());
        const cv::Mat image = cv::imdecode(bytes, cv::IMREAD_COLOR);
        QVERIFY2(!image.empty(), qPrintable(name + QStringLiteral(": the JPEG does not decode")));
        QVERIFY(image.cols <= 320 && image.cols >= 300); // vtest.avi is 768 px wide
        QCOMPARE(image.rows, 240);
    }
    QCOMPARE(failed.size(), 0);
    // Past a node's silence limit, the run's pings keep every deployment with its session.
    const qint64 silence_ms = net::DeploymentOptions().owner_silence.count();
    QTest::qWait(int(std::max<qint64>(0, silence_ms + 2000 - running.elapsed())));
    for (const auto &node : m_nodes)
        QVERIFY2(!node->log().contains(QLatin1String("has sent nothing")), qPrintable(node->log()));
    QCOMPARE(failed.size(), 0);

    // A node killed: the run says which, and the others go on.
    m_nodes[1]->kill();
    QTRY_COMPARE_WITH_TIMEOUT(failed.size(), 1, 10000);
    QCOMPARE(failed[0][0].toString(), QStringLiteral("cam-1"));
    QVERIFY2(failed[0][1].toString().contains(QLatin1String("dropped out")),
             qPrintable(failed[0][1].toString()));
    const std::int64_t before = latest[QStringLiteral("cam-0")].frames;
    QTRY_VERIFY_WITH_TIMEOUT(latest[QStringLiteral("cam-0")].frames > before, 5000);

    // Stop: every node left stops and says so; the run ends once, cancelled.
    const qsizetype mark0 = m_nodes[0]->logMark(), mark2 = m_nodes[2]->logMark();
    run.stop();
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 10000);
    const auto outcome = done[0][0].value<app::DeploymentOutcome>();
    QVERIFY(outcome.ok);
    QVERIFY(outcome.cancelled);
    QCOMPARE(outcome.last.size(), std::size_t(3));
    QCOMPARE(outcome.nodeErrors.size(), std::size_t(1));
    QVERIFY(outcome.nodeErrors.count(QStringLiteral("cam-1")));
    for (const auto &[node, mark] : {std::pair{m_nodes[0].get(), mark0}, {m_nodes[2].get(), mark2}})
        QVERIFY2(node->logSince(mark).contains(QLatin1String("asked to stop")),
                 qPrintable(node->logSince(mark)));
    QTest::qWait(200);
    QCOMPARE(done.size(), 1);
}

void TestDeployment::aNodeThatLosesItsCoordinatorStops()
{
    NodeProcess &node = startNode(QStringLiteral("cam-lost"), true);
    QVERIFY2(node.waitReady(), qPrintable(node.log()));
    auto run = std::make_unique<app::DeploymentRun>();
    QSignalSpy views(run.get(), &app::DeploymentRun::view);
    app::DeploymentSetup s = setup(m_model);
    s.graceSeconds = 1.0;
    run->start(s);
    QTRY_VERIFY_WITH_TIMEOUT(views.size() >= 1, 20000);
    // The coordinator vanishes without a word (its connections close).
    run.reset();
    QTRY_VERIFY2_WITH_TIMEOUT(node.log().contains(QLatin1String("stops: its session is gone")),
                              qPrintable(node.log()), 10000);
    QVERIFY(node.log().contains(QLatin1String("lost its session")));
}

void TestDeployment::theNodeRefusesWhatIsNotItsModel_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("message");
    QTest::newRow("truncated") << QStringLiteral("truncated")
                               << QStringLiteral("not a model this node can run");
    QTest::newRow("oversized") << QStringLiteral("oversized")
                               << QStringLiteral("more than this node takes (64.0 MiB)");
    QTest::newRow("foreign") << QStringLiteral("foreign")
                             << QStringLiteral("not a model this node can run");
    QTest::newRow("not a detector") << QStringLiteral("classifier") << QStringLiteral("centernet");
    // Hostile models: each would once have overrun a buffer, taken gigabytes or crashed the node.
    QTest::newRow("one channel") << QStringLiteral("grey")
                                 << QStringLiteral("a full-frame detector takes a colour frame");
    QTest::newRow("a huge input") << QStringLiteral("huge")
                                  << QStringLiteral("larger than this node runs");
    QTest::newRow("more weights than the file holds")
        << QStringLiteral("bloated") << QStringLiteral("of weights, the file holds");
}

void TestDeployment::theNodeRefusesWhatIsNotItsModel()
{
    QFETCH(QString, kind);
    QFETCH(QString, message);
    const QString path = m_dir.path() + QStringLiteral("/%1.safetensors").arg(kind);
    const QByteArray model = readAll(m_model);
    if (kind == QLatin1String("truncated")) {
        QVERIFY(writeAll(path, model.left(model.size() / 2)));
    } else if (kind == QLatin1String("oversized")) {
        QByteArray big = model;
        big.append(QByteArray((qint64(64) << 20) + 1 - model.size(), '\0'));
        QVERIFY(writeAll(path, big));
    } else if (kind == QLatin1String("foreign")) {
        QVERIFY(writeAll(path, readAll(m_keyFile).repeated(100)));
    } else if (kind == QLatin1String("grey") || kind == QLatin1String("huge")) {
        // The detector's chain at another input: its weights do not depend on the input size.
        const core::Shape input =
            kind == QLatin1String("grey") ? core::Shape{1, 192, 256} : core::Shape{3, 8192, 8192};
        core::Model odd(core::Zoo::spec("detector").withInputShape(input), 1);
        vision::FrameStudent::saveModel(odd, path.toStdString(), 0.5f);
    } else if (kind == QLatin1String("bloated")) {
        // The student's weights under a spec that declares about 600 MiB of them.
        core::Safetensors file = core::Safetensors::read(m_model.toStdString());
        file.metadata()["edgetrain.model_spec"] =
            R"({"name": "bloated", "input": [3, 64, 64], "loss": {"type": "centernet"},
                "stages": [{"type": "conv2d", "out_channels": 4096, "kernel": 3, "stride": 4,
                            "padding": 1},
                           {"type": "conv2d", "out_channels": 4096, "kernel": 3, "padding": 1},
                           {"type": "conv2d", "out_channels": 5, "kernel": 1}]})";
        file.write(path.toStdString());
    } else {
        core::Model mlp(core::Zoo::spec("mlp"), 1); // a model, but a classifier
        vision::FrameStudent::saveModel(mlp, path.toStdString(), 0.5f);
    }
    NodeProcess &node = startNode(QStringLiteral("cam-check"), true);
    QVERIFY2(node.waitReady(), qPrintable(node.log()));
    app::DeploymentRun run;
    QSignalSpy failed(&run, &app::DeploymentRun::nodeFailed);
    QSignalSpy done(&run, &app::DeploymentRun::done);
    run.start(setup(path));
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 20000);
    QCOMPARE(failed.size(), 1);
    QCOMPARE(failed[0][0].toString(), QStringLiteral("cam-check"));
    const QString said = failed[0][1].toString();
    QVERIFY2(said.startsWith(QLatin1String("refused the student: ")) && said.contains(message),
             qPrintable(said));
    QVERIFY2(!said.contains(QLatin1String("/tmp")), qPrintable(said)); // the node's paths stay
    const auto outcome = done[0][0].value<app::DeploymentOutcome>();
    QVERIFY(!outcome.ok);
    QVERIFY2(outcome.error.contains(message), qPrintable(outcome.error));
    QVERIFY(!node.log().contains(QLatin1String("runs on")));
    // The node lives on and takes the real student.
    app::DeploymentRun again;
    QSignalSpy views(&again, &app::DeploymentRun::view);
    again.start(setup(m_model));
    QTRY_VERIFY2_WITH_TIMEOUT(views.size() >= 1, qPrintable(node.log()), 20000);
    again.stop();
}

void TestDeployment::aNodeWithoutACameraRefuses()
{
    NodeProcess &node = startNode(QStringLiteral("no-camera"), false);
    QVERIFY2(node.waitReady(), qPrintable(node.log()));
    app::DeploymentRun run;
    QSignalSpy failed(&run, &app::DeploymentRun::nodeFailed);
    QSignalSpy done(&run, &app::DeploymentRun::done);
    run.start(setup(m_model));
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 20000);
    QCOMPARE(failed.size(), 1);
    QVERIFY2(failed[0][1].toString().contains(QLatin1String("this node has no camera")),
             qPrintable(failed[0][1].toString()));
    QVERIFY(!done[0][0].value<app::DeploymentOutcome>().ok);
}

void TestDeployment::aNodeTooOldToDeployRefuses()
{
    OldNode old(m_key);
    QVERIFY(old.port() != 0);
    app::DeploymentRun run;
    QSignalSpy failed(&run, &app::DeploymentRun::nodeFailed);
    QSignalSpy done(&run, &app::DeploymentRun::done);
    app::DeploymentSetup s = setup(m_model);
    s.nodes = {{QStringLiteral("127.0.0.1"), old.port()}};
    run.start(s);
    QTRY_COMPARE_WITH_TIMEOUT(done.size(), 1, 10000);
    QCOMPARE(failed.size(), 1);
    QCOMPARE(failed[0][0].toString(), QStringLiteral("old-node"));
    QVERIFY2(failed[0][1].toString().contains(
                 QLatin1String("this node's agent is too old to run a student")),
             qPrintable(failed[0][1].toString()));
    QVERIFY(!done[0][0].value<app::DeploymentOutcome>().ok);
}

QTEST_GUILESS_MAIN(TestDeployment)
#include "tst_deployment.moc"

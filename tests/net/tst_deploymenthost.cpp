// The node's side of a deployment (net::DeploymentHost inside a NodeServer on loopback), with a
// scripted camera in place of OpenCV: the model's checks in the order they are made, the
// reports' figures, the stop, a camera that gives out (or a model that throws), a training job
// refused while a model runs, a deployment that outlives its coordinator (gone or silent) by the
// grace period and no longer, the node's cap on that period, a deployment whose coordinator is
// gone stopped by another, and the node's one upload at a time, dropped when left idle.

#include "core/fashionmnist.h"
#include "core/zoo.h"
#include "net/agent/nodeserver.h"
#include "net/protocol/controlclient.h"
#include "net/protocol/messages/deploymessages.h"
#include "net/protocol/messages/jobspec.h"
#include "net/protocol/messages/workermessages.h"
#include "net/protocol/protocol.h"

#include <QCryptographicHash>
#include <QElapsedTimer>
#include <QFile>
#include <QRandomGenerator>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

#include <atomic>
#include <thread>

using namespace edgetrain::net;

namespace {

const QByteArray kModel = QByteArray("MODEL").repeated(40); // 200 bytes

/** Frames every 5 ms, each taking 2 ms; gives out after `frames` (-1: never), by saying so or,
 *  with `throws`, by throwing as a model that breaks does. */
class ScriptedInference : public Inference
{
public:
    ScriptedInference(int frames, bool throws) : m_left(frames), m_throws(throws) {}
    bool step(InferenceFrame *frame, QString *error) override
    {
        if (m_left == 0 && m_throws)
            throw std::runtime_error("the model read past its input");
        if (m_left == 0) {
            *error = QStringLiteral("the camera was unplugged");
            return false;
        }
        if (m_left > 0)
            --m_left;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        frame->latency_ms = 2.0;
        frame->detections = 3;
        return true;
    }
    QByteArray snapshot() override { return QByteArrayLiteral("jpeg"); }

private:
    int m_left;
    bool m_throws;
};

class ScriptedCamera : public InferenceSource
{
public:
    QString name() const override { return QStringLiteral("scripted"); }
    std::unique_ptr<Inference> open(const QByteArray &model) override
    {
        if (!model.startsWith("MODEL"))
            throw std::runtime_error("not a model this node can run");
        return std::make_unique<ScriptedInference>(framesBeforeFailure, failureThrows);
    }
    std::atomic<int> framesBeforeFailure{-1};
    std::atomic<bool> failureThrows{false};
};

/** The model as chunks of `chunkBytes`, with the whole file's size and hash. */
std::vector<DeployModel> chunksOf(const QByteArray &file, qsizetype chunkBytes,
                                  const QString &id = QStringLiteral("d1"))
{
    std::vector<DeployModel> chunks;
    const qint64 total = std::max<qint64>(1, (file.size() + chunkBytes - 1) / chunkBytes);
    for (qint64 i = 0; i < total; ++i)
        chunks.push_back({id, i, total, file.size(),
                          QCryptographicHash::hash(file, QCryptographicHash::Sha256),
                          file.mid(i * chunkBytes, chunkBytes)});
    return chunks;
}

} // namespace

class TestDeploymentHost : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void messagesRoundTrip();
    void theModelIsCheckedBeforeItRuns_data();
    void theModelIsCheckedBeforeItRuns();
    void runsReportsAndStops();
    void aCameraThatGivesOutEndsTheRun_data();
    void aCameraThatGivesOutEndsTheRun();
    void theGracePeriodThenANewCoordinator();
    void aSilentCoordinatorCountsAsGone();
    void theGracePeriodIsCapped();
    void anyoneStopsAnOrphanedDeployment();
    void oneUploadAtATime();
    void anIdleUploadIsDropped();
    void aTrainingJobKeepsTheModelOut();

private:
    /** A node server on loopback with the test's camera and `options`. */
    void startServer(const DeploymentOptions &options);
    static DeploymentOptions testOptions();
    /** Sends the model under `id` and starts it with `grace_ms`. */
    static void deploy(ControlClient &client, const QString &id, qint64 grace_ms);
    /** Asks the node for a training job and returns its refusal: kBusy while a model runs. */
    QString jobRefusal(ControlClient &client, std::vector<Frame> &frames);
    static constexpr QLatin1String kBusy{"busy running a deployed model"};

    /** A connected, authenticated client; its messages land in `frames`. */
    std::unique_ptr<ControlClient> connectClient(std::vector<Frame> *frames);
    static int count(const std::vector<Frame> &frames, QLatin1String type);
    static QString lastMessage(const std::vector<Frame> &frames, QLatin1String type);

    QByteArray m_key = "deployment host test key";
    std::shared_ptr<ScriptedCamera> m_camera;
    std::unique_ptr<NodeServer> m_server;
};

DeploymentOptions TestDeploymentHost::testOptions()
{
    DeploymentOptions o;
    o.max_model_bytes = 1000;
    o.report_interval = std::chrono::milliseconds(100);
    // The test's clients do not ping: only the silence test hears them fall silent.
    o.owner_silence = std::chrono::minutes(10);
    return o;
}

void TestDeploymentHost::init()
{
    startServer(testOptions());
}

void TestDeploymentHost::startServer(const DeploymentOptions &options)
{
    m_server.reset();
    m_camera = std::make_shared<ScriptedCamera>();
    NodeOptions o;
    o.name = QStringLiteral("host");
    o.cluster_key = m_key;
    o.multicast = false;
    o.discovery_port = quint16(40000 + QRandomGenerator::global()->bounded(20000));
    o.camera = m_camera;
    o.deployment = options;
    m_server = std::make_unique<NodeServer>(o);
    QString error;
    QVERIFY2(m_server->start(&error), qPrintable(error));
}

void TestDeploymentHost::deploy(ControlClient &client, const QString &id, qint64 grace_ms)
{
    for (const DeployModel &c : chunksOf(kModel, 1000, id))
        client.send(Message::DeployModel, c.toCbor());
    client.send(Message::DeployStart, DeployStart{id, grace_ms}.toCbor());
}

QString TestDeploymentHost::jobRefusal(ControlClient &client, std::vector<Frame> &frames)
{
    const int before = count(frames, Message::JobRefused);
    client.send(Message::Job, QCborMap());
    if (!QTest::qWaitFor([&] { return count(frames, Message::JobRefused) > before; }, 5000))
        return QStringLiteral("(no answer)");
    return lastMessage(frames, Message::JobRefused);
}

void TestDeploymentHost::cleanup()
{
    m_server.reset();
}

std::unique_ptr<ControlClient> TestDeploymentHost::connectClient(std::vector<Frame> *frames)
{
    auto client = std::make_unique<ControlClient>(QStringLiteral("127.0.0.1"),
                                                  m_server->info().control_port, m_key);
    connect(client.get(), &ControlClient::message, this,
            [frames](const Frame &f) { frames->push_back(f); });
    QSignalSpy ready(client.get(), &ControlClient::ready);
    client->connectToNode();
    if (!ready.wait(5000))
        return nullptr;
    return client;
}

int TestDeploymentHost::count(const std::vector<Frame> &frames, QLatin1String type)
{
    return int(std::count_if(frames.begin(), frames.end(),
                             [type](const Frame &f) { return f.type == type; }));
}

QString TestDeploymentHost::lastMessage(const std::vector<Frame> &frames, QLatin1String type)
{
    for (auto it = frames.rbegin(); it != frames.rend(); ++it)
        if (it->type == type)
            return Failure::fromCbor(it->body).message;
    return {};
}

void TestDeploymentHost::messagesRoundTrip()
{
    QString error;
    const DeployModel chunk = chunksOf(kModel, 64).at(1);
    QCOMPARE(DeployModel::fromCbor(chunk.toCbor(), &error).value(), chunk);
    DeployReport report{
        QStringLiteral("vtest.avi"), "jpeg", 2, 40, 90, 9.5, 12.0, 20.0, 80.0, 1 << 20};
    QCOMPARE(DeployReport::fromCbor(report.toCbor(), &error).value(), report);
    const DeployStart start{QStringLiteral("d1"), 2500};
    QCOMPARE(DeployStart::fromCbor(start.toCbor(), &error).value(), start);
    // A chunk past the end, and a report without its frames, are refused with their field.
    DeployModel past = chunk;
    past.index = past.total;
    QVERIFY(!DeployModel::fromCbor(past.toCbor(), &error));
    QVERIFY2(error.contains(QLatin1String("does not exist")), qPrintable(error));
    QCborMap body = report.toCbor();
    body.remove(QStringLiteral("frames"));
    QVERIFY(!DeployReport::fromCbor(body, &error));
    QVERIFY2(error.startsWith(QLatin1String("deploy_report: ")) &&
                 error.contains(QLatin1String("frames")),
             qPrintable(error));
}

void TestDeploymentHost::theModelIsCheckedBeforeItRuns_data()
{
    QTest::addColumn<QString>("damage");
    QTest::addColumn<QString>("message");
    QTest::newRow("oversized") << "oversized"
                               << "more than this node takes";
    QTest::newRow("a chunk missing") << "missing"
                                     << "does not follow chunk 0";
    QTest::newRow("damaged on the way") << "damaged"
                                        << "SHA-256 does not match";
    QTest::newRow("shorter than it said") << "short"
                                          << "truncated: 150 of its 200 bytes";
    QTest::newRow("not a model") << "foreign"
                                 << "not a model this node can run";
    QTest::newRow("started before it arrived") << "unsent"
                                               << "has not arrived whole";
}

void TestDeploymentHost::theModelIsCheckedBeforeItRuns()
{
    QFETCH(QString, damage);
    QFETCH(QString, message);
    std::vector<Frame> frames;
    auto client = connectClient(&frames);
    QVERIFY(client);
    QByteArray file = damage == QLatin1String("foreign") ? QByteArray(200, 'x') : kModel;
    if (damage == QLatin1String("oversized"))
        file = kModel.repeated(6); // 1200 bytes, the limit is 1000
    std::vector<DeployModel> chunks = chunksOf(file, 50);
    if (damage == QLatin1String("missing"))
        chunks.erase(chunks.begin() + 1);
    if (damage == QLatin1String("damaged"))
        chunks[2].data[7] = '!';
    if (damage == QLatin1String("short"))
        chunks.pop_back();
    if (damage == QLatin1String("short")) // the last chunk that came says it is the last
        for (DeployModel &c : chunks)
            c.total = qint64(chunks.size());
    if (damage != QLatin1String("unsent"))
        for (const DeployModel &c : chunks)
            client->send(Message::DeployModel, c.toCbor());
    client->send(Message::DeployStart, DeployStart{QStringLiteral("d1"), 1000}.toCbor());
    QTRY_VERIFY_WITH_TIMEOUT(count(frames, Message::DeployRefused) >= 1, 5000);
    QTest::qWait(100); // anything more it would send
    // The first refusal says what is wrong with the file (the start then finds no model).
    const auto first = std::find_if(frames.begin(), frames.end(), [](const Frame &f) {
        return f.type == Message::DeployRefused;
    });
    const QString said = Failure::fromCbor(first->body).message;
    QVERIFY2(said.contains(message), qPrintable(said));
    QCOMPARE(count(frames, Message::DeployAccepted), 0);
    // One refusal for the file, one for the start that found no model.
    QVERIFY(count(frames, Message::DeployRefused) <= 2);
}

void TestDeploymentHost::runsReportsAndStops()
{
    std::vector<Frame> frames;
    auto client = connectClient(&frames);
    QVERIFY(client);
    for (const DeployModel &c : chunksOf(kModel, 64))
        client->send(Message::DeployModel, c.toCbor());
    client->send(Message::DeployStart, DeployStart{QStringLiteral("d1"), 1000}.toCbor());
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::DeployAccepted), 1, 5000);
    QString error;
    const auto accepted = DeployAccepted::fromCbor(frames[frames.size() - 1].body, &error);
    QVERIFY2(accepted, qPrintable(error));
    QCOMPARE(accepted->source, QStringLiteral("scripted"));
    QTRY_VERIFY_WITH_TIMEOUT(count(frames, Message::DeployReport) >= 3, 5000);
    const Frame &last = *std::find_if(frames.rbegin(), frames.rend(), [](const Frame &f) {
        return f.type == Message::DeployReport;
    });
    const auto report = DeployReport::fromCbor(last.body, &error);
    QVERIFY2(report, qPrintable(error));
    QCOMPARE(report->source, QStringLiteral("scripted"));
    QCOMPARE(report->jpeg, QByteArrayLiteral("jpeg"));
    QCOMPARE(report->latency_ms_p50, 2.0);
    QCOMPARE(report->latency_ms_p95, 2.0);
    QCOMPARE(report->detections, 3 * report->frames);
    QVERIFY2(report->fps > 20 && report->fps < 250, qPrintable(QString::number(report->fps)));
    QVERIFY(report->rss_bytes > 0);

    // A training job is refused while the model runs.
    client->send(Message::Job, QCborMap());
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::JobRefused), 1, 5000);
    QCOMPARE(lastMessage(frames, Message::JobRefused),
             QStringLiteral("busy running a deployed model"));

    client->send(Message::DeployStop);
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::DeployStopped), 1, 5000);
    const int reports = count(frames, Message::DeployReport);
    QTest::qWait(300);
    QCOMPARE(count(frames, Message::DeployReport), reports);
}

void TestDeploymentHost::aCameraThatGivesOutEndsTheRun_data()
{
    QTest::addColumn<bool>("throws");
    QTest::addColumn<QString>("message");
    QTest::newRow("the camera says so") << false << "the camera was unplugged";
    QTest::newRow("the model throws") << true << "the model read past its input";
}

void TestDeploymentHost::aCameraThatGivesOutEndsTheRun()
{
    QFETCH(bool, throws);
    QFETCH(QString, message);
    m_camera->framesBeforeFailure = 10;
    m_camera->failureThrows = throws;
    std::vector<Frame> frames;
    auto client = connectClient(&frames);
    QVERIFY(client);
    for (const DeployModel &c : chunksOf(kModel, 1000))
        client->send(Message::DeployModel, c.toCbor());
    client->send(Message::DeployStart, DeployStart{QStringLiteral("d1"), 1000}.toCbor());
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::DeployFailed), 1, 5000);
    QCOMPARE(lastMessage(frames, Message::DeployFailed), message);
    // The node is alive and free again.
    client->send(Message::Job, QCborMap());
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::JobRefused), 1, 5000);
    QVERIFY(lastMessage(frames, Message::JobRefused) !=
            QLatin1String("busy running a deployed model"));
}

void TestDeploymentHost::theGracePeriodThenANewCoordinator()
{
    // Long enough that a loaded machine answers well within it; every wait is measured from it.
    constexpr qint64 grace_ms = 3000;
    std::vector<Frame> first;
    auto client = connectClient(&first);
    QVERIFY(client);
    deploy(*client, QStringLiteral("d1"), grace_ms);
    QTRY_COMPARE_WITH_TIMEOUT(count(first, Message::DeployAccepted), 1, 5000);
    std::vector<Frame> second;
    auto other = connectClient(&second);
    QVERIFY(other);
    // While the first coordinator is there, its deployment is not taken from it.
    deploy(*other, QStringLiteral("d2"), grace_ms);
    QTRY_COMPARE_WITH_TIMEOUT(count(second, Message::DeployRefused), 1, 5000);
    QVERIFY(lastMessage(second, Message::DeployRefused).contains(QLatin1String("busy running")));
    // Gone: the model runs on within the grace period, and stops after it.
    QElapsedTimer sinceGone;
    sinceGone.start();
    client->close();
    client.reset();
    QCOMPARE(jobRefusal(*other, second), kBusy);
    QVERIFY2(sinceGone.elapsed() < grace_ms, "the machine is too slow to tell");
    QTRY_VERIFY_WITH_TIMEOUT(jobRefusal(*other, second) != kBusy, grace_ms + 10000);
    QVERIFY(sinceGone.elapsed() >= grace_ms);
    // And the node takes a new deployment.
    deploy(*other, QStringLiteral("d2"), grace_ms);
    QTRY_COMPARE_WITH_TIMEOUT(count(second, Message::DeployAccepted), 1, 5000);
}

void TestDeploymentHost::aSilentCoordinatorCountsAsGone()
{
    DeploymentOptions options = testOptions();
    options.owner_silence = std::chrono::milliseconds(1000);
    startServer(options);
    std::vector<Frame> first, second;
    auto client = connectClient(&first);
    auto other = connectClient(&second);
    QVERIFY(client && other);
    deploy(*client, QStringLiteral("d1"), 2000);
    QTRY_COMPARE_WITH_TIMEOUT(count(first, Message::DeployAccepted), 1, 5000);
    // A coordinator that pings keeps its deployment past the silence limit, its connection open.
    QTimer ping;
    connect(&ping, &QTimer::timeout, client.get(), [&] { client->send(Message::Ping); });
    ping.start(200);
    QTest::qWait(2500);
    QCOMPARE(jobRefusal(*other, second), kBusy);
    // Silent (as over a link that died without a FIN): the grace period starts and runs out.
    ping.stop();
    QTRY_VERIFY_WITH_TIMEOUT(jobRefusal(*other, second) != kBusy, 15000);
    QCOMPARE(count(first, Message::DeployStopped), 0);
}

void TestDeploymentHost::theGracePeriodIsCapped()
{
    DeploymentOptions options = testOptions();
    options.max_grace = std::chrono::milliseconds(1000);
    startServer(options);
    std::vector<Frame> first, second;
    auto client = connectClient(&first);
    auto other = connectClient(&second);
    QVERIFY(client && other);
    deploy(*client, QStringLiteral("d1"),
           qint64(24) * 3600 * 1000); // a day, as the coordinator may ask
    QTRY_COMPARE_WITH_TIMEOUT(count(first, Message::DeployAccepted), 1, 5000);
    client->close();
    QTRY_VERIFY_WITH_TIMEOUT(jobRefusal(*other, second) != kBusy, 15000);
}

void TestDeploymentHost::anyoneStopsAnOrphanedDeployment()
{
    std::vector<Frame> first, second;
    auto client = connectClient(&first);
    auto other = connectClient(&second);
    QVERIFY(client && other);
    // Nothing runs: nothing stopped, and the node says so.
    other->send(Message::DeployStop);
    QTRY_COMPARE_WITH_TIMEOUT(count(second, Message::Error), 1, 5000);
    QVERIFY2(lastMessage(second, Message::Error).contains(QLatin1String("nothing to stop")),
             qPrintable(lastMessage(second, Message::Error)));
    deploy(*client, QStringLiteral("d1"), 60000);
    QTRY_COMPARE_WITH_TIMEOUT(count(first, Message::DeployAccepted), 1, 5000);
    // Another session does not stop a deployment whose own session is there...
    other->send(Message::DeployStop);
    QTRY_COMPARE_WITH_TIMEOUT(count(second, Message::DeployRefused), 1, 5000);
    QVERIFY2(lastMessage(second, Message::DeployRefused)
                 .contains(QLatin1String("only that session stops it")),
             qPrintable(lastMessage(second, Message::DeployRefused)));
    QCOMPARE(jobRefusal(*other, second), kBusy);
    // ...but stops it once that session is gone, without waiting out the grace period.
    client->close();
    const auto stops = [&] {
        other->send(Message::DeployStop);
        return QTest::qWaitFor([&] { return count(second, Message::DeployStopped) == 1; }, 500);
    };
    QTRY_VERIFY_WITH_TIMEOUT(stops(), 10000);
    QVERIFY(jobRefusal(*other, second) != kBusy);
    QCOMPARE(count(second, Message::DeployStopped), 1);
}

void TestDeploymentHost::oneUploadAtATime()
{
    std::vector<Frame> first, second;
    auto client = connectClient(&first);
    auto other = connectClient(&second);
    QVERIFY(client && other);
    for (const DeployModel &c : chunksOf(kModel, 1000, QStringLiteral("d1")))
        client->send(Message::DeployModel, c.toCbor());
    QTest::qWait(200); // d1 has arrived whole
    // A newer upload replaces it: d1's start finds no model, d2 runs.
    deploy(*other, QStringLiteral("d2"), 1000);
    QTRY_COMPARE_WITH_TIMEOUT(count(second, Message::DeployAccepted), 1, 5000);
    client->send(Message::DeployStart, DeployStart{QStringLiteral("d1"), 1000}.toCbor());
    QTRY_COMPARE_WITH_TIMEOUT(count(first, Message::DeployRefused), 1, 5000);
    QVERIFY2(lastMessage(first, Message::DeployRefused).contains(QLatin1String("busy running")),
             qPrintable(lastMessage(first, Message::DeployRefused)));
    other->send(Message::DeployStop);
    QTRY_COMPARE_WITH_TIMEOUT(count(second, Message::DeployStopped), 1, 5000);
    client->send(Message::DeployStart, DeployStart{QStringLiteral("d1"), 1000}.toCbor());
    QTRY_COMPARE_WITH_TIMEOUT(count(first, Message::DeployRefused), 2, 5000);
    QVERIFY2(lastMessage(first, Message::DeployRefused).contains(QLatin1String("not arrived")),
             qPrintable(lastMessage(first, Message::DeployRefused)));
    QCOMPARE(count(first, Message::DeployAccepted), 0);
}

void TestDeploymentHost::anIdleUploadIsDropped()
{
    DeploymentOptions options = testOptions();
    options.upload_timeout = std::chrono::milliseconds(500);
    startServer(options);
    std::vector<Frame> frames;
    auto client = connectClient(&frames);
    QVERIFY(client);
    for (const DeployModel &c : chunksOf(kModel, 1000))
        client->send(Message::DeployModel, c.toCbor());
    QTest::qWait(1500);
    client->send(Message::DeployStart, DeployStart{QStringLiteral("d1"), 1000}.toCbor());
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::DeployRefused), 1, 5000);
    QVERIFY2(lastMessage(frames, Message::DeployRefused).contains(QLatin1String("not arrived")),
             qPrintable(lastMessage(frames, Message::DeployRefused)));
    // Sent again and started at once, it runs.
    deploy(*client, QStringLiteral("d1"), 1000);
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::DeployAccepted), 1, 5000);
}

void TestDeploymentHost::aTrainingJobKeepsTheModelOut()
{
    if (!QFile::exists(QStringLiteral("%1/train-images-idx3-ubyte.gz")
                           .arg(edgetrain::core::FashionMnist::kDefaultDirectory)))
        QSKIP("needs Fashion-MNIST (Debian's dataset-fashion-mnist)");
    std::vector<Frame> frames;
    auto client = connectClient(&frames);
    QVERIFY(client);
    // A job that loads, profiles and then waits for its coordinator's start: it holds the node.
    JobSpec job;
    job.id = QStringLiteral("holds-the-node");
    job.model = edgetrain::core::Zoo::resolve("lenet5").toJson();
    job.train_limit = 256;
    job.test_limit = 64;
    client->send(Message::Job, job.toCbor());
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::JobAccepted), 1, 5000);
    for (const DeployModel &c : chunksOf(kModel, 1000))
        client->send(Message::DeployModel, c.toCbor());
    client->send(Message::DeployStart, DeployStart{QStringLiteral("d1"), 1000}.toCbor());
    QTRY_COMPARE_WITH_TIMEOUT(count(frames, Message::DeployRefused), 1, 5000);
    QCOMPARE(lastMessage(frames, Message::DeployRefused),
             QStringLiteral("busy with training job 'holds-the-node'"));
    QCOMPARE(count(frames, Message::DeployAccepted), 0);
}

QTEST_GUILESS_MAIN(TestDeploymentHost)
#include "tst_deploymenthost.moc"

// `edgetrain-cli deploy` (issue #42): a session's student on real nodes, reported per node in
// --json (the same bytes under a comma-decimal locale), nodes that refuse named with their
// reason, Ctrl-C ending the run with every node stopped, and a run no node takes failing.

#include "../net/nodeprocess.h"
#include "core/model.h"
#include "vision/framestudent.h"
#include "vision/framestudenttrainer.h"
#include "vision/studentteacher.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <memory>

using namespace edgetrain;

namespace {

const QString kVideo = QStringLiteral("/usr/share/doc/opencv-doc/examples/data/vtest.avi");

struct Run
{
    int status = -1;
    QString err;
    QJsonObject json; // the last stdout line, parsed strictly
};

/** Waits for a started edgetrain-cli and reads what it printed. */
Run finish(QProcess &p)
{
    Run r;
    if (!p.waitForFinished(120000))
        return r;
    r.status = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.err = QString::fromUtf8(p.readAllStandardError());
    const QString out = QString::fromUtf8(p.readAllStandardOutput()).trimmed();
    r.json = QJsonDocument::fromJson(out.split(QLatin1Char('\n')).last().toUtf8()).object();
    return r;
}

} // namespace

class TestDeployCli : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void cleanup() { m_nodes.clear(); }
    void jsonPerNode();
    void ctrlCStopsEveryNode();
    void failsWhenNoNodeRunsIt();

private:
    NodeProcess &startNode(const QString &name, bool camera);
    /** edgetrain-cli deploy on the nodes started so far, under a comma-decimal locale. */
    void startDeploy(QProcess &p, const QStringList &extra);

    QTemporaryDir m_dir;
    QString m_keyFile, m_session;
    std::vector<std::unique_ptr<NodeProcess>> m_nodes;
};

void TestDeployCli::initTestCase()
{
    QVERIFY(QFile::exists(kVideo));
    m_keyFile = m_dir.path() + QStringLiteral("/cluster.key");
    QFile key(m_keyFile);
    QVERIFY(key.open(QIODevice::WriteOnly));
    key.write("deploy cli test key 0123456789\n");
    key.close();
    QVERIFY(key.setPermissions(QFile::ReadOwner | QFile::WriteOwner));
    // A session holding the Train step's detector, freshly initialised (what runs per frame is
    // the same work as a trained one's).
    m_session = m_dir.path() + QStringLiteral("/session");
    QVERIFY(QDir().mkpath(m_session));
    core::Model model(vision::FrameStudentTrainer::spec(cv::Size(256, 192)), 3);
    vision::FrameStudent::saveModel(
        model, vision::StudentTeacher::weightsPath(m_session.toStdString()), 0.5f);
}

NodeProcess &TestDeployCli::startNode(const QString &name, bool camera)
{
    QStringList extra{QStringLiteral("--threads"), QStringLiteral("1")};
    if (camera)
        extra << QStringLiteral("--camera") << kVideo;
    m_nodes.push_back(std::make_unique<NodeProcess>(name, m_keyFile, extra));
    return *m_nodes.back();
}

void TestDeployCli::startDeploy(QProcess &p, const QStringList &extra)
{
    QStringList nodes;
    for (const auto &n : m_nodes)
        nodes << QStringLiteral("127.0.0.1:%1").arg(n->port);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("LANG"), QStringLiteral("de_DE.UTF-8"));
    env.insert(QStringLiteral("LC_ALL"), QStringLiteral("de_DE.UTF-8"));
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-cli"),
            QStringList{QStringLiteral("deploy"), QStringLiteral("--session"), m_session,
                        QStringLiteral("--nodes"), nodes.join(QLatin1Char(',')),
                        QStringLiteral("--key-file"), m_keyFile, QStringLiteral("--json")} +
                extra);
}

void TestDeployCli::jsonPerNode()
{
    QVERIFY(startNode(QStringLiteral("cam-b"), true).waitReady());
    QVERIFY(startNode(QStringLiteral("cam-a"), true).waitReady());
    QVERIFY(startNode(QStringLiteral("blind"), false).waitReady());
    QProcess p;
    startDeploy(p, {});
    // Until each camera node has reported, however long a loaded machine takes; then Ctrl-C.
    // The figures are written with a point under the comma-decimal locale too.
    QByteArray progress;
    const auto reported = [&](const char *node) {
        return QRegularExpression(QStringLiteral("%1 [0-9]+\\.[0-9] fps p50 [0-9]+\\.[0-9] ms")
                                      .arg(QLatin1String(node)))
            .match(QString::fromUtf8(progress))
            .hasMatch();
    };
    QTRY_VERIFY2_WITH_TIMEOUT((progress += p.readAllStandardError(), reported("cam-a")) &&
                                  reported("cam-b"),
                              progress.constData(), 30000);
    ::kill(pid_t(p.processId()), SIGINT);
    Run r = finish(p);
    r.err.prepend(QString::fromUtf8(progress));
    QVERIFY2(r.status == 0, qPrintable(r.err));
    QCOMPARE(r.json.value(QStringLiteral("command")).toString(), QStringLiteral("deploy"));
    const QJsonArray nodes = r.json.value(QStringLiteral("nodes")).toArray();
    QCOMPARE(nodes.size(), 3);
    // By name, the same order every run.
    QCOMPARE(nodes[0].toObject().value(QStringLiteral("name")).toString(), QStringLiteral("blind"));
    QCOMPARE(nodes[1].toObject().value(QStringLiteral("name")).toString(), QStringLiteral("cam-a"));
    QCOMPARE(nodes[2].toObject().value(QStringLiteral("name")).toString(), QStringLiteral("cam-b"));
    const QJsonObject blind = nodes[0].toObject();
    QVERIFY2(blind.value(QStringLiteral("error"))
                 .toString()
                 .contains(QLatin1String("this node has no camera")),
             qPrintable(blind.value(QStringLiteral("error")).toString()));
    QCOMPARE(blind.value(QStringLiteral("frames")).toInt(-1), 0);
    for (int i = 1; i < 3; ++i) {
        const QJsonObject n = nodes[i].toObject();
        QVERIFY2(!n.contains(QStringLiteral("error")), qPrintable(r.err));
        QCOMPARE(n.value(QStringLiteral("source")).toString(), QStringLiteral("vtest.avi"));
        QVERIFY(n.value(QStringLiteral("fps")).toDouble() > 0);
        QVERIFY(n.value(QStringLiteral("frames")).toInteger() > 0);
        QVERIFY(n.value(QStringLiteral("detections")).isDouble());
        const double p50 = n.value(QStringLiteral("latency_ms_p50")).toDouble();
        QVERIFY(p50 > 0 && n.value(QStringLiteral("latency_ms_p95")).toDouble() >= p50);
    }
    // Progress while it ran, and the refusal named on stderr.
    QVERIFY2(r.err.contains(QLatin1String("cam-a ")) && r.err.contains(QLatin1String(" fps p50 ")),
             qPrintable(r.err));
    QVERIFY2(r.err.contains(QLatin1String("blind: refused the student")), qPrintable(r.err));
    for (int i = 0; i < 2; ++i)
        QTRY_VERIFY_WITH_TIMEOUT(m_nodes[i]->log().contains(QLatin1String("asked to stop")), 5000);
}

void TestDeployCli::ctrlCStopsEveryNode()
{
    QVERIFY(startNode(QStringLiteral("cam-1"), true).waitReady());
    QVERIFY(startNode(QStringLiteral("cam-2"), true).waitReady());
    QProcess p;
    startDeploy(p, {});
    QByteArray err;
    QTRY_VERIFY_WITH_TIMEOUT((err += p.readAllStandardError()).contains(" fps p50 "), 20000);
    ::kill(pid_t(p.processId()), SIGINT);
    const Run r = finish(p);
    QVERIFY2(r.status == 0, qPrintable(QString::fromUtf8(err) + r.err));
    QCOMPARE(r.json.value(QStringLiteral("nodes")).toArray().size(), 2);
    for (const auto &node : m_nodes)
        QTRY_VERIFY2_WITH_TIMEOUT(node->log().contains(QLatin1String("asked to stop")),
                                  qPrintable(node->log()), 5000);
}

void TestDeployCli::failsWhenNoNodeRunsIt()
{
    QVERIFY(startNode(QStringLiteral("blind"), false).waitReady());
    QProcess p;
    startDeploy(p, {QStringLiteral("--duration"), QStringLiteral("3s")});
    const Run r = finish(p);
    QCOMPARE(r.status, 1);
    QVERIFY2(r.json.value(QStringLiteral("error"))
                 .toString()
                 .contains(
                     QLatin1String("no node runs the student: blind refused the student: this node "
                                   "has no camera")),
             qPrintable(r.err));
}

QTEST_GUILESS_MAIN(TestDeployCli)
#include "tst_deploycli.moc"

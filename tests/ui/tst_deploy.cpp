// The window's Deploy step with real edgetrain-node processes on 127.0.0.1, each with vtest.avi
// as its camera: the grid fills with the devices' live frames and figures, a killed node is
// marked on its tile, Stop stops every node, a node refusing a bad model says why on its tile,
// and the report gains its Deploy page. QT_QPA_PLATFORM=offscreen; with
// EDGETRAIN_SCREENSHOTS=DIR set, the window is saved as DIR/deploy-<n>-<what>.png and the report
// as DIR/deploy-report.pdf.

#include "../support/pdfinfo.h"
#include "core/safetensors.h"
#include "nodeprocess.h"
#include "ui/deploypage.h"
#include "ui/devicetile.h"
#include "ui/mainwindow.h"
#include "ui/reportwriter.h"
#include "vision/framestudenttrainer.h"
#include "vision/studentteacher.h"

#include <QApplication>
#include <QLabel>
#include <QProcess>
#include <QPushButton>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace edgetrain;

namespace {

const QString kVideo = QStringLiteral("/usr/share/doc/opencv-doc/examples/data/vtest.avi");
constexpr int kNodes = 3;

QString nodeName(int i)
{
    return QStringLiteral("deploy-node-%1").arg(i);
}

using tests::pdfPages;

} // namespace

class TstDeploy : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void disabledWithoutStudentOrNodes();
    void gridFillsLive();
    void killedNodeIsMarked();
    void stopStopsEveryNode();
    void reportHasDeployPage();
    void refusedModelIsShown_data();
    void refusedModelIsShown();

private:
    /** The page's Deploy clicked; true once every tile named in `nodes` shows `reports`. */
    void deployAndWait(const QStringList &nodes, int reports);
    void screenshot(const QString &name);
    ui::DeployPage *page() const { return m_window->deployPage(); }

    QTemporaryDir m_dir;
    QString m_keyFile, m_model;
    std::vector<std::unique_ptr<NodeProcess>> m_nodes;
    std::unique_ptr<app::Workflow> m_workflow;
    std::unique_ptr<ui::MainWindow> m_window;
    int m_shot = 0;
};

void TstDeploy::initTestCase()
{
    QVERIFY2(QFileInfo::exists(kVideo), "vtest.avi is missing (Debian package opencv-doc)");
    QVERIFY(m_dir.isValid());
    m_keyFile = m_dir.filePath(QStringLiteral("cluster.key"));
    QFile key(m_keyFile);
    QVERIFY(key.open(QIODevice::WriteOnly));
    key.write("deploy test cluster key 0123456789\n");
    key.close();
    QFile::setPermissions(m_keyFile, QFile::ReadOwner | QFile::WriteOwner);
    for (int i = 1; i <= kNodes; ++i) {
        m_nodes.push_back(std::make_unique<NodeProcess>(
            nodeName(i), m_keyFile,
            QStringList{QStringLiteral("--threads"), QStringLiteral("1"),
                        QStringLiteral("--camera"), kVideo}));
        QVERIFY2(m_nodes.back()->waitReady(), qPrintable(m_nodes.back()->log()));
    }
    m_workflow = std::make_unique<app::Workflow>();
    QString error;
    const QString session = m_dir.filePath(QStringLiteral("session"));
    QVERIFY2(m_workflow->newSession(session, &error), qPrintable(error));
    m_model = QString::fromStdString(vision::StudentTeacher::weightsPath(session.toStdString()));
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->resize(1366, 768);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    m_window->showStep(ui::MainWindow::Deploy);
}

void TstDeploy::deployAndWait(const QStringList &nodes, int reports)
{
    QVERIFY2(page()->deployButton()->isEnabled(), qPrintable(page()->reasonLabel()->text()));
    QTest::mouseClick(page()->deployButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(m_workflow->isDeploying(), 5000);
    for (const QString &node : nodes) {
        QTRY_VERIFY_WITH_TIMEOUT(page()->tile(node) && page()->tile(node)->reports() >= reports,
                                 30000);
    }
}

void TstDeploy::screenshot(const QString &name)
{
    const QString dir = qEnvironmentVariable("EDGETRAIN_SCREENSHOTS");
    if (dir.isEmpty())
        return;
    QDir().mkpath(dir);
    QTest::qWait(300);
    m_window->grab().save(QStringLiteral("%1/deploy-%2-%3.png").arg(dir).arg(++m_shot).arg(name));
}

void TstDeploy::disabledWithoutStudentOrNodes()
{
    // No student yet: the button is off and says to train first.
    QVERIFY(!page()->deployButton()->isEnabled());
    QVERIFY2(page()->reasonLabel()->text().contains(QLatin1String("train")),
             qPrintable(page()->reasonLabel()->text()));
    // An untrained student of the demo's input is enough for the devices to run.
    core::Model model(vision::FrameStudentTrainer::spec(cv::Size(256, 192)), 7);
    core::Safetensors::saveModel(model, m_model.toStdString());
    // Coming back to the step, the page sees it.
    m_window->showStep(ui::MainWindow::Report);
    m_window->showStep(ui::MainWindow::Deploy);
    // The student is there; no cluster key, no paired node yet.
    QVERIFY(!page()->deployButton()->isEnabled());
    QVERIFY2(page()->reasonLabel()->text().contains(QLatin1String("key")),
             qPrintable(page()->reasonLabel()->text()));
    QString error;
    QVERIFY2(m_workflow->nodes().setKeyFile(m_keyFile, &error), qPrintable(error));
    QTRY_VERIFY(page()->reasonLabel()->text().contains(QLatin1String("pair")));
    QVERIFY(!page()->deployButton()->isEnabled());
    for (const auto &n : m_nodes)
        QVERIFY2(m_workflow->nodes().addProbe(QStringLiteral("127.0.0.1:%1").arg(n->discoveryPort),
                                              &error),
                 qPrintable(error));
    QTRY_COMPARE_WITH_TIMEOUT(int(m_workflow->nodes().all().size()), kNodes, 5000);
    m_workflow->nodes().pairAll();
    QTRY_COMPARE_WITH_TIMEOUT(m_workflow->nodes().pairedNodes().size(), kNodes, 5000);
    QTRY_VERIFY(page()->deployButton()->isEnabled());
    QVERIFY(page()->reasonLabel()->text().isEmpty());
}

void TstDeploy::gridFillsLive()
{
    const QStringList names{nodeName(1), nodeName(2), nodeName(3)};
    deployAndWait(names, 2);
    if (QTest::currentTestFailed())
        return;
    QCOMPARE(page()->tileCount(), kNodes);
    QVERIFY(!page()->deployButton()->isEnabled());
    QVERIFY(page()->stopButton()->isEnabled());
    for (const QString &node : names) {
        const ui::DeviceTile *t = page()->tile(node);
        // The node's frame, decoded, with its figures under it.
        QVERIFY2(t->hasFrame(), qPrintable(node));
        QVERIFY(t->frame().width() > 0 && t->frame().width() <= 320);
        QVERIFY2(t->figures().contains(QLatin1String("frames/s")), qPrintable(t->figures()));
        QVERIFY2(t->figures().contains(QLatin1String("p50")), qPrintable(t->figures()));
        QVERIFY(!t->failed());
    }
    QVERIFY2(page()->summaryLabel()->text().startsWith(QLatin1String("3 of 3")),
             qPrintable(page()->summaryLabel()->text()));
    screenshot(QStringLiteral("grid"));
}

void TstDeploy::killedNodeIsMarked()
{
    if (!m_workflow->isDeploying())
        QSKIP("needs the deployment gridFillsLive starts");
    const ui::DeviceTile *killed = page()->tile(nodeName(3));
    QVERIFY(killed);
    m_nodes[2]->kill();
    QTRY_VERIFY_WITH_TIMEOUT(killed->failed(), 20000);
    QVERIFY(!killed->failure().isEmpty());
    // The others go on.
    const int before = page()->tile(nodeName(1))->reports();
    QTRY_VERIFY_WITH_TIMEOUT(page()->tile(nodeName(1))->reports() > before, 10000);
    QVERIFY(!page()->tile(nodeName(1))->failed());
    QVERIFY(!page()->tile(nodeName(2))->failed());
    QVERIFY2(page()->summaryLabel()->text().contains(QLatin1String("1 out of the run")),
             qPrintable(page()->summaryLabel()->text()));
    screenshot(QStringLiteral("killed"));
}

void TstDeploy::stopStopsEveryNode()
{
    if (!m_workflow->isDeploying())
        QSKIP("needs the deployment gridFillsLive starts");
    std::vector<qsizetype> marks;
    for (int i = 0; i < 2; ++i)
        marks.push_back(m_nodes[std::size_t(i)]->logMark());
    QSignalSpy finished(m_workflow.get(), &app::Workflow::taskFinished);
    QTest::mouseClick(page()->stopButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(!m_workflow->isDeploying(), 15000);
    // Each node that ran was told, and says so in its log.
    for (int i = 0; i < 2; ++i)
        QTRY_VERIFY2_WITH_TIMEOUT(m_nodes[std::size_t(i)]
                                      ->logSince(marks[std::size_t(i)])
                                      .contains(QLatin1String("asked to stop")),
                                  qPrintable(m_nodes[std::size_t(i)]->log()), 5000);
    // No report comes after the stop.
    const int reports = page()->tile(nodeName(1))->reports();
    QTest::qWait(2500);
    QCOMPARE(page()->tile(nodeName(1))->reports(), reports);
    QVERIFY(page()->deployButton()->isEnabled());
    QVERIFY(!page()->stopButton()->isEnabled());
    // The session keeps each device's last report and frame.
    const auto &d = m_workflow->session().deployment;
    QVERIFY(d.has_value());
    QVERIFY(d->stopped);
    QCOMPARE(int(d->devices.size()), kNodes);
    for (const app::DeploymentRecord::Device &v : d->devices) {
        if (v.node == nodeName(3)) {
            QVERIFY(!v.error.isEmpty());
            continue;
        }
        QVERIFY2(v.frames > 0 && v.fps > 0 && v.latencyMsP95 >= v.latencyMsP50, qPrintable(v.node));
        QVERIFY2(!QImage(m_workflow->session().path(v.frame)).isNull(), qPrintable(v.frame));
    }
    // Saved and read back: the page shows the record after the session is opened again.
    QString error;
    QVERIFY2(m_workflow->save(&error), qPrintable(error));
    QVERIFY2(m_workflow->openSession(m_workflow->session().dir, &error), qPrintable(error));
    QVERIFY(m_workflow->session().deployment.has_value());
    QCOMPARE(page()->tileCount(), kNodes);
    QVERIFY(page()->tile(nodeName(1))->hasFrame());
    QVERIFY(page()->tile(nodeName(3))->failed());
    QVERIFY2(page()->summaryLabel()->text().startsWith(QLatin1String("Last deployment")),
             qPrintable(page()->summaryLabel()->text()));
}

void TstDeploy::reportHasDeployPage()
{
    const app::Session &s = m_workflow->session();
    if (!s.deployment)
        QSKIP("needs the deployment stopStopsEveryNode records");
    ui::ReportContent c;
    c.session = &s;
    const QString out = m_dir.filePath(QStringLiteral("report"));
    QStringList written;
    QString error;
    QVERIFY2(ui::ReportWriter::exportAll(out, c, &written, &error), qPrintable(error));
    QCOMPARE(ui::ReportWriter::pages(s), ui::ReportWriter::kPages + 1);
    if (const QString shots = qEnvironmentVariable("EDGETRAIN_SCREENSHOTS"); !shots.isEmpty()) {
        QFile::remove(shots + QStringLiteral("/deploy-report.pdf"));
        QFile::copy(out + QStringLiteral("/report.pdf"),
                    shots + QStringLiteral("/deploy-report.pdf"));
    }
    const int pages = pdfPages(out + QStringLiteral("/report.pdf"));
    if (pages < 0)
        QSKIP("pdfinfo (poppler-utils) is not installed");
    QCOMPARE(pages, ui::ReportWriter::kPages + 1);
    QFile csv(out + QStringLiteral("/deployment.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = csv.readAll().trimmed().split('\n');
    QCOMPARE(int(lines.size()), 1 + kNodes);
    for (int i = 1; i <= kNodes; ++i)
        QVERIFY2(std::any_of(
                     lines.begin() + 1, lines.end(),
                     [&](const QByteArray &l) { return l.startsWith(nodeName(i).toUtf8() + ','); }),
                 qPrintable(nodeName(i)));
}

void TstDeploy::refusedModelIsShown_data()
{
    QTest::addColumn<QByteArray>("content");
    QFile f(m_model);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray model = f.readAll();
    QTest::newRow("truncated") << model.left(model.size() / 2);
    QTest::newRow("not a model") << QByteArray("these are not the weights you are looking for\n");
    QTest::newRow("oversized") << model + QByteArray(qsizetype(65) << 20, '\0');
}

void TstDeploy::refusedModelIsShown()
{
    QFETCH(QByteArray, content);
    QFile f(m_model);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray good = f.readAll();
    f.close();
    const auto restore = qScopeGuard([&] {
        QFile w(m_model);
        if (w.open(QIODevice::WriteOnly))
            w.write(good);
    });
    QFile bad(m_model);
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(content);
    bad.close();
    QTRY_VERIFY_WITH_TIMEOUT(page()->deployButton()->isEnabled(), 10000);
    QSignalSpy finished(m_workflow.get(), &app::Workflow::taskFinished);
    QTest::mouseClick(page()->deployButton(), Qt::LeftButton);
    // Every device still up says why on its tile, and the run ends without any having run the
    // student.
    for (int i = 1; i <= 2; ++i) {
        QTRY_VERIFY_WITH_TIMEOUT(page()->tile(nodeName(i)) && page()->tile(nodeName(i))->failed(),
                                 20000);
        QVERIFY(!page()->tile(nodeName(i))->failure().isEmpty());
        QCOMPARE(page()->tile(nodeName(i))->reports(), 0);
    }
    QTRY_VERIFY_WITH_TIMEOUT(!m_workflow->isDeploying(), 15000);
    qInfo("%s: %s", QTest::currentDataTag(), qPrintable(page()->tile(nodeName(1))->failure()));
    screenshot(QString::fromLatin1(QTest::currentDataTag()).replace(u' ', u'-'));
}

QTEST_MAIN(TstDeploy)
#include "tst_deploy.moc"

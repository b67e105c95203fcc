// The window before a session (the start page and what its buttons do) and the Nodes page's
// cluster key: a new key, its fingerprint, the commands that set up a device. No nodes, no video.
// Settings go to QStandardPaths' test folders, never the user's. With EDGETRAIN_SCREENSHOTS=DIR
// set, the start page, the Nodes page and the setup dialog are saved there too.
#include "../support/files.h"
#include "net/protocol/keyfile.h"
#include "nodeprocess.h"
#include "ui/devicesetupdialog.h"
#include "ui/mainwindow.h"
#include "ui/nodespage.h"
#include "ui/startpage.h"

#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFileDialog>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <deque>
#include <functional>
using namespace edgetrain;
using edgetrain::tests::contents;
using edgetrain::tests::modeOf;

namespace {

/**
 * Answers the modal dialogs the next click opens, one answer each, in order: the click blocks
 * in the dialog's own event loop, where a timer finds the dialog and answers it. Gives up after
 * 60 s (the click then blocks until the test times out, which says as much).
 */
void answerDialogs(std::deque<std::function<void(QWidget *)>> answers)
{
    auto *timer = new QTimer(qApp);
    auto *waited = new QElapsedTimer;
    waited->start();
    timer->setInterval(50);
    QObject::connect(timer, &QTimer::timeout, qApp, [timer, waited, answers]() mutable {
        QWidget *dialog = QApplication::activeModalWidget();
        if (dialog && dialog->isVisible() && !answers.empty()) {
            auto answer = answers.front();
            answers.pop_front();
            answer(dialog);
        }
        if (answers.empty() || waited->elapsed() > 60000) {
            timer->stop();
            timer->deleteLater();
            delete waited;
        }
    });
    timer->start();
}

/** An answer for a file dialog: chooses `path` and accepts. */
std::function<void(QWidget *)> choose(const QString &path)
{
    return [path](QWidget *w) {
        auto *dialog = qobject_cast<QFileDialog *>(w);
        if (!dialog) {
            w->close();
            return;
        }
        if (dialog->fileMode() == QFileDialog::Directory) {
            dialog->setDirectory(path); // accepted with no name typed: this folder
        } else {
            dialog->setDirectory(QFileInfo(path).absolutePath());
            dialog->selectFile(path);
        }
        static_cast<QDialog *>(dialog)->accept(); // QFileDialog's own is protected
    };
}

/** An answer for a message box: presses `button`. */
std::function<void(QWidget *)> press(QMessageBox::StandardButton button)
{
    return [button](QWidget *w) {
        if (auto *box = qobject_cast<QMessageBox *>(w))
            box->button(button)->click();
        else
            w->close();
    };
}

} // namespace

class TestFirstRun : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void startPageWithoutSession();
    void recentSessionOpens();
    void newSessionFromTheStartPage();
    void demoAndRehearsalFromTheStartPage();
    void newClusterKeyOnTheNodesPage();
    void setupDialogShowsTheCommandsAndFingerprint();
    void nodesTableComparesKeys();
    void actionsHaveIcons();
    void geometryIsKept();

private:
    void screenshot(QWidget *widget, const QString &name);
    /** A window on a fresh session (the start page is behind it). */
    void openWindowOnSession();

    QTemporaryDir m_dir;
    std::unique_ptr<app::Workflow> m_workflow;
    std::unique_ptr<ui::MainWindow> m_window;
    int m_session = 0;
};

void TestFirstRun::initTestCase()
{
    QVERIFY(m_dir.isValid());
    QVERIFY(QStandardPaths::isTestModeEnabled());
    QSettings().clear(); // what an earlier run of this suite left
}

void TestFirstRun::init()
{
    m_window.reset();
    m_workflow = std::make_unique<app::Workflow>();
}

void TestFirstRun::screenshot(QWidget *widget, const QString &name)
{
    const QString dir = qEnvironmentVariable("EDGETRAIN_SCREENSHOTS");
    if (dir.isEmpty())
        return;
    QDir().mkpath(dir);
    QTest::qWait(300); // let it paint
    widget->grab().save(QStringLiteral("%1/%2.png").arg(dir, name));
}

void TestFirstRun::openWindowOnSession()
{
    const QString dir = m_dir.filePath(QStringLiteral("session-%1").arg(++m_session));
    QString error;
    QVERIFY2(m_workflow->newSession(dir, &error), qPrintable(error));
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->resize(1366, 768);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QVERIFY(!m_window->showsStartPage());
}

void TestFirstRun::startPageWithoutSession()
{
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->resize(1366, 768);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QVERIFY(m_window->showsStartPage());
    QVERIFY(m_window->startPage()->isVisible());
    QVERIFY(!m_window->nodesPage()->isVisible());
    for (const char *name : {"newSession", "openSession", "runDemo", "rehearse"}) {
        auto *button = m_window->startPage()->findChild<QPushButton *>(QLatin1String(name));
        QVERIFY2(button && button->isVisible() && button->isEnabled(), name);
        QVERIFY2(!button->icon().isNull(), name);
    }
    // No recent sessions yet: the list says so and nothing can be opened from it.
    QListWidget *recent = m_window->startPage()->recentList();
    QCOMPARE(recent->count(), 1);
    QCOMPARE(recent->item(0)->text(), QStringLiteral("(none yet)"));
    QVERIFY(!m_window->startPage()
                 ->findChild<QPushButton *>(QStringLiteral("openRecent"))
                 ->isEnabled());
    screenshot(m_window.get(), QStringLiteral("start-page"));
}

void TestFirstRun::recentSessionOpens()
{
    // A session made earlier, and one whose folder is gone since: only the first is offered.
    const QString dir = m_dir.filePath(QStringLiteral("earlier"));
    {
        app::Workflow earlier;
        QString error;
        QVERIFY2(earlier.newSession(dir, &error), qPrintable(error));
        earlier.setTitle(QStringLiteral("the earlier session"));
        QVERIFY2(earlier.save(&error), qPrintable(error));
    }
    QSettings().setValue(QStringLiteral("recentSessions"),
                         QStringList{dir, m_dir.filePath(QStringLiteral("gone"))});
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->show();
    QListWidget *recent = m_window->startPage()->recentList();
    QCOMPARE(recent->count(), 1);
    QVERIFY(recent->item(0)->text().contains(dir));
    QCOMPARE(ui::MainWindow::recentSessions(), QStringList{dir});
    screenshot(m_window.get(), QStringLiteral("start-page-recent"));
    m_window->startPage()->findChild<QPushButton *>(QStringLiteral("openRecent"))->click();
    QCOMPARE(m_workflow->session().dir, dir);
    QCOMPARE(m_workflow->session().title, QStringLiteral("the earlier session"));
    QVERIFY(!m_window->showsStartPage());
    QVERIFY(m_window->nodesPage()->isVisible());
}

void TestFirstRun::newSessionFromTheStartPage()
{
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->show();
    QVERIFY(m_window->showsStartPage());
    const QString dir = m_dir.filePath(QStringLiteral("sessions/new-one"));
    QVERIFY(QDir().mkpath(dir));
    answerDialogs({choose(dir)});
    m_window->startPage()->findChild<QPushButton *>(QStringLiteral("newSession"))->click();
    QCOMPARE(m_workflow->session().dir, dir);
    QVERIFY(!m_window->showsStartPage());
    QCOMPARE(ui::MainWindow::recentSessions().value(0), dir);
    // The next dialog opens where this session was made.
    QCOMPARE(QSettings().value(QStringLiteral("folders/sessions")).toString(),
             m_dir.filePath(QStringLiteral("sessions")));
}

void TestFirstRun::demoAndRehearsalFromTheStartPage()
{
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->show();
    // The demo is the program's to start (its nodes live next to the executable): asked for.
    QSignalSpy demo(m_window.get(), &ui::MainWindow::demoRequested);
    m_window->startPage()->findChild<QPushButton *>(QStringLiteral("runDemo"))->click();
    QCOMPARE(demo.count(), 1);

    // A rehearsal: a new session, the Nodes step, an edge lab of the page's devices starting
    // (cancelled here: the lab itself is tst_gui's and tst_edgelab's).
    app::LabControl &lab = m_workflow->lab();
    lab.setFolder(m_dir.filePath(QStringLiteral("lab")));
    lab.setNodeProgram(QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-node"));
    m_window->nodesPage()
        ->findChild<QLineEdit *>(QStringLiteral("labDevices"))
        ->setText(QStringLiteral("pi3:1"));
    const QString dir = m_dir.filePath(QStringLiteral("rehearsal"));
    QVERIFY(QDir().mkpath(dir));
    answerDialogs({choose(dir)});
    m_window->startPage()->findChild<QPushButton *>(QStringLiteral("rehearse"))->click();
    QCOMPARE(m_workflow->session().dir, dir);
    QVERIFY(!m_window->showsStartPage());
    QCOMPARE(m_window->currentStep(), ui::MainWindow::Nodes);
    QVERIFY(lab.busy() || lab.isUp());
    QCOMPARE(QSettings().value(QStringLiteral("rehearsal/devices")).toString(),
             QStringLiteral("pi3:1"));
    if (lab.busy()) {
        // The page says a cancelled start failed, in a message box: closed when it shows.
        answerDialogs({press(QMessageBox::Ok)});
        lab.cancel();
    }
    QTRY_VERIFY_WITH_TIMEOUT(!lab.busy(), 60000);
    if (lab.isUp()) {
        lab.stop();
        QTRY_VERIFY_WITH_TIMEOUT(!lab.busy() && !lab.isUp(), 60000);
    }
}

void TestFirstRun::newClusterKeyOnTheNodesPage()
{
    openWindowOnSession();
    if (QTest::currentTestFailed())
        return;
    ui::NodesPage *page = m_window->nodesPage();
    auto *fingerprint = page->findChild<QLabel *>(QStringLiteral("keyFingerprint"));
    auto *newKey = page->findChild<QPushButton *>(QStringLiteral("newKey"));
    QVERIFY(fingerprint && newKey);
    QVERIFY2(fingerprint->text().contains(QLatin1String("no cluster key")),
             qPrintable(fingerprint->text()));

    // A new key: written 0600, loaded, its fingerprint shown; the key itself never.
    const QString path = m_dir.filePath(QStringLiteral("keys/cluster.key"));
    QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
    answerDialogs({choose(path)});
    newKey->click();
    QVERIFY(QFileInfo::exists(path));
    QCOMPARE(modeOf(path), 0600);
    QByteArray key;
    QString error;
    QVERIFY2(net::readKeyFile(path, &key, &error), qPrintable(error));
    const QString first = net::keyFingerprint(key);
    QCOMPARE(fingerprint->text(), first);
    QCOMPARE(m_workflow->nodes().keyFingerprint(), first);
    QCOMPARE(m_workflow->session().keyFile, path);
    QCOMPARE(page->findChild<QLineEdit *>(QStringLiteral("keyFile"))->text(), path);
    QVERIFY(!fingerprint->text().contains(QString::fromLatin1(key)));
    screenshot(m_window.get(), QStringLiteral("nodes-new-key"));

    // The same file again: the user is asked first, and Cancel leaves the key as it was.
    answerDialogs({choose(path), press(QMessageBox::Cancel)});
    newKey->click();
    QCOMPARE(contents(path).trimmed(), key);
    QCOMPARE(fingerprint->text(), first);
    // Yes replaces it: another key, another fingerprint, still 0600.
    answerDialogs({choose(path), press(QMessageBox::Yes)});
    newKey->click();
    QVERIFY(contents(path).trimmed() != key);
    QCOMPARE(modeOf(path), 0600);
    QVERIFY(fingerprint->text() != first);
    QVERIFY2(net::readKeyFile(path, &key, &error), qPrintable(error));
    QCOMPARE(fingerprint->text(), net::keyFingerprint(key));
}

void TestFirstRun::setupDialogShowsTheCommandsAndFingerprint()
{
    openWindowOnSession();
    if (QTest::currentTestFailed())
        return;
    const QString path = m_dir.filePath(QStringLiteral("setup.key"));
    QString error;
    QVERIFY2(m_workflow->nodes().newKeyFile(path, net::ExistingKey::Refuse, &error),
             qPrintable(error));
    QByteArray key;
    QVERIFY2(net::readKeyFile(path, &key, &error), qPrintable(error));
    const QString fingerprint = net::keyFingerprint(key);
    m_window->showStep(ui::MainWindow::Nodes);
    QCOMPARE(m_window->nodesPage()->findChild<QLabel *>(QStringLiteral("keyFingerprint"))->text(),
             fingerprint);
    QCOMPARE(m_window->nodesPage()->findChild<QLineEdit *>(QStringLiteral("keyFile"))->text(),
             path);
    screenshot(m_window.get(), QStringLiteral("nodes-fingerprint"));

    // Opened without a nested event loop: the test goes on while it shows.
    m_window->nodesPage()->findChild<QPushButton *>(QStringLiteral("setupDevice"))->click();
    auto *dialog = m_window->findChild<ui::DeviceSetupDialog *>();
    QVERIFY(dialog);
    QTRY_VERIFY(dialog->isVisible());
    const QString text =
        dialog->findChild<QPlainTextEdit *>(QStringLiteral("setupCommands"))->toPlainText();
    QCOMPARE(text, dialog->text());
    for (const QString &expected :
         {fingerprint,
          QStringLiteral("sudo apt install ./edgetrain-node_" EDGETRAIN_VERSION "_arm64.deb"),
          QStringLiteral("sudo install -m 600 -o edgetrain -g edgetrain cluster.key "
                         "/etc/edgetrain/cluster.key"),
          QStringLiteral("sudo systemctl enable --now edgetrain-node"),
          QStringLiteral("| sha256sum | cut -c1-32"),
          QStringLiteral("journalctl -u edgetrain-node"),
          QStringLiteral("scp ") + path + QStringLiteral(" pi@DEVICE:cluster.key")})
        QVERIFY2(text.contains(expected), qPrintable(expected + QStringLiteral("\n---\n") + text));
    QVERIFY(!text.contains(QString::fromLatin1(key)));
    screenshot(dialog, QStringLiteral("setup-device-dialog"));

    auto *copy = dialog->findChild<QPushButton *>(QStringLiteral("copyCommands"));
    QVERIFY(copy);
    QGuiApplication::clipboard()->clear();
    copy->click();
    QCOMPARE(QGuiApplication::clipboard()->text(), text);
    dialog->reject();
    QTRY_VERIFY(!m_window->findChild<ui::DeviceSetupDialog *>()); // deleted on close

    // Without a key the dialog says to make one first, and shows no fingerprint line.
    const QString bare = ui::DeviceSetupDialog::instructions(QString(), QString());
    QVERIFY(bare.contains(QLatin1String("New cluster key")));
    QVERIFY(bare.contains(QLatin1String("sudo systemctl enable --now edgetrain-node")));
    QVERIFY(!bare.contains(QLatin1String("key fingerprint /etc")));
    // A key file whose name needs quoting for the shell gets it.
    QVERIFY(
        ui::DeviceSetupDialog::instructions(QStringLiteral("/tmp/my keys/it's.key"), fingerprint)
            .contains(QStringLiteral("scp '/tmp/my keys/it'\\''s.key' pi@DEVICE:cluster.key")));
}

void TestFirstRun::nodesTableComparesKeys()
{
    // A node says its key's fingerprint when it is discovered: the table compares it with the
    // app's before any pairing.
    openWindowOnSession();
    if (QTest::currentTestFailed())
        return;
    QString error;
    const QString nodeKey = m_dir.filePath(QStringLiteral("node.key"));
    const QString otherKey = m_dir.filePath(QStringLiteral("other.key"));
    QVERIFY2(net::writeNewKeyFile(nodeKey, &error), qPrintable(error));
    QVERIFY2(net::writeNewKeyFile(otherKey, &error), qPrintable(error));
    NodeProcess node(QStringLiteral("keyed-node"), nodeKey);
    QVERIFY2(node.waitReady(), qPrintable(node.log()));
    app::NodeRegistry &nodes = m_workflow->nodes();
    QVERIFY2(nodes.setKeyFile(otherKey, &error), qPrintable(error));
    QVERIFY2(nodes.addProbe(QStringLiteral("127.0.0.1:%1").arg(node.discoveryPort), &error),
             qPrintable(error));
    QTableWidget *table = m_window->nodesPage()->table();
    int keyColumn = -1;
    for (int c = 0; c < table->columnCount(); ++c)
        if (table->horizontalHeaderItem(c)->text() == QLatin1String("Key"))
            keyColumn = c;
    QVERIFY(keyColumn >= 0);
    QTRY_COMPARE_WITH_TIMEOUT(table->rowCount(), 1, 5000);
    QByteArray key;
    QVERIFY2(net::readKeyFile(nodeKey, &key, &error), qPrintable(error));
    const QString fingerprint = net::keyFingerprint(key);
    QTRY_COMPARE(table->item(0, keyColumn)->text(),
                 QStringLiteral("other key (%1…)").arg(fingerprint.left(9)));
    QCOMPARE(table->item(0, keyColumn)->toolTip(), fingerprint);
    QVERIFY2(nodes.setKeyFile(nodeKey, &error), qPrintable(error));
    QCOMPARE(table->item(0, keyColumn)->text(), QStringLiteral("same key"));
    screenshot(m_window.get(), QStringLiteral("nodes-key-column"));
}

void TestFirstRun::actionsHaveIcons()
{
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    QVERIFY(QFile::exists(QStringLiteral(":/icons/new-key.svg")));
    int actions = 0;
    for (QAction *menu : m_window->menuBar()->actions())
        for (QAction *action : menu->menu()->actions()) {
            if (action->isSeparator())
                continue;
            ++actions;
            QVERIFY2(!action->icon().isNull(), qPrintable(action->text()));
        }
    QVERIFY(actions >= 14); // Session (6), Go (7), Help (1)
    for (const char *name : {"newKey", "setupDevice", "labButton"})
        QVERIFY2(
            !m_window->nodesPage()->findChild<QPushButton *>(QLatin1String(name))->icon().isNull(),
            name);
}

void TestFirstRun::geometryIsKept()
{
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    const QSize size(1400, 820); // more than the pages' minimum
    m_window->resize(size);
    QTRY_COMPARE(m_window->size(), size);
    QVERIFY(m_window->close());
    QVERIFY(QSettings().contains(QStringLiteral("window/geometry")));
    m_window = std::make_unique<ui::MainWindow>(m_workflow.get());
    QCOMPARE(m_window->size(), size);
}

int main(int argc, char **argv)
{
    QStandardPaths::setTestModeEnabled(true); // before anything reads a setting
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("EdgeTrain"));
    QApplication::setApplicationName(QStringLiteral("tst_firstrun"));
    QApplication::setAttribute(Qt::AA_DontUseNativeDialogs); // Qt's own dialogs, answerable
    app.setAttribute(Qt::AA_Use96Dpi, true);
    TestFirstRun test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "tst_firstrun.moc"

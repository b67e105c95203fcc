// edgetrain: the desktop app. `edgetrain [SESSION]` opens the window (on its start page without a
// session); `edgetrain --demo` opens it on a ready demo session with three local nodes;
// `--demo --headless --out DIR` runs that session without a window and writes the report.
#include "demo.h"
#include "demomaterial.h"
#include "ui/mainwindow.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QIcon>
#include <QLoggingCategory>
#include <QMessageBox>
#include <QScreen>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>

namespace {

bool hasDisplay()
{
    return !qEnvironmentVariableIsEmpty("DISPLAY") ||
           !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
           !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

void addOptions(QCommandLineParser &parser)
{
    parser.setApplicationDescription(QStringLiteral(
        "EdgeTrain: train a student detector for one camera on the edge devices next to it."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("session"),
                                 QStringLiteral("A session folder to open."),
                                 QStringLiteral("[SESSION]"));
    parser.addOption(
        {QStringLiteral("demo"),
         QStringLiteral("Start local nodes and open a ready demo session on the material "
                        "demo.json names (vtest.avi, the HOG + motion teacher).")});
    parser.addOption(
        {QStringLiteral("headless"),
         QStringLiteral(
             "With --demo: run the whole session without a window and write the report.")});
    parser.addOption(
        {QStringLiteral("out"),
         QStringLiteral("With --demo: the folder for the session, the nodes' logs and the report."),
         QStringLiteral("DIR"), QStringLiteral("edgetrain-demo")});
    parser.addOption(
        {QStringLiteral("autorun"),
         QStringLiteral(
             "With --demo: the window runs the whole session by itself, step by step.")});
    parser.addOption(
        {QStringLiteral("screenshots"),
         QStringLiteral(
             "With --autorun: save the window after each step as DIR/<n>-<step>.png, then quit."),
         QStringLiteral("DIR")});
    parser.addOption(
        {QStringLiteral("truth"),
         QStringLiteral("With --demo: the verified frames (MOT gt.txt with frames.txt next to "
                        "it; \"\" for none; default: the ones demo.json names)."),
         QStringLiteral("FILE")});
    parser.addOption({QStringLiteral("nodes"),
                      QStringLiteral("With --demo: how many local nodes (1-8)."),
                      QStringLiteral("N"), QStringLiteral("3")});
}

// Ctrl-C and SIGTERM close the window (or end the headless run) like the user would: the
// handler only sets a flag (all a signal handler may safely do); a timer acts on it.
void closeOnInterrupt(QTimer &poll)
{
    static std::atomic<bool> interrupted{false};
    for (int sig : {SIGINT, SIGTERM})
        std::signal(sig, [](int) { interrupted.store(true); });
    QObject::connect(&poll, &QTimer::timeout, qApp, [] {
        if (!interrupted.exchange(false))
            return;
        const auto windows = QApplication::topLevelWidgets();
        bool any = false;
        for (QWidget *w : windows)
            if (w->isVisible()) {
                w->close(); // stops a running job first
                any = true;
            }
        if (!any)
            QApplication::exit(130);
    });
    poll.start(200);
}

/** --autorun's step hook: show each step's page and, with --screenshots, save it once done as
 *  DIR/<n>-<step>.png, numbered as the window numbers its steps. */
std::function<void(int, bool)> showAndShoot(edgetrain::ui::MainWindow &window, const QString &shots)
{
    return [&window, shots](int step, bool done) {
        using Window = edgetrain::ui::MainWindow;
        struct Page
        {
            Window::Step step;
            const char *file;
        };
        // The demo's steps by number; the window has Verify between Dataset and Plan.
        static const Page pages[] = {{Window::Nodes, "1-nodes"},     {Window::Capture, "2-capture"},
                                     {Window::Dataset, "3-dataset"}, {Window::Plan, "5-plan"},
                                     {Window::Train, "6-train"},     {Window::Report, "7-report"},
                                     {Window::Deploy, "8-deploy"}};
        window.showStep(pages[step].step);
        if (!done || shots.isEmpty())
            return;
        const auto shoot = [&window, shots](const Page &page) {
            window.showStep(page.step);
            QApplication::processEvents();
            window.grab().save(QStringLiteral("%1/%2.png").arg(shots, QLatin1String(page.file)));
        };
        // Give lists, galleries, charts and the devices' views a moment to fill and paint.
        QTimer::singleShot(step >= 5 ? 4000 : 1500, &window, [&window, shoot, step] {
            // The Verify step once the report has scored its frames: its "how sure" line is full.
            if (step == 5) {
                shoot({Window::Verify, "4-verify"});
                QApplication::processEvents();
            }
            shoot(pages[step]);
            if (step == 6) // the demo ends on the devices' live views
                QTimer::singleShot(500, qApp, [] { QApplication::exit(0); });
        });
    };
}

} // namespace

/** The program; main() is its boundary for errors nothing below handled. */
static int run(int argc, char **argv)
{
    // Decide before Qt starts: without a display, run offscreen.
    bool headless = false;
    for (int i = 1; i < argc; ++i)
        headless |= std::string_view(argv[i]) == "--headless";
    const bool display = hasDisplay();
    if (headless || !display)
        qputenv("QT_QPA_PLATFORM", "offscreen");
    std::unique_ptr<QTemporaryDir> runtime;
    if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) { // Qt warns without a private one
        runtime = std::make_unique<QTemporaryDir>();
        QFile::setPermissions(runtime->path(),
                              QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        qputenv("XDG_RUNTIME_DIR", runtime->path().toLocal8Bit());
    }

    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("EdgeTrain"));
    QApplication::setApplicationName(QStringLiteral("EdgeTrain"));
    QApplication::setApplicationVersion(QStringLiteral(EDGETRAIN_VERSION));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/edgetrain.svg")));
    // Desktops match the window to the installed desktop entry (and its icon) by this id.
    QApplication::setDesktopFileName(QStringLiteral(EDGETRAIN_APP_ID));

    QCommandLineParser parser;
    addOptions(parser);
    parser.process(app);

    const bool demo = parser.isSet(QStringLiteral("demo"));
    if ((headless || !display) && !demo) {
        std::fprintf(
            stderr, "edgetrain: %s\n",
            headless
                ? "--headless runs the demo session: add --demo"
                : "no display (DISPLAY is not set): run `edgetrain --demo --headless --out DIR`, "
                  "or use edgetrain-cli");
        return 2;
    }
    bool ok = false;
    const int nodes = parser.value(QStringLiteral("nodes")).toInt(&ok);
    if (!ok || nodes < 1 || nodes > 8) {
        std::fprintf(stderr, "edgetrain: --nodes must be 1 to 8\n");
        return 2;
    }
    const QString out = QDir(parser.value(QStringLiteral("out"))).absolutePath();

    edgetrain::app::Workflow workflow;
    edgetrain::gui::DemoCluster cluster;
    auto readMaterial = [](QString *error) {
        QString root;
        return edgetrain::gui::DemoMaterial::read(edgetrain::gui::DemoMaterial::defaultFile(&root),
                                                  root, error);
    };
    // The demo's nodes in `dir`, each with a camera for the Deploy step.
    auto startCluster = [&](const QString &dir, QString *error) {
        const auto material = readMaterial(error);
        if (!material)
            return false;
        const QStringList cameras =
            edgetrain::gui::DemoCluster::cameras(material->video, dir, error);
        return !cameras.isEmpty() && cluster.start(dir, nodes, cameras, error);
    };
    // The demo session in `dir` on the nodes already started: --demo, or the start page's button.
    auto prepareDemo = [&](const QString &dir, QString *error) {
        const auto material = readMaterial(error);
        if (!material)
            return false;
        const QString truth = parser.isSet(QStringLiteral("truth"))
                                  ? parser.value(QStringLiteral("truth"))
                                  : material->truthFile;
        return edgetrain::gui::prepareDemoSession(workflow, dir + QStringLiteral("/session"),
                                                  *material, cluster, truth, error);
    };
    if (demo) {
        QString error;
        if (!startCluster(out, &error) || !prepareDemo(out, &error)) {
            std::fprintf(stderr, "edgetrain: %s\n", qPrintable(error));
            return 1;
        }
    }
    QTimer interruptPoll;
    closeOnInterrupt(interruptPoll);

    if (demo && (headless || !display)) {
        if (!display && !headless)
            std::fprintf(stderr, "edgetrain: no display: running the demo session headless\n");
        // The run's log says what the coordinator's would.
        QLoggingCategory::setFilterRules(QStringLiteral("edgetrain.coordinator.info=false"));
        edgetrain::gui::HeadlessDemo run(workflow, out, nodes);
        QObject::connect(&run, &edgetrain::gui::HeadlessDemo::finished, &app, &QApplication::exit);
        QTimer::singleShot(0, &run, &edgetrain::gui::HeadlessDemo::start);
        return app.exec();
    }

    edgetrain::ui::MainWindow window(&workflow);
    // The start page's "Run the demo": what --demo does, in --out or the user's data folder.
    bool demoNodesUp = demo;
    QObject::connect(&window, &edgetrain::ui::MainWindow::demoRequested, &window, [&] {
        const QString dir =
            parser.isSet(QStringLiteral("out"))
                ? out
                : QStandardPaths::writableLocation(QStandardPaths::AppLocalDataLocation) +
                      QStringLiteral("/demo");
        QString error;
        QApplication::setOverrideCursor(Qt::WaitCursor); // the nodes take a moment to start
        demoNodesUp = demoNodesUp || startCluster(dir, &error);
        const bool ready = demoNodesUp && prepareDemo(dir, &error);
        QApplication::restoreOverrideCursor();
        if (!ready)
            QMessageBox::warning(&window, QObject::tr("Run the demo"), error);
    });
    const QStringList args = parser.positionalArguments();
    if (!args.isEmpty())
        window.openSession(args.first());
    window.show();
    std::unique_ptr<edgetrain::gui::HeadlessDemo> autorun;
    if (demo && parser.isSet(QStringLiteral("autorun"))) {
        autorun = std::make_unique<edgetrain::gui::HeadlessDemo>(workflow, out, nodes);
        const QString shots = parser.value(QStringLiteral("screenshots"));
        if (!shots.isEmpty()) {
            QDir().mkpath(shots);
            // The pictures show the window as big as the screen it is on (1366x768, 1920x1080).
            if (const QScreen *screen = window.screen())
                window.setGeometry(screen->availableGeometry());
        }
        autorun->setStepHook(showAndShoot(window, shots));
        autorun->setDeploySeconds(0); // the window's demo ends on the live grid
        QObject::connect(autorun.get(), &edgetrain::gui::HeadlessDemo::finished, &app,
                         [](int status) {
                             if (status != 0)
                                 QApplication::exit(status);
                         });
        QTimer::singleShot(500, autorun.get(), &edgetrain::gui::HeadlessDemo::start);
    }
    return app.exec();
}

int main(int argc, char **argv)
{
    // Every error ends here with its message and exit status 1, never an abort.
    try {
        return run(argc, argv);
    } catch (const std::exception &e) {
        std::fprintf(stderr, "edgetrain: error: %s\n", e.what());
    } catch (...) {
        std::fprintf(stderr, "edgetrain: error: an unknown exception\n");
    }
    return 1;
}

#include "demo.h"

#include "app/session/deploymentrun.h"
#include "app/session/evaluationtask.h"
#include "app/session/repeatability.h"
#include "app/session/verifiedframes.h"
#include "app/session/verifiedscoring.h"
#include "net/protocol/keyfile.h"
#include "ui/common.h"
#include "ui/gallery.h"
#include "ui/reporttext.h"
#include "ui/reportwriter.h"
#include "vision/framesource.h"
#include "vision/groundtruth.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTimer>
#include <QUdpSocket>
#include <opencv2/imgproc.hpp>
#include <opencv2/videoio.hpp>

#include <cstdio>

namespace edgetrain::gui {

namespace {

/** The verified frames of `truthFile` (+ the frames.txt next to it) into the session's
 *  truth.json. */
bool importDemoTruth(const QString &video, const QString &truthFile, const QString &sessionDir,
                     QString *error)
{
    const QString listPath = QFileInfo(truthFile).dir().filePath(QStringLiteral("frames.txt"));
    try {
        auto source = vision::FrameSource::open(video.toStdString());
        // Only the listed frames were checked whole (the same reading as viewpoint --truth).
        vision::GroundTruth truth =
            app::readVerifiedTruth(truthFile.toStdString(), listPath.toStdString(), *source);
        truth.source = video.toStdString();
        truth.note = "imported by the demo from " + truthFile.toStdString() +
                     " (boxes made by hand, see tests/data/README.md)";
        truth.save(sessionDir.toStdString());
    } catch (const std::exception &e) {
        *error =
            QStringLiteral("the demo's verified frames: %1").arg(QString::fromStdString(e.what()));
        return false;
    }
    return true;
}

/** `in` knocked as tests/vision/knockvideo.cpp knocks it (its defaults, on every frame) into
 *  `out`, through a temporary file so that an interrupted run leaves none. */
bool writeKnockedVideo(const QString &in, const QString &out, QString *error)
{
    cv::VideoCapture video(in.toStdString());
    cv::Mat frame;
    if (!video.isOpened() || !video.read(frame)) {
        *error = QStringLiteral("cannot read '%1'").arg(in);
        return false;
    }
    const cv::Size size = frame.size();
    const double scale = 1.1, dx = 40, dy = 24;
    const double cx = (size.width - 1) / 2.0, cy = (size.height - 1) / 2.0;
    const cv::Mat knock = (cv::Mat_<double>(2, 3) << scale, 0, (1 - scale) * cx + dx, 0, scale,
                           (1 - scale) * cy + dy);
    const double fps = video.get(cv::CAP_PROP_FPS) > 0 ? video.get(cv::CAP_PROP_FPS) : 25.0;
    const QString part = out + QStringLiteral(".part.avi");
    // MPEG-4 as the original is (a tenth of MJPG's size), MJPG where FFmpeg cannot write it.
    cv::VideoWriter writer(part.toStdString(), cv::CAP_FFMPEG,
                           cv::VideoWriter::fourcc('m', 'p', '4', 'v'), fps, size);
    if (!writer.isOpened())
        writer.open(part.toStdString(), cv::CAP_OPENCV_MJPEG,
                    cv::VideoWriter::fourcc('M', 'J', 'P', 'G'), fps, size,
                    {cv::VIDEOWRITER_PROP_QUALITY, 90});
    if (!writer.isOpened()) {
        *error = QStringLiteral("cannot write '%1'").arg(part);
        return false;
    }
    do {
        cv::Mat moved;
        cv::warpAffine(frame, moved, knock, size, cv::INTER_LINEAR, cv::BORDER_REPLICATE);
        writer.write(moved);
    } while (video.read(frame));
    writer.release();
    QFile::remove(out);
    if (!QFile::rename(part, out)) {
        *error = QStringLiteral("cannot write '%1'").arg(out);
        return false;
    }
    return true;
}

quint16 freeUdpPort()
{
    QUdpSocket s;
    s.bind(QHostAddress::LocalHost, 0);
    return s.localPort();
}

} // namespace

DemoCluster::~DemoCluster()
{
    for (auto &p : m_nodes) {
        p->terminate();
        if (!p->waitForFinished(3000))
            p->kill();
        p->waitForFinished(1000);
    }
}

QStringList DemoCluster::cameras(const QString &video, const QString &dir, QString *error)
{
    const QFileInfo info(video);
    const QString knocked =
        dir + QStringLiteral("/knocked-") + info.completeBaseName() + QStringLiteral(".avi");
    QDir().mkpath(dir);
    if (!QFileInfo::exists(knocked) && !writeKnockedVideo(video, knocked, error))
        return {};
    const QString third = info.dir().filePath(QStringLiteral("Megamind.avi"));
    return {video, knocked, QFileInfo::exists(third) ? third : video};
}

bool DemoCluster::start(const QString &dir, int nodes, const QStringList &cameras, QString *error)
{
    QDir().mkpath(dir);
    m_keyFile = dir + QStringLiteral("/demo.key");
    if (!QFileInfo::exists(m_keyFile) && !net::writeNewKeyFile(m_keyFile, error))
        return false;
    QFile::setPermissions(m_keyFile, QFile::ReadOwner | QFile::WriteOwner);
    const QString program =
        QCoreApplication::applicationDirPath() + QStringLiteral("/edgetrain-node");
    if (!QFileInfo(program).isExecutable()) {
        *error = QStringLiteral("'%1' is missing: build edgetrain-node too").arg(program);
        return false;
    }
    for (int i = 1; i <= nodes; ++i) {
        const quint16 discovery = freeUdpPort();
        auto p = std::make_unique<QProcess>();
        p->setProgram(program);
        p->setArguments({QStringLiteral("--name"), QStringLiteral("demo-node-%1").arg(i),
                         QStringLiteral("--port"), QStringLiteral("0"),
                         QStringLiteral("--discovery-port"), QString::number(discovery),
                         QStringLiteral("--threads"), QStringLiteral("1"),
                         QStringLiteral("--no-multicast"), QStringLiteral("--key-file"), m_keyFile,
                         QStringLiteral("--print-port")});
        if (!cameras.isEmpty())
            p->setArguments(p->arguments()
                            << QStringLiteral("--camera") << cameras[(i - 1) % cameras.size()]);
        p->setStandardErrorFile(dir + QStringLiteral("/node-%1.log").arg(i));
        p->start();
        if (!p->waitForStarted(5000) || !p->waitForReadyRead(10000)) {
            *error =
                QStringLiteral("demo node %1 did not start (see %2/node-%1.log)").arg(i).arg(dir);
            return false;
        }
        m_probes.append(QStringLiteral("127.0.0.1:%1").arg(discovery));
        m_nodes.push_back(std::move(p));
    }
    return true;
}

bool prepareDemoSession(app::Workflow &workflow, const QString &dir, const DemoMaterial &material,
                        const DemoCluster &cluster, const QString &truthFile, QString *error)
{
    if (!QFileInfo::exists(material.video)) {
        *error = QStringLiteral("'%1' is missing (Debian package %2)")
                     .arg(material.video, material.videoPackage);
        return false;
    }
    // A demo session from an earlier run is replaced; anything else in the folder is left alone.
    if (QFileInfo::exists(dir + QStringLiteral("/session.json"))) {
        QString ignored;
        const auto old = app::Session::open(dir, &ignored);
        if (!old || old->title != QLatin1String("EdgeTrain demo")) {
            *error =
                QStringLiteral("'%1' holds a session that is not the demo's: choose another --out")
                    .arg(dir);
            return false;
        }
        QDir(dir).removeRecursively();
    }
    if (!workflow.newSession(dir, error))
        return false;
    workflow.setTitle(QStringLiteral("EdgeTrain demo"));
    app::CaptureSettings capture;
    capture.source = material.video;
    capture.teacher = material.teacher;
    capture.tracker = material.tracker;
    capture.every = material.every;
    capture.maxFrames = material.labelledFrames;
    app::DatasetSettings dataset = workflow.session().dataset;
    dataset.kind = material.datasetKind;
    dataset.frameWidth = material.frameWidth;
    dataset.frameEvery = material.frameEvery;
    app::PlanSettings plan = workflow.session().plan;
    plan.model = material.model;
    plan.epochs = material.epochs;
    plan.batch = material.batch;
    plan.lr = material.lr;
    if (!workflow.setCapture(capture, error) || !workflow.setDatasetSettings(dataset, error) ||
        !workflow.setPlanSettings(plan, error)) {
        *error = material.file + QStringLiteral(": ") + *error;
        return false;
    }
    const app::Session &s = workflow.session();
    if (!truthFile.isEmpty() && !importDemoTruth(material.video, truthFile, s.dir, error))
        return false;
    if (!workflow.nodes().setKeyFile(cluster.keyFile(), error))
        return false;
    for (const QString &p : cluster.probes())
        if (!workflow.nodes().addProbe(p, error))
            return false;
    if (!workflow.save(error))
        return false;
    if (!workflow.verification()->open(s.dir, error))
        return false;
    // The demo's nodes are ours: pair each as soon as discovery finds it.
    QObject::connect(&workflow.nodes(), &app::NodeRegistry::nodesChanged, &workflow, [&workflow] {
        for (const auto &[key, n] : workflow.nodes().all())
            if (n.state == app::NodeView::State::Found &&
                n.info.name.startsWith(QLatin1String("demo-node-")))
                workflow.nodes().pair(key);
    });
    return true;
}

HeadlessDemo::HeadlessDemo(app::Workflow &workflow, QString outDir, int nodes)
    : m_workflow(workflow), m_out(std::move(outDir)), m_nodes(nodes)
{
    connect(&m_workflow, &app::Workflow::taskFinished, this, &HeadlessDemo::onTaskFinished);
    connect(&m_workflow, &app::Workflow::taskProgress, this,
            [this](app::Task task, int done, int total, const QString &text) {
                static qint64 last = 0;
                if (m_clock.elapsed() - last < 5000 && done < total)
                    return; // a line every 5 s is enough for a log
                last = m_clock.elapsed();
                step(QStringLiteral("  %1: %2").arg(app::taskName(task), text));
            });
    connect(&m_workflow, &app::Workflow::deviceFailed, this,
            [this](const QString &node, const QString &text) {
                step(QStringLiteral("  %1: %2").arg(node, text));
                viewed(node);
            });
    connect(&m_workflow, &app::Workflow::deviceViewed, this,
            [this](const app::DeviceView &v) { viewed(v.node); });
    connect(&m_workflow, &app::Workflow::epochFinished, this, [this](const net::ClusterEpoch &e) {
        step(
            QStringLiteral("  epoch %1: loss %2, validation accuracy %3 %, %4 images/s on %5 nodes")
                .arg(e.epoch)
                .arg(e.train_loss, 0, 'f', 4)
                .arg(100 * e.test_accuracy, 0, 'f', 1)
                .arg(e.images_per_second, 0, 'f', 0)
                .arg(e.nodes));
    });
    connect(&m_workflow, &app::Workflow::planReady, this, [this](const app::PlanView &v) {
        if (m_planning != Planning::Probe && m_planning != Planning::Budget)
            return;
        if (!(v.request == m_asked)) { // the window asked for another plan meanwhile
            m_workflow.requestPlan(m_asked);
            return;
        }
        if (m_planning == Planning::Probe) {
            // A budget that makes the planner checkpoint, 60 % of the way from the floor to
            // what store-all needs (its peak and the process's own overhead), where the model
            // allows any (else none: nothing to trade).
            m_planning = Planning::Budget;
            const std::int64_t storeAll = v.storeAllPeak + v.processOverhead;
            const std::int64_t budget =
                storeAll > v.minimumBudget ? v.minimumBudget + (storeAll - v.minimumBudget) * 6 / 10
                                           : -1;
            app::PlanSettings plan = m_workflow.session().plan;
            plan.budgetAllBytes = budget;
            m_workflow.setPlanSettings(plan);
            askPlan(budget);
            return;
        }
        m_planning = Planning::Done;
        if (!v.error.isEmpty())
            return fail(QStringLiteral("cannot plan: ") + v.error);
        m_plan = v;
        step(QStringLiteral("== 4. Plan: device batch %1, budget %2, schedule %3, predicted peak "
                            "%4 MiB (store-all %5 MiB) + the process's own %7 MiB, %6 % "
                            "recompute")
                 .arg(v.request.deviceBatch)
                 .arg(v.request.budgetBytes < 0
                          ? QStringLiteral("none (this student cannot trade memory "
                                           "for recompute)")
                          : QStringLiteral("%1 MiB").arg(double(v.request.budgetBytes) / 1048576.0,
                                                         0, 'f', 2))
                 .arg(v.schedule)
                 .arg(double(v.plan.predicted_peak_bytes) / 1048576.0, 0, 'f', 2)
                 .arg(double(v.storeAllPeak) / 1048576.0, 0, 'f', 2)
                 .arg(100 * (v.plan.predicted_recompute_factor - 1), 0, 'f', 1)
                 .arg(double(v.processOverhead) / 1048576.0, 0, 'f', 2));
        hook(3, true);
        step(QStringLiteral("== 5. Training across %1 nodes")
                 .arg(m_workflow.nodes().pairedNodes().size()));
        hook(4, false);
        m_workflow.startTraining();
    });
}

void HeadlessDemo::askPlan(std::int64_t budget)
{
    m_asked = m_workflow.planRequestFor(budget);
    m_workflow.requestPlan(m_asked);
}

void HeadlessDemo::step(const QString &text)
{
    std::fprintf(stderr, "[%6.1f s] %s\n", double(m_clock.elapsed()) / 1000.0, qPrintable(text));
    std::fflush(stderr);
}

void HeadlessDemo::fail(const QString &text)
{
    step(QStringLiteral("FAILED: ") + text);
    Q_EMIT finished(1);
}

void HeadlessDemo::start()
{
    m_clock.start();
    step(QStringLiteral("== 1. Nodes: waiting for %1 demo nodes to be found and paired")
             .arg(m_nodes));
    hook(0, false);
    auto *poll = new QTimer(this);
    connect(poll, &QTimer::timeout, this, [this, poll] {
        if (m_workflow.nodes().pairedNodes().size() >= m_nodes) {
            poll->stop();
            step(QStringLiteral("  paired: %1")
                     .arg(m_workflow.nodes().pairedNodes().join(QStringLiteral(", "))));
            hook(0, true);
            hook(1, false);
            step(QStringLiteral("== 2. Labelling %1 with the %2 teacher on %3")
                     .arg(QFileInfo(m_workflow.session().capture.source).fileName(),
                          m_workflow.session().capture.teacher,
                          ui::everyNth(m_workflow.session().capture.every,
                                       QStringLiteral("frame"))));
            m_workflow.startLabelling();
        } else if (m_clock.elapsed() > 20000) {
            poll->stop();
            fail(QStringLiteral("the demo nodes were not paired within 20 s: %1")
                     .arg(m_workflow.clusterSummary()));
        }
    });
    poll->start(200);
}

void HeadlessDemo::onTaskFinished(app::Task task, bool ok, const QString &message)
{
    step(QStringLiteral("  ") + message);
    if (!ok)
        return fail(message);
    switch (task) {
    case app::Task::Labelling:
        hook(1, true);
        step(QStringLiteral("== 3. Building the frame dataset (frames 0-%1 only)")
                 .arg(m_workflow.session().capture.maxFrames - 1));
        hook(2, false);
        m_workflow.startDataset();
        break;
    case app::Task::Dataset:
        hook(2, true);
        hook(3, false);
        m_planning = Planning::Probe; // store-all's peak and the floor first
        askPlan(-1);
        break;
    case app::Task::Training:
        hook(4, true);
        step(QStringLiteral(
                 "== 6. Evaluating student, teacher and motion against %1 verified frames")
                 .arg(m_workflow.verification()->truth().doneFrames()));
        hook(5, false);
        break; // the workflow evaluates a finished run by itself
    case app::Task::Evaluation:
        headline();
        if (m_deploySeconds > 0) {
            deploy();
        } else {
            hook(5, false);
            writeReport();
            hook(5, true);
            deploy();
        }
        break;
    case app::Task::Deployment:
        reportDeployment();
        if (m_deploySeconds > 0) {
            hook(6, true);
            hook(5, false);
            writeReport();
            hook(5, true);
        }
        break;
    default:
        break;
    }
}

void HeadlessDemo::deploy()
{
    // Headless, it runs before the report (which then has its Deploy page); live, after it.
    step(QStringLiteral("== %1. The student on the nodes' cameras%2")
             .arg(m_deploySeconds > 0 ? 7 : 8)
             .arg(m_deploySeconds > 0 ? QStringLiteral(" for %1 s").arg(m_deploySeconds, 0, 'f', 0)
                                      : QStringLiteral(", until stopped (the Deploy step)")));
    hook(6, false);
    m_viewed.clear();
    m_workflow.startDeployment(m_deploySeconds);
}

void HeadlessDemo::viewed(const QString &node)
{
    // Live, the Deploy step is done once every node has shown a frame (or is out of the run).
    if (m_deploySeconds > 0 || m_viewed.contains(node))
        return;
    m_viewed.append(node);
    if (m_viewed.size() == m_workflow.nodes().pairedNodes().size())
        hook(6, true);
}

void HeadlessDemo::reportDeployment()
{
    const auto &d = m_workflow.session().deployment;
    if (!d)
        return;
    for (const app::DeploymentRecord::Device &v : d->devices)
        step(v.error.isEmpty()
                 ? QStringLiteral("  %1 on %2: %3 frames, %4 frames/s, latency p50 %5 ms, p95 %6 "
                                  "ms, %7 boxes")
                       .arg(v.node, v.source)
                       .arg(v.frames)
                       .arg(v.fps, 0, 'f', 1)
                       .arg(v.latencyMsP50, 0, 'f', 0)
                       .arg(v.latencyMsP95, 0, 'f', 0)
                       .arg(v.detections)
                 : QStringLiteral("  %1: %2").arg(v.node, v.error));
}

void HeadlessDemo::headline()
{
    const app::EvaluationRecord &e = m_workflow.session().evaluation;
    if (e.verified.empty()) {
        step(QStringLiteral("HEADLINE (against the tracker's labels, no verified frames): ") +
             app::EvaluationTask::summary(e.result));
        return;
    }
    const app::VerifiedRound &v = e.verified.back();
    step(QStringLiteral("HEADLINE: on %1 verified frames the student never saw (from frame %2 on, "
                        "IoU 0.5):")
             .arg(v.frames)
             .arg(v.first_frame));
    auto range = [](const vision::Interval *ci) {
        return ci ? QStringLiteral(" (%1–%2 %)")
                        .arg(100 * ci->lo, 0, 'f', 0)
                        .arg(100 * ci->hi, 0, 'f', 0)
                  : QString();
    };
    for (const vision::DetectorScore &sc : v.scores) {
        const double fps = sc.name == "student"   ? e.student_fps
                           : sc.name == "teacher" ? e.teacher_fps
                                                  : e.motion_fps;
        const vision::FigureIntervals *ci = v.interval(sc.name);
        step(QStringLiteral("  %1 finds %2 %%3 of the people at %4 %%5 precision (F1 %6, AP50 "
                            "%7, %8 of %9 boxes, %10 false; %11 frames/s on one core)")
                 .arg(QString::fromStdString(sc.name), -8)
                 .arg(100 * sc.recall, 0, 'f', 1)
                 .arg(range(ci ? &ci->recall : nullptr))
                 .arg(100 * sc.precision, 0, 'f', 1)
                 .arg(range(ci ? &ci->precision : nullptr))
                 .arg(sc.f1, 0, 'f', 3)
                 .arg(sc.ap50, 0, 'f', 3)
                 .arg(sc.true_positives)
                 .arg(sc.truths)
                 .arg(sc.false_positives)
                 .arg(fps, 0, 'f', 1));
    }
    for (const vision::BootstrapDifference &d : v.differences)
        step(QStringLiteral("  student − %1: F1 %2 (95 % interval %3 to %4): %5")
                 .arg(QString::fromStdString(d.b))
                 .arg(d.a_minus_b.f1, 0, 'f', 3)
                 .arg(d.ci.f1.lo, 0, 'f', 3)
                 .arg(d.ci.f1.hi, 0, 'f', 3)
                 .arg(app::leadSettled(v.frames, d) ? QStringLiteral("settled")
                                                    : QStringLiteral("not settled")));
    step(QStringLiteral("  ") + app::EvaluationTask::summary(e.result));
    const QString again = app::repeatabilityText(app::runRepeatability(m_workflow.session()));
    if (!again.isEmpty())
        step(QStringLiteral("  ") + again);
}

void HeadlessDemo::writeReport()
{
    const QString dir = m_out + QStringLiteral("/report");
    step(QStringLiteral("== %1. Writing the report to %2")
             .arg(m_deploySeconds > 0 ? 8 : 7)
             .arg(dir));
    ui::ReportContent c;
    c.session = &m_workflow.session();
    c.plan = m_plan;
    c.category = m_workflow.verification()->truth().category;
    try {
        // As the window's Report step: the verified frames when there are any, with the
        // teacher's and the student's boxes on each.
        if (const app::VerifiedRound *round = ui::ReportText::currentRound(m_workflow.session())) {
            c.gallery = ui::Gallery::renderVerified(m_workflow.session(),
                                                    m_workflow.verification()->truth(),
                                                    round->first_frame, round->scores, 6);
            c.galleryVerified = true;
        } else {
            c.gallery =
                ui::Gallery::renderGains(ui::ReportText::withOneGainPerFrame(m_workflow.session()),
                                         *m_workflow.labels(), 12);
        }
    } catch (const std::exception &e) {
        step(QStringLiteral("  no gallery: %1").arg(QString::fromStdString(e.what())));
    }
    QStringList written;
    QString error;
    if (!ui::ReportWriter::exportAll(dir, c, &written, &error))
        return fail(error);
    for (const QString &f : written)
        step(QStringLiteral("  wrote %1").arg(f));
    QString saveError;
    m_workflow.save(&saveError);
    step(QStringLiteral("done in %1 s: session %2")
             .arg(double(m_clock.elapsed()) / 1000.0, 0, 'f', 0)
             .arg(m_workflow.session().dir));
    Q_EMIT finished(0);
}

} // namespace edgetrain::gui

#include "deploymentrun.h"
#include "vision/studentteacher.h"
#include "workflow.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>

// The Workflow's Deploy step: the student sent to the paired nodes, which run it on their own
// cameras (DeploymentRun, on the cluster thread as a training run is), and the session's record
// of it. The rest of the Workflow is in workflow.cpp and workflowsession.cpp.

namespace edgetrain::app {

namespace {

/** A node's name as a file name: what is not a letter, digit, '-', '_' or '.' becomes '_'. */
QString fileNameFor(const QString &node)
{
    QString name = node;
    for (QChar &c : name)
        if (!c.isLetterOrNumber() && c != u'-' && c != u'_' && c != u'.')
            c = u'_';
    return name.isEmpty() || name.startsWith(u'.') ? QStringLiteral("_") + name : name;
}

/** The node's name for `node`, which the run may give as its address (host:port) when the node
 *  failed before or while it said its name. */
QString deviceName(const NodeRegistry &nodes, const QString &node)
{
    const auto it = nodes.all().find(node);
    return it != nodes.all().end() && !it->second.info.name.isEmpty() ? it->second.info.name : node;
}

/** `text` for the window, with what the registry last heard of the node: a node that left the
 *  deployment while it reports a training job was most likely taken for that job. */
QString failureText(const NodeRegistry &nodes, const QString &node, const QString &text)
{
    for (const auto &[key, n] : nodes.all())
        if (n.info.name == node && n.sample && n.sample->training && n.sample->training->active)
            return text + QStringLiteral(" — it is training");
    return text;
}

QString deploymentSummary(const DeploymentOutcome &o)
{
    if (!o.error.isEmpty() && o.last.empty())
        return QStringLiteral("deployment failed: %1").arg(o.error);
    double fps = 0;
    for (const DeviceView &v : o.last)
        fps += v.fps;
    QString text =
        QStringLiteral("the student ran on %1 %2 for %3 s, %4 frames/s in all")
            .arg(o.last.size())
            .arg(o.last.size() == 1 ? QStringLiteral("device") : QStringLiteral("devices"))
            .arg(o.seconds, 0, 'f', 0)
            .arg(fps, 0, 'f', 1);
    if (!o.nodeErrors.empty())
        text += QStringLiteral("; %1 refused or dropped out").arg(o.nodeErrors.size());
    if (o.cancelled)
        text += QStringLiteral(" (stopped)");
    return text;
}

} // namespace

QString Workflow::deploymentBlocker() const
{
    if (m_session.dir.isEmpty())
        return QStringLiteral("open a session first");
    if (!QFileInfo::exists(QString::fromStdString(
            vision::StudentTeacher::weightsPath(m_session.dir.toStdString()))))
        return QStringLiteral("train the full-frame student first (step 6): the devices run "
                              "detector.safetensors");
    if (!m_nodes.hasKey())
        return QStringLiteral("load the cluster key first (step 1)");
    if (m_nodes.pairedNodes().isEmpty())
        return QStringLiteral("pair the devices first (step 1)");
    if (busy() != Task::None && busy() != Task::Deployment)
        return QStringLiteral("wait until %1 has finished").arg(taskName(busy()));
    return {};
}

bool Workflow::buildDeploymentSetup(DeploymentSetup &setup, QString *why) const
{
    *why = deploymentBlocker();
    if (!why->isEmpty())
        return false;
    setup.modelPath =
        QString::fromStdString(vision::StudentTeacher::weightsPath(m_session.dir.toStdString()));
    setup.key = m_nodes.key();
    for (const auto &[key, n] : m_nodes.all())
        if (n.state == NodeView::State::Paired)
            setup.nodes.append({n.host, n.port});
    return true;
}

void Workflow::startDeployment(double duration_s)
{
    if (busy() != Task::None)
        return;
    DeploymentSetup setup;
    QString why;
    if (!buildDeploymentSetup(setup, &why)) {
        Q_EMIT taskFinished(Task::Deployment, false, why);
        return;
    }
    setup.durationSeconds = duration_s;
    qRegisterMetaType<DeviceView>();
    qRegisterMetaType<DeploymentOutcome>();
    m_deployStarted = QDateTime::currentDateTimeUtc();
    m_runner.begin(Task::Deployment);
    m_deploy = new DeploymentRun;
    m_deploy->moveToThread(&m_trainThread);
    connect(m_deploy, &DeploymentRun::status, this,
            [this](const QString &text) { Q_EMIT taskProgress(Task::Deployment, 0, 0, text); });
    connect(m_deploy, &DeploymentRun::view, this, &Workflow::deviceViewed);
    connect(m_deploy, &DeploymentRun::nodeFailed, this,
            [this](const QString &address, const QString &text) {
                const QString node = deviceName(m_nodes, address);
                const QString shown = failureText(m_nodes, node, text);
                Q_EMIT deviceFailed(node, shown);
                Q_EMIT message(QStringLiteral("%1: %2").arg(node, shown));
            });
    connect(m_deploy, &DeploymentRun::done, this, [this](const DeploymentOutcome &o) {
        m_deploy->deleteLater();
        m_deploy = nullptr;
        recordDeployment(o);
        finishTask(Task::Deployment, o.ok, deploymentSummary(o));
    });
    QMetaObject::invokeMethod(
        m_deploy, [run = m_deploy, setup] { run->start(setup); }, Qt::QueuedConnection);
}

void Workflow::stopDeployment()
{
    if (m_deploy)
        QMetaObject::invokeMethod(
            m_deploy, [run = m_deploy] { run->stop(); }, Qt::QueuedConnection);
}

void Workflow::recordDeployment(const DeploymentOutcome &o)
{
    if (o.last.empty())
        return; // no node ran the student: the last deployment that did stays the record
    DeploymentRecord rec;
    rec.started = m_deployStarted;
    rec.seconds = o.seconds;
    rec.stopped = o.cancelled;
    rec.error = o.error;
    QDir(m_session.dir).mkpath(QStringLiteral("deploy"));
    for (const DeviceView &v : o.last) {
        DeploymentRecord::Device d;
        d.node = v.node;
        d.source = v.source;
        d.frameDetections = v.frameDetections;
        d.frames = v.frames;
        d.detections = v.detections;
        d.fps = v.fps;
        d.latencyMsP50 = v.latencyMsP50;
        d.latencyMsP95 = v.latencyMsP95;
        d.cpuPercent = v.cpuPercent;
        d.rssBytes = v.rssBytes;
        for (const auto &[address, text] : o.nodeErrors)
            if (deviceName(m_nodes, address) == v.node)
                d.error = text;
        QString error;
        const QString frame = QStringLiteral("deploy/%1.jpg").arg(fileNameFor(v.node));
        if (!v.jpeg.isEmpty() && writeFileAtomically(m_session.path(frame), v.jpeg, &error))
            d.frame = frame;
        else if (!v.jpeg.isEmpty())
            Q_EMIT message(error);
        rec.devices.push_back(d);
    }
    // The nodes that refused the student, or dropped out before their first report.
    for (const auto &[address, text] : o.nodeErrors) {
        const QString node = deviceName(m_nodes, address);
        if (std::any_of(rec.devices.begin(), rec.devices.end(),
                        [&](const DeploymentRecord::Device &d) { return d.node == node; }))
            continue;
        DeploymentRecord::Device d;
        d.node = node;
        d.error = text;
        rec.devices.push_back(d);
    }
    std::sort(rec.devices.begin(), rec.devices.end(),
              [](const DeploymentRecord::Device &a, const DeploymentRecord::Device &b) {
                  return a.node < b.node;
              });
    m_session.deployment = rec;
    Q_EMIT deploymentChanged();
}

} // namespace edgetrain::app

#include "deploypage.h"

#include "app/report/palette.h"
#include "app/session/deploymentrun.h"
#include "common.h"
#include "devicetile.h"

#include <QFile>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace edgetrain::ui {

DeployPage::DeployPage(app::Workflow *workflow, QWidget *parent)
    : QWidget(parent), m_workflow(workflow)
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("8  Deploy"),
        tr("The trained student goes to every paired device, which runs it on its own camera and "
           "reports about once a second: the latest frame with its boxes, frames/s, latency, CPU "
           "and memory. A device that refuses the model or drops out (to train, say) is marked "
           "on its tile; the others go on until Stop."),
        this));
    auto *bar = new QHBoxLayout;
    m_deploy = new QPushButton(tr("Deploy to devices"), this);
    m_deploy->setDefault(true);
    m_stop = new QPushButton(tr("Stop"), this);
    bar->addWidget(m_deploy);
    bar->addWidget(m_stop);
    bar->addWidget(new TaskStrip(workflow, app::Task::Deployment, this), 1);
    layout->addLayout(bar);
    m_reason = new QLabel(this);
    m_reason->setWordWrap(true);
    m_reason->setStyleSheet(textColour(app::palette::kWarning));
    layout->addWidget(m_reason);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    layout->addWidget(m_summary);
    m_grid = new QGridLayout;
    m_grid->setSpacing(10);
    // The grid takes the room its tiles can use (DeviceTile keeps to its frame's aspect); what is
    // left stays under it.
    layout->addLayout(m_grid, 100);
    layout->addStretch(1);

    connect(m_deploy, &QPushButton::clicked, this, &DeployPage::startDeployment);
    connect(m_stop, &QPushButton::clicked, m_workflow, &app::Workflow::stopDeployment);
    connect(m_workflow, &app::Workflow::deviceViewed, this, [this](const app::DeviceView &v) {
        ensureTile(v.node)->setView(v);
        m_fps[v.node] = v.fps;
        updateSummary();
    });
    connect(m_workflow, &app::Workflow::deviceFailed, this,
            [this](const QString &node, const QString &text) {
                ensureTile(node)->setFailed(text);
                m_fps.erase(node);
                updateSummary();
            });
    connect(m_workflow, &app::Workflow::taskStarted, this, &DeployPage::updateButtons);
    connect(m_workflow, &app::Workflow::taskFinished, this,
            [this](app::Task task, bool ok, const QString &text) {
                if (task == app::Task::Deployment) {
                    // A run that could not start says why on the devices that never reported.
                    for (const auto &[node, t] : m_tiles)
                        if (!ok && t->reports() == 0 && !t->failed())
                            t->setFailed(text);
                    m_fps.clear();
                    updateSummary();
                }
                updateButtons();
            });
    // Another session shows its own last deployment; a node paired or the key loaded can lift
    // the reason the button is off (a trained student: taskFinished above).
    connect(m_workflow, &app::Workflow::sessionChanged, this, &DeployPage::showRecord);
    connect(&m_workflow->nodes(), &app::NodeRegistry::nodesChanged, this,
            &DeployPage::updateButtons);
    connect(&m_workflow->nodes(), &app::NodeRegistry::keyLoaded, this, &DeployPage::updateButtons);
    showRecord();
}

DeviceTile *DeployPage::tile(const QString &node) const
{
    const auto it = m_tiles.find(node);
    return it == m_tiles.end() ? nullptr : it->second;
}

void DeployPage::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    updateButtons();
}

void DeployPage::startDeployment()
{
    clearTiles();
    for (const QString &node : m_workflow->nodes().pairedNodes())
        ensureTile(node);
    m_workflow->startDeployment();
    updateSummary();
}

void DeployPage::showRecord()
{
    clearTiles();
    const app::Session &s = m_workflow->session();
    if (s.deployment) {
        for (const app::DeploymentRecord::Device &d : s.deployment->devices) {
            app::DeviceView v;
            v.node = d.node;
            v.source = d.source;
            if (QFile f(s.path(d.frame)); !d.frame.isEmpty() && f.open(QIODevice::ReadOnly))
                v.jpeg = f.readAll();
            v.frameDetections = d.frameDetections;
            v.frames = d.frames;
            v.detections = d.detections;
            v.fps = d.fps;
            v.latencyMsP50 = d.latencyMsP50;
            v.latencyMsP95 = d.latencyMsP95;
            v.cpuPercent = d.cpuPercent;
            v.rssBytes = d.rssBytes;
            DeviceTile *t = ensureTile(d.node);
            if (d.frames > 0 || !v.jpeg.isEmpty())
                t->setView(v, false);
            if (!d.error.isEmpty())
                t->setFailed(d.error);
        }
    }
    updateSummary();
    updateButtons();
}

void DeployPage::updateButtons()
{
    const QString why = m_workflow->deploymentBlocker();
    const bool running = m_workflow->isDeploying();
    m_deploy->setEnabled(why.isEmpty() && !running);
    m_stop->setEnabled(running);
    m_reason->setText(running || why.isEmpty() ? QString() : tr("Cannot deploy yet: %1.").arg(why));
    m_reason->setVisible(!m_reason->text().isEmpty());
}

void DeployPage::updateSummary()
{
    if (m_workflow->isDeploying()) {
        double fps = 0;
        for (const auto &[node, f] : m_fps)
            fps += f;
        int failed = 0;
        for (const auto &[node, t] : m_tiles)
            failed += t->failed() ? 1 : 0;
        QString text = tr("%1 of %2 running the student · %3 frames/s in all")
                           .arg(m_fps.size())
                           .arg(counted(qint64(m_tiles.size()), tr("device"), tr("devices")))
                           .arg(fps, 0, 'f', 1);
        if (failed > 0)
            text += tr(" · %1 out of the run").arg(failed);
        m_summary->setText(text);
        return;
    }
    const auto &d = m_workflow->session().deployment;
    if (!d) {
        m_summary->setText(tr("The student has not run on the devices yet."));
        return;
    }
    m_summary->setText(
        tr("Last deployment: %1, %2 s on %3%4.")
            .arg(d->started.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")))
            .arg(d->seconds, 0, 'f', 0)
            .arg(counted(qint64(d->devices.size()), tr("device"), tr("devices")))
            .arg(d->stopped ? tr(", stopped") : QString()));
}

DeviceTile *DeployPage::ensureTile(const QString &node)
{
    if (DeviceTile *t = tile(node))
        return t;
    auto *t = new DeviceTile(node, this);
    m_tiles[node] = t;
    // A near-square grid, wider than high: 1, 2, 3 across, then 2x2, then three a row.
    const int n = int(m_tiles.size());
    const int columns = n <= 3 ? n : n == 4 ? 2 : 3;
    int i = 0;
    for (const auto &[name, tile] : m_tiles) {
        m_grid->removeWidget(tile);
        m_grid->addWidget(tile, i / columns, i % columns);
        ++i;
    }
    const int rows = (n + columns - 1) / columns;
    for (int c = 0; c < m_grid->columnCount(); ++c)
        m_grid->setColumnStretch(c, c < columns ? 1 : 0);
    for (int r = 0; r < m_grid->rowCount(); ++r)
        m_grid->setRowStretch(r, r < rows ? 1 : 0);
    return t;
}

void DeployPage::clearTiles()
{
    for (const auto &[name, t] : m_tiles)
        delete t;
    m_tiles.clear();
    m_fps.clear();
}

} // namespace edgetrain::ui

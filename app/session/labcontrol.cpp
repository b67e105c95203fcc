#include "labcontrol.h"

#include "core/error.h"
#include "noderegistry.h"

#include <QCoreApplication>
#include <QtConcurrent/QtConcurrentRun>

namespace edgetrain::app {

LabControl::LabControl(NodeRegistry *nodes, QObject *parent)
    : QObject(parent), m_nodes(nodes), m_dir(net::EdgeLab::defaultFolder()),
      m_program(QCoreApplication::applicationDirPath() + QStringLiteral("/edgetrain-node"))
{}

LabControl::~LabControl()
{
    m_stop->store(true);
    m_watcher.waitForFinished();
    if (isUp()) {
        try {
            net::EdgeLab::down(m_lab.dir);
        } catch (const core::Error &e) {
            qWarning("edgetrain: the rehearsal lab in %s was not taken down: %s",
                     qPrintable(m_lab.dir), e.what());
        }
    }
}

void LabControl::setBusy(bool busy)
{
    if (m_busy != busy) {
        m_busy = busy;
        Q_EMIT busyChanged(busy);
    }
}

bool LabControl::start(const QString &devices, const QString &link, QString *error)
{
    if (m_busy || isUp()) {
        *error = tr("a rehearsal lab is already %1").arg(m_busy ? tr("starting") : tr("up"));
        return false;
    }
    net::LabOptions o;
    try {
        o.devices = net::EdgeLab::parseDevices(devices);
        if (!link.trimmed().isEmpty())
            o.link_bits_per_second = net::EdgeLab::parseRate(link.trimmed());
    } catch (const core::Error &e) {
        *error = QString::fromUtf8(e.what());
        return false;
    }
    o.dir = m_dir;
    o.node_program = m_program;
    m_stop->store(false);
    o.stop = m_stop.get();
    setBusy(true);
    auto report = [this](const QString &line) {
        QMetaObject::invokeMethod(
            this, [this, line] { Q_EMIT progress(line); }, Qt::QueuedConnection);
    };
    m_watcher.setFuture(QtConcurrent::run([this, o, report, keep = m_stop] {
        try {
            const net::LabState lab = net::EdgeLab::up(o, report);
            QMetaObject::invokeMethod(
                this,
                [this, lab] {
                    m_lab = lab;
                    setBusy(false);
                    QString refused;
                    if (!m_nodes->setKeyFile(lab.key_file, &refused))
                        Q_EMIT failed(refused);
                    for (const net::LabNode &n : lab.nodes)
                        if (!m_nodes->addNode(
                                n.address + QLatin1Char(':') + QString::number(n.port), &refused))
                            Q_EMIT failed(refused);
                    m_nodes->pairAll();
                    Q_EMIT started(lab);
                },
                Qt::QueuedConnection);
        } catch (const std::exception &e) {
            const QString message = QString::fromUtf8(e.what());
            QMetaObject::invokeMethod(
                this,
                [this, message] {
                    setBusy(false);
                    Q_EMIT failed(message);
                },
                Qt::QueuedConnection);
        }
    }));
    return true;
}

void LabControl::cancel()
{
    m_stop->store(true);
}

void LabControl::forgetNodes()
{
    for (const net::LabNode &n : m_lab.nodes) {
        const QString address = n.address + QLatin1Char(':') + QString::number(n.port);
        for (const auto &[key, view] : m_nodes->all())
            if (key == address) {
                m_nodes->forget(key);
                break;
            }
    }
}

void LabControl::stop()
{
    if (m_busy || !isUp())
        return;
    forgetNodes();
    setBusy(true);
    const QString dir = m_lab.dir;
    auto report = [this](const QString &line) {
        QMetaObject::invokeMethod(
            this, [this, line] { Q_EMIT progress(tr("removed %1").arg(line)); },
            Qt::QueuedConnection);
    };
    m_watcher.setFuture(QtConcurrent::run([this, dir, report] {
        QString message;
        try {
            net::EdgeLab::down(dir, report);
        } catch (const std::exception &e) {
            message = QString::fromUtf8(e.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, message] {
                setBusy(false);
                if (!message.isEmpty())
                    return Q_EMIT failed(message);
                m_lab = net::LabState();
                Q_EMIT stopped();
            },
            Qt::QueuedConnection);
    }));
}

} // namespace edgetrain::app

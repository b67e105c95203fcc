#pragma once

#include "net/lab/edgelab.h"

#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

namespace edgetrain::app {

class NodeRegistry;

/**
 * The Nodes step's "Rehearse with emulated devices": an edge lab (net/lab/edgelab.h) started and
 * stopped from the app. `lab up` and `lab down` run on a worker thread (they take seconds:
 * the CPU quotas are measured); progress lines come back on the thread that owns this. Once
 * the lab is up its key is loaded and its nodes are added and paired; when it stops, they are
 * forgotten. A lab this started is taken down when this is destroyed (the app closes).
 * Without root the lab is plain local nodes with the profiles' names (started() says what was
 * not emulated).
 */
class LabControl : public QObject
{
    Q_OBJECT

public:
    explicit LabControl(NodeRegistry *nodes, QObject *parent = nullptr);
    ~LabControl() override;

    bool busy() const { return m_busy; }
    bool isUp() const { return !m_lab.id.isEmpty(); }
    const net::LabState &lab() const { return m_lab; }
    /** Where its labs live (the default: EdgeLab::defaultFolder()). */
    void setFolder(const QString &dir) { m_dir = dir; }
    /** The edgetrain-node it starts (the default: next to this program). */
    void setNodeProgram(const QString &path) { m_program = path; }

    /**
     * Starts a lab of `devices` ("pi3:3,pi4:1") on links of `link` ("100mbit"; empty: each
     * profile's). False with the reason (an unknown profile, a bad rate, one already up or
     * busy) without starting anything.
     */
    bool start(const QString &devices, const QString &link, QString *error);
    /** Stops a start in progress (it removes what it had made). */
    void cancel();
    /** Takes the lab down (on a worker thread). */
    void stop();

Q_SIGNALS:
    void progress(const QString &line);
    void started(const edgetrain::net::LabState &lab);
    void stopped();
    void failed(const QString &message);
    void busyChanged(bool busy);

private:
    void setBusy(bool busy);
    void forgetNodes();

    NodeRegistry *m_nodes;
    QString m_dir;
    QString m_program;
    net::LabState m_lab;
    bool m_busy = false;
    std::shared_ptr<std::atomic<bool>> m_stop = std::make_shared<std::atomic<bool>>(false);
    QFutureWatcher<void> m_watcher;
};

} // namespace edgetrain::app

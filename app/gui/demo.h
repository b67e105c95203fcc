#pragma once

#include "app/session/workflow.h"
#include "demomaterial.h"

#include <QObject>
#include <QProcess>

#include <functional>
#include <memory>
#include <vector>

namespace edgetrain::gui {

/** Three edgetrain-node processes on 127.0.0.1 with a demo key; stopped with this object. */
class DemoCluster
{
public:
    ~DemoCluster();
    /** Starts the nodes (found next to this executable); false with a message otherwise. */
    bool start(const QString &dir, int nodes, QString *error);
    const QString &keyFile() const { return m_keyFile; }
    const QStringList &probes() const { return m_probes; } // discovery addresses

private:
    std::vector<std::unique_ptr<QProcess>> m_nodes;
    QString m_keyFile;
    QStringList m_probes;
};

/**
 * The demo session, ready to click through: the material's video labelled on its first frames
 * only (the student never sees the later ones) by its teacher, the dataset and plan it names,
 * the local nodes, and the verified frames of `truthFile` (MOT gt.txt; the frames.txt next to it
 * lists every verified frame, all done) in truth.json. An empty truthFile leaves the session
 * without verified frames. A value the session refuses is named with the material's file.
 */
bool prepareDemoSession(app::Workflow &workflow, const QString &dir, const DemoMaterial &material,
                        const DemoCluster &cluster, const QString &truthFile, QString *error);

/**
 * The same session without a window: pair the nodes, label, build the dataset, plan, train,
 * evaluate (against the verified frames too; the log's headline is that comparison), and write
 * the report (PDF, charts as PNG and SVG, CSV) to <out>/report. Prints
 * what it does on stderr; finished() carries the exit status.
 */
class HeadlessDemo : public QObject
{
    Q_OBJECT

public:
    HeadlessDemo(app::Workflow &workflow, QString outDir, int nodes);
    /** Called when a step begins (done = false) and when it has its result (done = true); steps
     *  are numbered like the window's pages, 0 (nodes) to 5 (report). */
    void setStepHook(std::function<void(int step, bool done)> hook) { m_hook = std::move(hook); }
    void start();

Q_SIGNALS:
    void finished(int status);

private:
    void step(const QString &text);
    void fail(const QString &text);
    void onTaskFinished(app::Task task, bool ok, const QString &message);
    void writeReport();
    void headline();
    void hook(int step, bool done)
    {
        if (m_hook)
            m_hook(step, done);
    }
    void askPlan(std::int64_t budget);

    app::Workflow &m_workflow;
    QString m_out;
    int m_nodes;
    bool m_started = false;
    enum class Planning { None, Probe, Budget, Done };
    Planning m_planning = Planning::None;
    std::optional<app::PlanView> m_plan;
    app::PlanRequest m_asked;
    std::function<void(int, bool)> m_hook;
    QElapsedTimer m_clock;
};

} // namespace edgetrain::gui

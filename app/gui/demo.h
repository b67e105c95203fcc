#pragma once

#include "app/session/workflow.h"
#include "demomaterial.h"

#include <QObject>
#include <QProcess>

#include <functional>
#include <memory>
#include <vector>

namespace edgetrain::gui {

/** Three edgetrain-node processes on 127.0.0.1 with a demo key, each with a camera of its own
 *  (`--camera`, what it runs the student on in the Deploy step); stopped with this object. */
class DemoCluster
{
public:
    ~DemoCluster();
    /** Starts the nodes (found next to this executable), node i on cameras[i % size]; false with
     *  a message otherwise. */
    bool start(const QString &dir, int nodes, const QStringList &cameras, QString *error);
    /**
     * The demo's three cameras for `video` (the material's): the video itself; the same video
     * knocked as the tests knock it (tests/vision/knockvideo.cpp: every frame scaled 1.1 about its
     * centre and shifted 40, 24 px; written once to <dir>/knocked-<video>); and
     * Megamind.avi where it lies next to the video (opencv-doc has both), else the video again.
     * Nothing, with the reason, if the knocked copy cannot be written.
     */
    static QStringList cameras(const QString &video, const QString &dir, QString *error);
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
 * evaluate (against the verified frames too; the log's headline is that comparison), run the
 * student on the nodes' cameras, and write the report (PDF with its Deploy page, charts as PNG
 * and SVG, CSV) to <out>/report. Prints
 * what it does on stderr; finished() carries the exit status.
 */
class HeadlessDemo : public QObject
{
    Q_OBJECT

public:
    HeadlessDemo(app::Workflow &workflow, QString outDir, int nodes);
    /** Called when a step begins (done = false) and when it has its result (done = true); steps
     *  are numbered like the window's pages, 0 (nodes) to 5 (report) and 6 (deploy). */
    void setStepHook(std::function<void(int step, bool done)> hook) { m_hook = std::move(hook); }
    /** How long the student runs on the nodes' cameras at the end (step 6, after the
     *  evaluation). Positive: for that long, then the report (with its Deploy page) is written
     *  and finished() follows. 0: the report first, then the student runs on until the user stops
     *  it — the window's demo ends on the live grid; step 6 is done once every node reported. */
    void setDeploySeconds(double seconds) { m_deploySeconds = seconds; }
    void start();

Q_SIGNALS:
    void finished(int status);

private:
    void step(const QString &text);
    void fail(const QString &text);
    void onTaskFinished(app::Task task, bool ok, const QString &message);
    void writeReport();
    /** Step 8: the student on the nodes' cameras (deploySeconds; 0: until stopped). */
    void deploy();
    void reportDeployment();
    void viewed(const QString &node); // a node reported, or is out of the run
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
    double m_deploySeconds = 10.0;
    QStringList m_viewed; // the nodes that reported while the student runs on them
};

} // namespace edgetrain::gui

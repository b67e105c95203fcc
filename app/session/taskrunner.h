#pragma once

#include <QElapsedTimer>
#include <QFuture>
#include <QObject>
#include <QString>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <functional>
#include <memory>

namespace edgetrain::app {

/** The workflow's long tasks; one runs at a time. */
enum class Task {
    None,
    Labelling,
    Dataset,
    Training,
    Evaluation,
    Export,
    SelfTraining,
    ClusterPlan,
    Deployment,
    DisagreementPick
};
QString taskName(Task task);

/**
 * Runs one long task at a time off the GUI thread and reports on the thread that owns the runner
 * (the GUI thread): started(), progress() at most ~10 times a second (the last step always), and
 * the task's `done` callback with the work's result. A task run elsewhere (training, on its own
 * thread) is marked with begin() / end() so that nothing else starts meanwhile.
 *
 * The work gets a Report callback and a stop flag it must poll; cancel() raises the flag. The
 * work must not throw (each task turns its exceptions into its result's error). The runner's
 * destructor raises the flag and waits for the work to return; a `done` not delivered by then
 * is dropped.
 */
class TaskRunner : public QObject
{
    Q_OBJECT

public:
    /** Progress from the work's thread: `done` of `total` steps, and what is being done. */
    using Report = std::function<void(int done, int total, const QString &text)>;

    explicit TaskRunner(QObject *parent = nullptr);
    ~TaskRunner() override;

    /** The running task, or Task::None. */
    Task current() const { return m_task; }

    /**
     * Starts `work(report, stop)` on the global thread pool and calls `done(result)` on this
     * object's thread when it returns. The caller checks current() == Task::None first.
     */
    template <typename Work, typename Done> void run(Task task, Work work, Done done)
    {
        begin(task);
        const Report report = reporter(task);
        m_future = QtConcurrent::run([this, work, done, report, stop = m_stop] {
            auto result = work(report, stop.get());
            QMetaObject::invokeMethod(
                this, [done, result = std::move(result)]() mutable { done(result); },
                Qt::QueuedConnection);
        });
    }

    /** Marks `task`, run by someone else, as the running one; emits started(). */
    void begin(Task task);
    /** The running task ended (whoever ran it): another can start. */
    void end(Task task);
    /** Asks the running task's work to stop (it returns at its next check of the flag). */
    void cancel();

Q_SIGNALS:
    void started(edgetrain::app::Task task);
    void progress(edgetrain::app::Task task, int done, int total, const QString &text);

private:
    Report reporter(Task task);

    Task m_task = Task::None;
    std::shared_ptr<std::atomic<bool>> m_stop;
    QFuture<void> m_future;
};

} // namespace edgetrain::app

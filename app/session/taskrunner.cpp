#include "taskrunner.h"

namespace edgetrain::app {

QString taskName(Task task)
{
    switch (task) {
    case Task::None:
        return QStringLiteral("idle");
    case Task::Labelling:
        return QStringLiteral("labelling");
    case Task::Dataset:
        return QStringLiteral("building the dataset");
    case Task::Training:
        return QStringLiteral("training");
    case Task::Evaluation:
        return QStringLiteral("evaluating");
    case Task::Export:
        return QStringLiteral("exporting");
    case Task::SelfTraining:
        return QStringLiteral("self-training");
    case Task::ClusterPlan:
        return QStringLiteral("comparing clusters");
    case Task::Deployment:
        return QStringLiteral("running the student on the devices");
    case Task::DisagreementPick:
        return QStringLiteral("looking for frames where the detectors disagree");
    }
    return {};
}

TaskRunner::TaskRunner(QObject *parent) : QObject(parent) {}

TaskRunner::~TaskRunner()
{
    cancel();
    m_future.waitForFinished();
}

void TaskRunner::begin(Task task)
{
    m_task = task;
    m_stop = std::make_shared<std::atomic<bool>>(false);
    Q_EMIT started(task);
}

void TaskRunner::end(Task task)
{
    if (m_task == task)
        m_task = Task::None;
    m_stop.reset();
}

void TaskRunner::cancel()
{
    if (m_stop)
        m_stop->store(true);
}

TaskRunner::Report TaskRunner::reporter(Task task)
{
    // Progress reaches the GUI at most ~10 times a second; the last step always does.
    auto lastPost = std::make_shared<std::atomic<qint64>>(0);
    auto clock = std::make_shared<QElapsedTimer>();
    clock->start();
    return [this, task, lastPost, clock](int d, int total, const QString &text) {
        const qint64 now = clock->elapsed();
        if (d < total && now - lastPost->load() < 100)
            return;
        lastPost->store(now);
        QMetaObject::invokeMethod(
            this, [this, task, d, total, text] { Q_EMIT progress(task, d, total, text); },
            Qt::QueuedConnection);
    };
}

} // namespace edgetrain::app

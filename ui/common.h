#pragma once

#include "app/session/workflow.h"

#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;

namespace edgetrain::ui {

/** A page's title and the one sentence that says what the step is for. */
QWidget *pageHeader(const QString &title, const QString &explanation, QWidget *parent);

/**
 * Progress of one kind of long task: a bar, what is being done, and Cancel. Shows the result
 * (or the error, in red) when the task ends.
 */
class TaskStrip : public QWidget
{
    Q_OBJECT

public:
    TaskStrip(app::Workflow *workflow, app::Task task, QWidget *parent = nullptr);

private:
    QProgressBar *m_bar;
    QLabel *m_text;
    QPushButton *m_cancel;
};

} // namespace edgetrain::ui

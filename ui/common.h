#pragma once

#include "app/report/wording.h"
#include "app/session/workflow.h"

#include <QColor>
#include <QIcon>
#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;

namespace edgetrain::ui {

/** A page's title and the one sentence that says what the step is for (in the palette's muted
 *  text colour, readable on the window's background). */
QWidget *pageHeader(const QString &title, const QString &explanation, QWidget *parent);
/** The explanation label of a pageHeader(), for a page whose sentence depends on the session. */
QLabel *headerExplanation(QWidget *header);

/** A style sheet giving a label text `colour` (one of app::palette's text colours). */
QString textColour(const QColor &colour);

// Plurals and ordinals: the reports' words (app/report/wording.h), the same in the window.
using app::wording::counted;
using app::wording::everyNth;
using app::wording::ordinal;

/**
 * An action's icon: the desktop theme's `themeName` where the theme has it (the window then looks
 * like the desktop's other programs), else ours, `:/icons/<file>.svg` (ui/icons.qrc). With an
 * empty `themeName` always ours (the steps and the cluster key have no theme names).
 */
QIcon actionIcon(const QString &themeName, const QString &file);

/** The folder a file dialog for `purpose` ("sessions", "keys") opens in: the one chosen there
 *  last time (QSettings), else the home folder. */
QString lastFolder(const QString &purpose);
/** Remembers `folder` for the next file dialog for `purpose`. */
void rememberFolder(const QString &purpose, const QString &folder);

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

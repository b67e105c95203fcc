#pragma once

#include <QStringList>
#include <QWidget>

class QListWidget;
class QPushButton;

namespace edgetrain::ui {

/**
 * What the window shows before a session is open: start a new session, open one (or a recent
 * one), run the demo, or rehearse with local nodes. The page only asks: the window (and, for the
 * demo, the program) does what each request means.
 */
class StartPage : public QWidget
{
    Q_OBJECT

public:
    explicit StartPage(QWidget *parent = nullptr);

    /** The recent session folders, newest first (shown as a list; an empty list says so). */
    void setRecentSessions(const QStringList &dirs);
    QListWidget *recentList() const { return m_recent; }

Q_SIGNALS:
    void newSessionRequested();
    void openSessionRequested();
    void recentSessionRequested(const QString &dir);
    void demoRequested();
    void rehearsalRequested();

private:
    QListWidget *m_recent;
    QPushButton *m_openRecent;
};

} // namespace edgetrain::ui

#include "startpage.h"

#include "common.h"

#include <QDir>
#include <QFileInfo>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace edgetrain::ui {

StartPage::StartPage(QWidget *parent) : QWidget(parent)
{
    auto *outer = new QHBoxLayout(this);
    auto *column = new QVBoxLayout;
    outer->addStretch(1);
    outer->addLayout(column, 4);
    outer->addStretch(1);

    column->addStretch(1);
    auto *title = new QLabel(tr("EdgeTrain %1").arg(QStringLiteral(EDGETRAIN_VERSION)), this);
    QFont f = title->font();
    f.setPointSizeF(f.pointSizeF() * 2.0);
    f.setBold(true);
    title->setFont(f);
    column->addWidget(title);
    auto *lead = new QLabel(tr("Train a student detector for one camera on the edge devices next "
                               "to it. A session is a folder that holds every step."),
                            this);
    lead->setWordWrap(true);
    column->addWidget(lead);
    column->addSpacing(16);

    // One button per way in, each with the sentence that says what it does.
    auto *grid = new QGridLayout;
    grid->setHorizontalSpacing(16);
    grid->setVerticalSpacing(10);
    grid->setColumnStretch(1, 1);
    auto addChoice = [this, grid](const QString &objectName, const QIcon &icon, const QString &text,
                                  const QString &explanation) {
        const int row = grid->rowCount();
        auto *button = new QPushButton(icon, text, this);
        button->setObjectName(objectName);
        button->setIconSize(QSize(24, 24));
        button->setMinimumHeight(40);
        button->setStyleSheet(QStringLiteral("text-align: left; padding: 4px 12px;"));
        auto *label = new QLabel(explanation, this);
        label->setWordWrap(true);
        label->setBuddy(button);
        grid->addWidget(button, row, 0);
        grid->addWidget(label, row, 1);
        return button;
    };
    QPushButton *create =
        addChoice(QStringLiteral("newSession"),
                  actionIcon(QStringLiteral("document-new"), QStringLiteral("new-session")),
                  tr("New session…"), tr("Choose an empty folder for a new session."));
    QPushButton *open =
        addChoice(QStringLiteral("openSession"),
                  actionIcon(QStringLiteral("document-open"), QStringLiteral("open-session")),
                  tr("Open session…"), tr("Continue a session folder from an earlier day."));
    QPushButton *demo = addChoice(
        QStringLiteral("runDemo"),
        actionIcon(QStringLiteral("media-playback-start"), QStringLiteral("demo")),
        tr("Run the demo"),
        tr("Three local nodes and a ready session: vtest.avi, the HOG teacher with motion, 24 "
           "verified frames. Click through the eight steps; the last runs the student on the "
           "nodes' cameras."));
    QPushButton *rehearse =
        addChoice(QStringLiteral("rehearse"), actionIcon(QString(), QStringLiteral("rehearse")),
                  tr("Rehearse with local nodes…"),
                  tr("A new session with emulated devices on this machine (an edge lab: "
                     "Raspberry Pi profiles, shaped links), to try the whole path before a site "
                     "visit."));
    column->addLayout(grid);
    column->addSpacing(20);

    auto *recentTitle = new QLabel(tr("Recent sessions"), this);
    QFont bold = recentTitle->font();
    bold.setBold(true);
    recentTitle->setFont(bold);
    column->addWidget(recentTitle);
    m_recent = new QListWidget(this);
    m_recent->setObjectName(QStringLiteral("recentSessions"));
    m_recent->setMaximumHeight(180);
    column->addWidget(m_recent);
    auto *recentRow = new QHBoxLayout;
    m_openRecent = new QPushButton(
        actionIcon(QStringLiteral("document-open-recent"), QStringLiteral("open-recent")),
        tr("Open recent"), this);
    m_openRecent->setObjectName(QStringLiteral("openRecent"));
    recentRow->addStretch(1);
    recentRow->addWidget(m_openRecent);
    column->addLayout(recentRow);
    column->addStretch(2);

    connect(create, &QPushButton::clicked, this, &StartPage::newSessionRequested);
    connect(open, &QPushButton::clicked, this, &StartPage::openSessionRequested);
    connect(demo, &QPushButton::clicked, this, &StartPage::demoRequested);
    connect(rehearse, &QPushButton::clicked, this, &StartPage::rehearsalRequested);
    auto openSelected = [this] {
        if (QListWidgetItem *item = m_recent->currentItem();
            item && item->flags() != Qt::NoItemFlags)
            Q_EMIT recentSessionRequested(item->data(Qt::UserRole).toString());
    };
    connect(m_openRecent, &QPushButton::clicked, this, openSelected);
    connect(m_recent, &QListWidget::itemActivated, this, openSelected);
    connect(m_recent, &QListWidget::currentRowChanged, this, [this](int row) {
        m_openRecent->setEnabled(row >= 0 && m_recent->item(row)->flags() != Qt::NoItemFlags);
    });
    setRecentSessions({});
}

void StartPage::setRecentSessions(const QStringList &dirs)
{
    m_recent->clear();
    for (const QString &dir : dirs) {
        auto *item = new QListWidgetItem(
            actionIcon(QStringLiteral("folder"), QStringLiteral("open-session")),
            QStringLiteral("%1  —  %2")
                .arg(QFileInfo(dir).fileName(), QDir::toNativeSeparators(dir)),
            m_recent);
        item->setData(Qt::UserRole, dir);
        item->setToolTip(dir);
    }
    if (dirs.isEmpty()) {
        auto *none = new QListWidgetItem(tr("(none yet)"), m_recent);
        none->setFlags(Qt::NoItemFlags);
    } else {
        m_recent->setCurrentRow(0);
    }
    m_openRecent->setEnabled(!dirs.isEmpty());
}

} // namespace edgetrain::ui

#include "common.h"

#include "app/report/palette.h"

#include <QDir>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QVBoxLayout>

// The icons are compiled into this static library: its resources are registered by hand (outside
// any namespace, as Q_INIT_RESOURCE wants).
static void initIconResource()
{
    Q_INIT_RESOURCE(icons);
}

namespace edgetrain::ui {

QIcon actionIcon(const QString &themeName, const QString &file)
{
    static const bool registered = (initIconResource(), true);
    Q_UNUSED(registered);
    const QIcon ours(QStringLiteral(":/icons/%1.svg").arg(file));
    return themeName.isEmpty() ? ours : QIcon::fromTheme(themeName, ours);
}

QString lastFolder(const QString &purpose)
{
    const QString dir = QSettings().value(QStringLiteral("folders/") + purpose).toString();
    return !dir.isEmpty() && QDir(dir).exists() ? dir : QDir::homePath();
}

void rememberFolder(const QString &purpose, const QString &folder)
{
    QSettings().setValue(QStringLiteral("folders/") + purpose, folder);
}

QWidget *pageHeader(const QString &title, const QString &explanation, QWidget *parent)
{
    auto *w = new QWidget(parent);
    auto *l = new QVBoxLayout(w);
    l->setContentsMargins(0, 0, 0, 4);
    l->setSpacing(2);
    auto *t = new QLabel(title, w);
    QFont f = t->font();
    f.setPointSizeF(f.pointSizeF() * 1.45);
    f.setBold(true);
    t->setFont(f);
    auto *e = new QLabel(explanation, w);
    e->setObjectName(QStringLiteral("explanation"));
    e->setWordWrap(true);
    e->setStyleSheet(textColour(app::palette::kMutedText));
    l->addWidget(t);
    l->addWidget(e);
    return w;
}

QLabel *headerExplanation(QWidget *header)
{
    return header->findChild<QLabel *>(QStringLiteral("explanation"));
}

QString textColour(const QColor &colour)
{
    return QStringLiteral("color: %1;").arg(colour.name());
}

TaskStrip::TaskStrip(app::Workflow *workflow, app::Task task, QWidget *parent) : QWidget(parent)
{
    auto *l = new QHBoxLayout(this);
    l->setContentsMargins(0, 0, 0, 0);
    m_bar = new QProgressBar(this);
    m_bar->setMaximumWidth(260);
    m_bar->setTextVisible(true);
    m_bar->setRange(0, 1);
    m_bar->setValue(0);
    m_text = new QLabel(this);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_text->setWordWrap(true);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setEnabled(false);
    l->addWidget(m_bar);
    l->addWidget(m_text, 1);
    l->addWidget(m_cancel);
    connect(m_cancel, &QPushButton::clicked, workflow, [workflow, task] {
        if (task == app::Task::Training)
            workflow->stopTraining();
        else
            workflow->cancel();
    });
    connect(workflow, &app::Workflow::taskStarted, this, [this, task](app::Task t) {
        if (t != task)
            return;
        m_bar->setRange(0, 0); // busy until the first progress report
        m_text->setStyleSheet(QString());
        m_text->setText(tr("starting…"));
        m_cancel->setEnabled(true);
    });
    connect(workflow, &app::Workflow::taskProgress, this,
            [this, task](app::Task t, int done, int total, const QString &text) {
                if (t != task)
                    return;
                if (total > 0) {
                    m_bar->setRange(0, total);
                    m_bar->setValue(std::min(done, total));
                }
                m_text->setText(text);
            });
    connect(workflow, &app::Workflow::taskFinished, this,
            [this, task](app::Task t, bool ok, const QString &text) {
                if (t != task)
                    return;
                m_bar->setRange(0, 1);
                m_bar->setValue(ok ? 1 : 0);
                m_text->setStyleSheet(ok ? QString() : textColour(app::palette::kError));
                m_text->setText(text);
                m_cancel->setEnabled(false);
            });
}

} // namespace edgetrain::ui

#include "verifypage.h"

#include "app/report/palette.h"
#include "common.h"
#include "truthview.h"

#include <QAction>
#include <QCoreApplication>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>
#include <QUndoStack>
#include <QVBoxLayout>

#include <algorithm>

namespace edgetrain::ui {

VerifyPage::VerifyPage(app::Workflow *workflow, QWidget *parent)
    : QWidget(parent), m_workflow(workflow), m_verification(workflow->verification())
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("4  Verify"),
        tr("Ground truth by hand: on frames picked over the video (mostly ones the student never "
           "trains on), make the boxes true — accept a proposal with a click, drag or resize a "
           "box, "
           "draw the ones nobody found. The report measures every detector against these frames."),
        this));

    QHBoxLayout *bar = toolBar();
    addUndoButtons(bar);
    layout->addLayout(bar);
    // The disagreement pick runs the detectors over the video: its progress and Cancel, shown
    // from the first pick on (the editor keeps the room until then).
    auto *strip = new TaskStrip(workflow, app::Task::DisagreementPick, this);
    strip->hide();
    connect(workflow, &app::Workflow::taskStarted, strip, [strip](app::Task task) {
        if (task == app::Task::DisagreementPick)
            strip->show();
    });
    layout->addWidget(strip);

    auto *main = new QHBoxLayout;
    m_list = new QListWidget(this);
    m_list->setFixedWidth(210);
    m_list->setFocusPolicy(Qt::NoFocus);
    main->addWidget(m_list);
    m_view = new TruthView(m_verification, this);
    main->addWidget(m_view, 1);
    layout->addLayout(main, 1);
    // Once a student exists: how sure the figures are, and where to verify next.
    m_trustRow = new QWidget(this);
    auto *trust = new QHBoxLayout(m_trustRow);
    trust->setContentsMargins(0, 0, 0, 0);
    m_enough = new QLabel(m_trustRow);
    m_enough->setObjectName(QStringLiteral("verifyEnough"));
    m_enough->setWordWrap(true);
    m_enough->setTextFormat(Qt::RichText);
    trust->addWidget(m_enough, 1);
    trust->addWidget(m_pickDisagree, 0, Qt::AlignTop);
    m_trustRow->hide();
    layout->addWidget(m_trustRow);
    m_info = new QLabel(this);
    m_info->setWordWrap(true);
    m_info->setText(
        tr("Mouse: click a proposal to accept it · drag a box to move it · drag a handle "
           "to resize · drag on empty space to draw. Keys: N/→ next, P/← previous, "
           "A accept all, I ignore, Del delete, D done, Ctrl+Z undo, Ctrl+Shift+Z redo."));
    m_info->setStyleSheet(textColour(app::palette::kMutedText));
    layout->addWidget(m_info);

    connectControls();
    connectSources();
    onSession();
}

QHBoxLayout *VerifyPage::toolBar()
{
    auto *bar = new QHBoxLayout;
    bar->addWidget(new QLabel(tr("Frames to verify:"), this));
    m_count = new QSpinBox(this);
    m_count->setRange(1, 1000);
    m_count->setValue(20);
    bar->addWidget(m_count);
    m_pick = new QPushButton(tr("Pick frames"), this);
    m_pick->setToolTip(tr("Picks frames spread over the video, favouring the held-out part and "
                          "frames where nobody was labelled; frames already verified are kept."));
    bar->addWidget(m_pick);
    // Shown under the editor once there is a student to disagree with (see m_trustRow).
    m_pickDisagree = new QPushButton(tr("Pick where they disagree"), this);
    m_pickDisagree->setStatusTip(
        tr("After training: runs teacher, motion and the student over the video and adds as "
           "many frames as \"Frames to verify\" says, where they and the tracker disagree most "
           "(boxes only one has, scores near the "
           "student's threshold), spread over time. Your review time goes where it matters; the "
           "report's headline stays on the spread pick's frames, since these are the hardest."));
    m_progress = new QLabel(this);
    QFont bold = m_progress->font();
    bold.setBold(true);
    m_progress->setFont(bold);
    bar->addSpacing(12);
    bar->addWidget(m_progress);
    bar->addStretch(1);
    auto button = [this, bar](const QString &text, const QString &tip) {
        auto *b = new QPushButton(text, this);
        b->setToolTip(tip);
        b->setFocusPolicy(Qt::NoFocus); // the keys keep going to the editor
        bar->addWidget(b);
        return b;
    };
    m_prev = button(tr("◀ Previous"), tr("Previous frame (P, Left)"));
    m_next = button(tr("Next ▶"), tr("Next frame (N, Right)"));
    m_acceptAll =
        button(tr("Accept all (A)"), tr("Accept every proposal on this frame into the truth"));
    m_ignore =
        button(tr("Ignore (I)"), tr("Mark the selected box ignore: too small or mostly hidden, "
                                    "neither required nor a false detection"));
    m_delete = button(tr("Delete (Del)"), tr("Delete the selected box"));
    m_done = button(tr("Done (D)"), tr("Mark the frame done and go on to the next one"));
    return bar;
}

void VerifyPage::addUndoButtons(QHBoxLayout *bar)
{
    m_undo = new QToolButton(this);
    m_redo = new QToolButton(this);
    // Fixed names on the buttons (the stack's own actions grow with the command's text); what
    // would be undone is in the tooltip.
    QUndoStack *stack = m_verification->undoStack();
    auto *undo = new QAction(tr("Undo"), this);
    auto *redo = new QAction(tr("Redo"), this);
    undo->setShortcut(QKeySequence::Undo);
    redo->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z));
    for (QAction *a : {undo, redo}) {
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        a->setEnabled(false);
        addAction(a);
    }
    connect(undo, &QAction::triggered, stack, &QUndoStack::undo);
    connect(redo, &QAction::triggered, stack, &QUndoStack::redo);
    connect(stack, &QUndoStack::canUndoChanged, undo, &QAction::setEnabled);
    connect(stack, &QUndoStack::canRedoChanged, redo, &QAction::setEnabled);
    connect(stack, &QUndoStack::undoTextChanged, undo,
            [undo](const QString &text) { undo->setToolTip(tr("Undo %1 (Ctrl+Z)").arg(text)); });
    connect(stack, &QUndoStack::redoTextChanged, redo, [redo](const QString &text) {
        redo->setToolTip(tr("Redo %1 (Ctrl+Shift+Z)").arg(text));
    });
    m_undo->setDefaultAction(undo);
    m_redo->setDefaultAction(redo);
    for (QToolButton *b : {m_undo, m_redo}) {
        b->setFocusPolicy(Qt::NoFocus);
        b->setToolButtonStyle(Qt::ToolButtonTextOnly);
        bar->addWidget(b);
    }
}

void VerifyPage::connectControls()
{
    connect(m_pick, &QPushButton::clicked, this, [this] {
        const auto labels = m_workflow->labels();
        const int frames = m_sourceFrames > 0 ? m_sourceFrames : labels ? labels->stats.frames : 0;
        if (frames <= 0) {
            Q_EMIT m_workflow->message(
                tr("no frames to pick from: choose a source in Capture & label"));
            return;
        }
        m_verification->pickFrames(labels.get(), frames, m_count->value(),
                                   m_workflow->session().dataset.seed,
                                   m_workflow->session().capture.source.toStdString(), frameSize());
        if (m_current < 0 || !m_verification->truth().frame(m_current)) {
            const std::vector<int> picked = m_verification->frames();
            if (!picked.empty())
                showFrame(picked.front());
        }
    });
    connect(m_pickDisagree, &QPushButton::clicked, this, [this] {
        m_workflow->startDisagreementPick(m_count->value(), m_sourceFrames, frameSize());
    });
    connect(m_prev, &QPushButton::clicked, this, [this] { step(-1); });
    connect(m_next, &QPushButton::clicked, this, [this] { step(+1); });
    connect(m_acceptAll, &QPushButton::clicked, this, [this] {
        m_view->setFocus();
        QKeyEvent key(QEvent::KeyPress, Qt::Key_A, Qt::NoModifier, QStringLiteral("a"));
        QCoreApplication::sendEvent(m_view, &key);
    });
    connect(m_ignore, &QPushButton::clicked, this, [this] {
        QKeyEvent key(QEvent::KeyPress, Qt::Key_I, Qt::NoModifier, QStringLiteral("i"));
        QCoreApplication::sendEvent(m_view, &key);
    });
    connect(m_delete, &QPushButton::clicked, this, [this] {
        QKeyEvent key(QEvent::KeyPress, Qt::Key_Delete, Qt::NoModifier);
        QCoreApplication::sendEvent(m_view, &key);
    });
    connect(m_done, &QPushButton::clicked, this, &VerifyPage::toggleDone);
    connect(m_view, &TruthView::nextFrameRequested, this, [this] { step(+1); });
    connect(m_view, &TruthView::previousFrameRequested, this, [this] { step(-1); });
    connect(m_view, &TruthView::doneRequested, this, &VerifyPage::toggleDone);
    connect(m_view, &TruthView::selectionChanged, this, &VerifyPage::refresh);
    connect(m_list, &QListWidget::itemClicked, this, [this](QListWidgetItem *item) {
        showFrame(item->data(Qt::UserRole).toInt());
        m_view->setFocus();
    });
}

void VerifyPage::connectSources()
{
    connect(&m_frames, &FrameLoader::frameReady, this, [this](int frame, const QImage &image) {
        if (frame != m_current)
            return; // the user moved on
        m_view->setFrame(frame, image);
        updateProposals();
    });
    connect(&m_frames, &FrameLoader::sourceInfo, this, [this](int frames, double, QSize size) {
        m_sourceFrames = frames;
        m_sourceSize = size;
        if (m_current >= 0)
            m_frames.request(m_current);
        refresh();
    });
    connect(&m_frames, &FrameLoader::failed, this, [this](const QString &text) {
        m_sourceFailed = true;
        Q_EMIT m_workflow->message(text);
        refresh();
    });
    connect(m_verification, &app::Verification::truthChanged, this, [this](int frame) {
        // An undo or redo elsewhere shows the frame it changed.
        if (frame >= 0 && frame != m_current && m_verification->truth().frame(frame))
            showFrame(frame);
        refresh();
    });
    connect(m_verification, &app::Verification::saveFailed, this,
            [this](const QString &text) { Q_EMIT m_workflow->message(text); });
    connect(m_workflow, &app::Workflow::sessionChanged, this, &VerifyPage::onSession);
    connect(m_workflow, &app::Workflow::settingsChanged, this, [this](app::Settings part) {
        if (part == app::Settings::Capture && m_workflow->session().capture.source != m_shownSource)
            onSession(); // another video: other frames
    });
    connect(m_workflow, &app::Workflow::labelsChanged, this, &VerifyPage::updateProposals);
    connect(m_workflow, &app::Workflow::evaluationChanged, this, &VerifyPage::updateEnough);
    connect(m_workflow, &app::Workflow::taskStarted, this, &VerifyPage::refresh);
    connect(m_workflow, &app::Workflow::taskFinished, this,
            [this](app::Task task, bool ok, const QString &) {
                refresh();
                if (task != app::Task::DisagreementPick || !ok)
                    return;
                // Show the first new frame still to verify.
                for (const vision::TruthFrame &f : m_verification->truth().frames)
                    if (!f.done && f.pick == "disagreement") {
                        showFrame(f.index);
                        break;
                    }
            });
}

cv::Size VerifyPage::frameSize() const
{
    if (m_sourceSize.isValid())
        return cv::Size(m_sourceSize.width(), m_sourceSize.height());
    const auto labels = m_workflow->labels();
    return labels ? labels->frame_size : cv::Size();
}

void VerifyPage::updateEnough()
{
    const app::VerifiedEnough e = m_workflow->verifiedEnough();
    // Until the student is evaluated on verified frames there is nothing to say.
    m_enough->setVisible(!e.headline.isEmpty());
    if (e.headline.isEmpty())
        return;
    QString html = QStringLiteral("<b>%1.</b>").arg(e.headline.toHtmlEscaped());
    for (const QString &c : e.comparisons)
        html += QStringLiteral(" ") + c.toHtmlEscaped();
    if (e.pending > 0)
        html += tr(" <i>%1 after the last evaluation: evaluate again (step 7) to count "
                   "them.</i>")
                    .arg(e.pending == 1 ? tr("1 verified frame came")
                                        : tr("%1 verified frames came").arg(e.pending));
    m_enough->setText(html);
}

void VerifyPage::onSession()
{
    m_sourceFrames = 0;
    m_sourceFailed = false;
    m_sourceSize = QSize();
    m_current = -1;
    m_view->setFrame(-1, QImage());
    const QString source = m_workflow->session().capture.source;
    m_shownSource = source;
    if (!source.isEmpty())
        m_frames.setSource(source);
    const std::vector<int> picked = m_verification->frames();
    // Go on where the user stopped: the first frame not done yet.
    const auto &frames = m_verification->truth().frames;
    const auto open = std::find_if(frames.begin(), frames.end(),
                                   [](const vision::TruthFrame &f) { return !f.done; });
    if (open != frames.end())
        showFrame(open->index);
    else if (!picked.empty())
        showFrame(picked.front());
    refresh();
    updateEnough();
}

void VerifyPage::showFrame(int frame)
{
    m_current = frame;
    m_frames.request(frame);
    refresh();
}

void VerifyPage::step(int direction)
{
    const std::vector<int> picked = m_verification->frames();
    if (picked.empty())
        return;
    auto at = std::lower_bound(picked.begin(), picked.end(), m_current);
    int i = int(at - picked.begin());
    if (direction > 0)
        i = (at != picked.end() && *at == m_current) ? i + 1 : i;
    else
        i = i - 1;
    if (i >= 0 && i < int(picked.size()))
        showFrame(picked[std::size_t(i)]);
}

void VerifyPage::toggleDone()
{
    if (m_current < 0)
        return;
    const vision::TruthFrame *f = m_verification->truth().frame(m_current);
    const bool done = !(f && f->done);
    m_verification->setDone(m_current, done);
    if (!done)
        return;
    // Go on to the next frame still to do (after this one, then from the start).
    const auto &frames = m_verification->truth().frames;
    auto next = std::find_if(frames.begin(), frames.end(), [this](const vision::TruthFrame &t) {
        return !t.done && t.index > m_current;
    });
    if (next == frames.end())
        next = std::find_if(frames.begin(), frames.end(),
                            [](const vision::TruthFrame &t) { return !t.done; });
    if (next != frames.end())
        showFrame(next->index);
}

void VerifyPage::updateProposals()
{
    const auto labels = m_workflow->labels();
    m_view->setProposals(labels && m_view->frame() >= 0
                             ? app::Proposal::fromLabels(*labels, m_view->frame())
                             : std::vector<app::Proposal>());
}

void VerifyPage::refresh()
{
    const vision::GroundTruth &truth = m_verification->truth();
    m_list->clear();
    for (const vision::TruthFrame &f : truth.frames) {
        int ignored = 0;
        for (const vision::TruthBox &b : f.boxes)
            ignored += b.ignore ? 1 : 0;
        QString text = tr("frame %1 · %2")
                           .arg(f.index)
                           .arg(counted(qint64(f.boxes.size()), tr("box"), tr("boxes")));
        if (ignored > 0)
            text += tr(", %1 ignore").arg(ignored);
        if (f.pick == "disagreement")
            text += tr(" · disagree");
        auto *item = new QListWidgetItem(
            (f.done ? QStringLiteral("✔ ") : QStringLiteral("○ ")) + text, m_list);
        item->setData(Qt::UserRole, f.index);
        if (f.done)
            item->setForeground(app::palette::kGood);
        if (f.index == m_current)
            m_list->setCurrentItem(item);
    }
    const int n = int(truth.frames.size());
    m_progress->setText(n == 0 ? tr("no frames picked yet")
                               : tr("%1 of %2 done").arg(truth.doneFrames()).arg(n));
    const vision::TruthFrame *f = m_current >= 0 ? truth.frame(m_current) : nullptr;
    const bool selected =
        f && m_view->selectedBox() >= 0 && m_view->selectedBox() < int(f->boxes.size());
    m_ignore->setEnabled(selected);
    m_delete->setEnabled(selected);
    m_done->setEnabled(m_current >= 0);
    m_done->setText(f && f->done ? tr("Reopen (D)") : tr("Done (D)"));
    m_acceptAll->setEnabled(m_current >= 0);
    // Picking waits for the source's length (the held-out span runs to its end); without a
    // source that opens, the labelled frames are all there is.
    m_pick->setEnabled(m_sourceFrames > 0 ||
                       (m_workflow->labels() &&
                        (m_workflow->session().capture.source.isEmpty() || m_sourceFailed)));
    const QString blocker = m_workflow->disagreementBlocker();
    m_pickDisagree->setEnabled(blocker.isEmpty());
    const app::Session &session = m_workflow->session();
    m_trustRow->setVisible(session.dataset.kind != QLatin1String("crops") &&
                           !session.training.weights.isEmpty());
    // Disabled, the tooltip says why.
    m_pickDisagree->setToolTip(blocker.isEmpty() ? m_pickDisagree->statusTip() : blocker);
    const std::vector<int> picked = m_verification->frames();
    m_prev->setEnabled(!picked.empty() && m_current > picked.front());
    m_next->setEnabled(!picked.empty() && m_current < picked.back());
}

} // namespace edgetrain::ui

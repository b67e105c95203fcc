#pragma once

#include "app/session/workflow.h"
#include "frameloader.h"

#include <QWidget>

class QHBoxLayout;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QToolButton;

namespace edgetrain::ui {

class TruthView;

/**
 * Step 4: ground truth made by hand. Picks frames of the source to verify (spread over the video,
 * favouring the frames the student never trains on), shows each with the labels' proposals, and
 * lets the user make the boxes true in a TruthView; every edit is saved to truth.json at once.
 */
class VerifyPage : public QWidget
{
    Q_OBJECT

public:
    explicit VerifyPage(app::Workflow *workflow, QWidget *parent = nullptr);

    TruthView *view() const { return m_view; }
    QListWidget *frameList() const { return m_list; }
    QSpinBox *countBox() const { return m_count; }
    QPushButton *pickButton() const { return m_pick; }
    /** "Pick where they disagree": frames where teacher, motion, tracker and student disagree. */
    QPushButton *disagreementButton() const { return m_pickDisagree; }
    /** How sure the verified figures are, and whether more frames are needed. */
    QLabel *enoughLabel() const { return m_enough; }
    QLabel *progressLabel() const { return m_progress; }
    /** The frame being verified (-1: none). */
    int currentFrame() const { return m_current; }
    /** Shows picked frame `frame` (it is loaded off the GUI thread). */
    void showFrame(int frame);

private:
    // The page's parts, made and connected once by the constructor.
    QHBoxLayout *toolBar();
    void addUndoButtons(QHBoxLayout *bar);
    void connectControls();
    void connectSources(); // the frame loader, the truth and the session
    void onSession();
    void refresh();
    void step(int direction);
    void toggleDone();
    void updateProposals();
    void updateEnough();
    /** The source's frame size (or the labels'), for a new truth file. */
    cv::Size frameSize() const;

    app::Workflow *m_workflow;
    app::Verification *m_verification;
    FrameLoader m_frames;
    int m_sourceFrames = 0;
    bool m_sourceFailed = false; // the source did not open: pick from the labels' frames
    QString m_shownSource;       // the capture source the frames are read from
    QSize m_sourceSize;
    int m_current = -1;
    QSpinBox *m_count;
    QPushButton *m_pick, *m_pickDisagree;
    QLabel *m_progress, *m_info, *m_enough;
    QWidget *m_trustRow;
    QListWidget *m_list;
    TruthView *m_view;
    QPushButton *m_acceptAll, *m_done, *m_ignore, *m_delete, *m_prev, *m_next;
    QToolButton *m_undo, *m_redo;
};

} // namespace edgetrain::ui

#pragma once

#include "app/session/workflow.h"
#include "frameloader.h"

#include <QElapsedTimer>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSlider;
class QSpinBox;
class QVBoxLayout;

namespace edgetrain::ui {

class TrackTimeline;
class VideoView;

/** Step 2: source, teacher and tracker; labelling with progress; review of the tracks; a live
 *  preview of the session's trained full-frame student on the source ("Show student"). */
class CapturePage : public QWidget
{
    Q_OBJECT

public:
    explicit CapturePage(app::Workflow *workflow, QWidget *parent = nullptr);
    VideoView *view() const { return m_view; }
    TrackTimeline *timeline() const { return m_timeline; }
    QPushButton *labelButton() const { return m_label; }
    QComboBox *teacherBox() const { return m_teacher; }
    /** Enabled when the session has a trained full-frame student. */
    QCheckBox *studentToggle() const { return m_showStudent; }
    QLabel *studentSpeed() const { return m_studentSpeed; }

private:
    // The page's parts, made and connected once by the constructor.
    QGroupBox *settingsBox();
    QVBoxLayout *videoColumn();
    void connectControls();
    void connectWorkflow();
    void loadSettings();
    void storeSettings();
    /** The teacher's file (cascade, ONNX model) or session folder, chosen in a dialog. */
    void browseTeacher();
    void onLabels();
    void selectTrack(int id);
    void showFrame(int frame);
    /** Enables the toggle if the session has a student, and (re)loads it when shown. */
    void updateStudent();

    app::Workflow *m_workflow;
    FrameLoader m_frames;
    QComboBox *m_kind, *m_teacher, *m_tracker;
    QLineEdit *m_source, *m_teacherFile;
    QPushButton *m_teacherBrowse = nullptr;
    QSpinBox *m_every, *m_maxFrames;
    QPushButton *m_label;
    QCheckBox *m_showStudent;
    QLabel *m_studentSpeed;
    VideoView *m_view;
    QSlider *m_slider;
    TrackTimeline *m_timeline;
    QLabel *m_trackInfo;
    QPushButton *m_accept, *m_reject, *m_trim;
    QSpinBox *m_trimFirst, *m_trimLast;
    int m_selected = -1;
    int m_frameCount = 0;
    QElapsedTimer m_follow;
    bool m_storing = false; // setCapture() from this page: its widgets show the values already
};

} // namespace edgetrain::ui

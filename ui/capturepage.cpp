#include "capturepage.h"

#include "common.h"
#include "videoview.h"
#include "vision/studentteacher.h"
#include "vision/tracking.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

namespace edgetrain::ui {

namespace {

/** The teachers named by a file or folder after their kind ("cascade:FILE", "session:DIR"). */
bool teacherTakesFile(const QString &kind)
{
    return kind == QLatin1String("cascade") || kind == QLatin1String("onnx") ||
           kind == QLatin1String("session");
}

} // namespace

CapturePage::CapturePage(app::Workflow *workflow, QWidget *parent)
    : QWidget(parent), m_workflow(workflow)
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("2  Capture & label"),
        tr("The teacher labels what it recognises; the tracker carries each object backwards and "
           "forwards into the frames where the teacher fails. Review the tracks before cutting "
           "the dataset."),
        this));

    auto *split = new QHBoxLayout;
    layout->addLayout(split, 1);

    split->addWidget(settingsBox());
    split->addLayout(videoColumn(), 1);

    layout->addWidget(new TaskStrip(workflow, app::Task::Labelling, this));
    connectControls();
    connectWorkflow();
    loadSettings();
    updateStudent();
    selectTrack(-1);
}

QGroupBox *CapturePage::settingsBox()
{
    // Settings column
    auto *settings = new QGroupBox(tr("Labelling"), this);
    settings->setMaximumWidth(330);
    auto *form = new QFormLayout(settings);
    m_kind = new QComboBox(settings);
    m_kind->addItem(tr("Video file"), QStringLiteral("file"));
    m_kind->addItem(tr("Image folder"), QStringLiteral("folder"));
    m_kind->addItem(tr("Camera"), QStringLiteral("camera"));
    form->addRow(tr("Source:"), m_kind);
    auto *srcRow = new QHBoxLayout;
    m_source = new QLineEdit(settings);
    auto *browse = new QPushButton(tr("…"), settings);
    browse->setMaximumWidth(32);
    srcRow->addWidget(m_source, 1);
    srcRow->addWidget(browse);
    form->addRow(QString(), srcRow);
    m_teacher = new QComboBox(settings);
    m_teacher->addItem(tr("HOG people detector"), QStringLiteral("hog"));
    m_teacher->addItem(tr("Haar / LBP cascade"), QStringLiteral("cascade"));
    m_teacher->addItem(tr("ONNX detector or exported student (cv::dnn)"), QStringLiteral("onnx"));
    m_teacher->addItem(tr("A session's student (its folder)"), QStringLiteral("session"));
    m_teacher->addItem(tr("Motion (fixed camera)"), QStringLiteral("motion"));
    m_teacher->addItem(tr("HOG + motion (fixed camera)"), QStringLiteral("hog+motion"));
    m_teacher->setToolTip(tr("Motion: background subtraction gives each moving object's extent; "
                             "with HOG, the detector confirms and splits the motion blobs"));
    form->addRow(tr("Teacher:"), m_teacher);
    m_teacherFile = new QLineEdit(settings);
    m_teacherFile->setPlaceholderText(tr("cascade .xml, .onnx model or session folder"));
    m_teacherFile->setToolTip(
        tr("The detector's file, or the folder of an earlier session whose trained student "
           "labels this one. A second opinion: FILE?verify=cascade:OTHER.xml (or hog, "
           "onnx:MODEL) — tracks the verifier never finds are rejected. A Haar frontal-face "
           "cascade gets the LBP frontal-face cascade as its verifier unless ?verify=none"));
    m_teacherBrowse = new QPushButton(tr("…"), settings);
    m_teacherBrowse->setMaximumWidth(32);
    auto *teacherRow = new QHBoxLayout;
    teacherRow->addWidget(m_teacherFile, 1);
    teacherRow->addWidget(m_teacherBrowse);
    form->addRow(QString(), teacherRow);
    m_tracker = new QComboBox(settings);
    for (const std::string &name : vision::trackerNames())
        m_tracker->addItem(QString::fromStdString(name));
    form->addRow(tr("Tracker:"), m_tracker);
    m_every = new QSpinBox(settings);
    m_every->setRange(1, 1000);
    // "1 frame", "10 frames": the unit follows the number.
    auto everySuffix = [this](int n) { m_every->setSuffix(n == 1 ? tr(" frame") : tr(" frames")); };
    everySuffix(m_every->value());
    connect(m_every, &QSpinBox::valueChanged, m_every, everySuffix);
    m_every->setToolTip(tr("The teacher runs on every k-th frame; the tracker covers the rest"));
    form->addRow(tr("Teacher every:"), m_every);
    m_maxFrames = new QSpinBox(settings);
    m_maxFrames->setRange(0, 10000000);
    m_maxFrames->setSpecialValueText(tr("whole source"));
    form->addRow(tr("Frames:"), m_maxFrames);
    m_label = new QPushButton(tr("Label"), settings);
    m_label->setDefault(true);
    form->addRow(m_label);
    m_showStudent = new QCheckBox(tr("Show student"), settings);
    m_showStudent->setToolTip(tr(
        "Draw the trained student's detections on the frame shown (solid, named in the legend)"));
    m_studentSpeed = new QLabel(settings);
    auto *studentRow = new QHBoxLayout;
    studentRow->addWidget(m_showStudent);
    studentRow->addWidget(m_studentSpeed, 1);
    form->addRow(studentRow);

    // Track review
    m_trackInfo = new QLabel(tr("Click a track on the timeline."), settings);
    m_trackInfo->setWordWrap(true);
    form->addRow(m_trackInfo);
    auto *review = new QHBoxLayout;
    m_accept = new QPushButton(tr("Accept"), settings);
    m_reject = new QPushButton(tr("Reject"), settings);
    review->addWidget(m_accept);
    review->addWidget(m_reject);
    form->addRow(review);
    auto *trimRow = new QHBoxLayout;
    m_trimFirst = new QSpinBox(settings);
    m_trimLast = new QSpinBox(settings);
    m_trimFirst->setRange(0, 10000000);
    m_trimLast->setRange(0, 10000000);
    m_trim = new QPushButton(tr("Trim"), settings);
    trimRow->addWidget(m_trimFirst);
    trimRow->addWidget(new QLabel(QStringLiteral("–"), settings));
    trimRow->addWidget(m_trimLast);
    trimRow->addWidget(m_trim);
    form->addRow(tr("Keep frames:"), trimRow);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString kind = m_kind->currentData().toString();
        QString chosen;
        if (kind == QLatin1String("folder"))
            chosen = QFileDialog::getExistingDirectory(this, tr("Image folder"));
        else if (kind == QLatin1String("file"))
            chosen = QFileDialog::getOpenFileName(
                this, tr("Video"), QString(),
                tr("Videos (*.avi *.mp4 *.mkv *.mov *.webm);;All files (*)"));
        if (!chosen.isEmpty()) {
            m_source->setText(chosen);
            storeSettings();
            m_frames.setSource(chosen);
        }
    });
    return settings;
}

QVBoxLayout *CapturePage::videoColumn()
{
    // Video and timeline
    auto *right = new QVBoxLayout;
    m_view = new VideoView(this);
    right->addWidget(m_view, 3);
    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setRange(0, 0);
    right->addWidget(m_slider);
    m_timeline = new TrackTimeline(this);
    auto *scroll = new QScrollArea(this);
    scroll->setWidget(m_timeline);
    scroll->setWidgetResizable(true);
    scroll->setMinimumHeight(80);
    scroll->setMaximumHeight(170);
    right->addWidget(scroll, 1);
    return right;
}

void CapturePage::connectControls()
{
    connect(m_kind, &QComboBox::currentIndexChanged, this, [this] {
        if (m_kind->currentData().toString() == QLatin1String("camera") &&
            !m_source->text().startsWith(QLatin1String("camera:")) &&
            !m_source->text().startsWith(QLatin1String("/dev/video")))
            m_source->setText(QStringLiteral("camera:0"));
    });
    connect(m_source, &QLineEdit::editingFinished, this, [this] {
        storeSettings();
        if (m_kind->currentData().toString() != QLatin1String("camera"))
            m_frames.setSource(m_source->text());
    });
    connect(m_teacher, &QComboBox::currentIndexChanged, this, [this] {
        const bool withFile = teacherTakesFile(m_teacher->currentData().toString());
        m_teacherFile->setEnabled(withFile);
        m_teacherBrowse->setEnabled(withFile);
    });
    connect(m_teacherBrowse, &QPushButton::clicked, this, &CapturePage::browseTeacher);
    connect(m_showStudent, &QCheckBox::toggled, this, &CapturePage::updateStudent);
    connect(&m_frames, &FrameLoader::studentReady, this,
            [this](int frame, const QList<QRectF> &boxes, double fps) {
                if (!m_showStudent->isChecked())
                    return; // a frame read before the preview was switched off
                m_view->setStudentBoxes(frame, boxes, fps);
                m_studentSpeed->setText(
                    tr("%1 boxes · %2 frames/s").arg(boxes.size()).arg(fps, 0, 'f', 0));
            });
    connect(m_label, &QPushButton::clicked, this, [this] {
        storeSettings();
        m_workflow->startLabelling();
    });
    connect(m_slider, &QSlider::valueChanged, this, &CapturePage::showFrame);
    connect(&m_frames, &FrameLoader::frameReady, m_view, &VideoView::setFrame);
    connect(&m_frames, &FrameLoader::failed, this, [this](const QString &text) {
        m_view->showProblem(text);
        Q_EMIT m_workflow->message(text);
    });
    connect(&m_frames, &FrameLoader::sourceInfo, this, [this](int frames, double, QSize) {
        m_frameCount = frames;
        m_slider->setRange(0, std::max(0, frames - 1));
        showFrame(m_slider->value());
        m_timeline->setLabels(m_workflow->labels(), frames);
    });
    connect(m_timeline, &TrackTimeline::trackClicked, this, [this](int id, int frame) {
        selectTrack(id);
        m_slider->setValue(frame);
    });
    connect(m_accept, &QPushButton::clicked, this,
            [this] { m_workflow->setTrackAccepted(m_selected, true); });
    connect(m_reject, &QPushButton::clicked, this,
            [this] { m_workflow->setTrackAccepted(m_selected, false); });
    connect(m_trim, &QPushButton::clicked, this, [this] {
        m_workflow->trimTrack(m_selected, m_trimFirst->value(), m_trimLast->value());
    });
}

void CapturePage::connectWorkflow()
{
    // While labelling, the view follows the labeller (twice a second; boxes come at the end).
    connect(m_workflow, &app::Workflow::taskProgress, this,
            [this](app::Task task, int done, int total, const QString &) {
                if (task != app::Task::Labelling || total <= 0 ||
                    (m_follow.isValid() && m_follow.elapsed() < 500))
                    return;
                m_follow.start();
                m_slider->setValue(std::min(done, m_slider->maximum()));
            });
    connect(m_workflow, &app::Workflow::labelsChanged, this, &CapturePage::onLabels);
    connect(m_workflow, &app::Workflow::sessionChanged, this, &CapturePage::loadSettings);
    connect(m_workflow, &app::Workflow::settingsChanged, this, [this](app::Settings part) {
        if (part == app::Settings::Capture && !m_storing)
            loadSettings();
    });
    connect(m_workflow, &app::Workflow::sessionChanged, this, &CapturePage::updateStudent);
    connect(m_workflow, &app::Workflow::taskStarted, this,
            [this](app::Task) { m_label->setEnabled(false); });
    connect(m_workflow, &app::Workflow::taskFinished, this,
            [this](app::Task, bool, const QString &) {
                m_label->setEnabled(m_workflow->busy() == app::Task::None);
                updateStudent(); // a training run may have written (new) weights
            });
}

void CapturePage::loadSettings()
{
    const app::CaptureSettings &c = m_workflow->session().capture;
    m_source->setText(c.source);
    const bool camera = c.source.startsWith(QLatin1String("camera:")) ||
                        c.source.startsWith(QLatin1String("/dev/video"));
    m_kind->setCurrentIndex(camera ? 2 : QFileInfo(c.source).isDir() ? 1 : 0);
    const QString kind = c.teacher.section(QLatin1Char(':'), 0, 0);
    const bool withFile = teacherTakesFile(kind);
    m_teacher->setCurrentIndex(std::max(0, m_teacher->findData(kind)));
    m_teacherFile->setText(withFile ? c.teacher.section(QLatin1Char(':'), 1) : QString());
    m_teacherFile->setEnabled(withFile);
    m_teacherBrowse->setEnabled(withFile);
    m_tracker->setCurrentText(c.tracker);
    m_every->setValue(c.every);
    m_maxFrames->setValue(c.maxFrames);
    if (!c.source.isEmpty() && !camera)
        m_frames.setSource(c.source);
}

void CapturePage::storeSettings()
{
    app::CaptureSettings c = m_workflow->session().capture;
    c.source = m_source->text().trimmed();
    const QString kind = m_teacher->currentData().toString();
    const bool withFile = teacherTakesFile(kind);
    c.teacher = withFile ? kind + QLatin1Char(':') + m_teacherFile->text().trimmed() : kind;
    c.tracker = m_tracker->currentText();
    c.every = m_every->value();
    c.maxFrames = m_maxFrames->value();
    m_storing = true; // this page shows these values already
    m_workflow->setCapture(c);
    m_storing = false;
}

void CapturePage::onLabels()
{
    const auto labels = m_workflow->labels();
    m_view->setLabels(labels);
    m_timeline->setLabels(labels, m_frameCount);
    selectTrack(m_selected);
}

void CapturePage::selectTrack(int id)
{
    const auto labels = m_workflow->labels();
    const vision::Track *track = nullptr;
    if (labels)
        for (const vision::Track &t : labels->tracks)
            if (t.id == id && !t.boxes.empty())
                track = &t;
    m_selected = track ? id : -1;
    m_view->setSelectedTrack(m_selected);
    m_timeline->setSelectedTrack(m_selected);
    for (QWidget *w : {static_cast<QWidget *>(m_accept), static_cast<QWidget *>(m_reject),
                       static_cast<QWidget *>(m_trim), static_cast<QWidget *>(m_trimFirst),
                       static_cast<QWidget *>(m_trimLast)})
        w->setEnabled(track != nullptr);
    if (!track) {
        m_trackInfo->setText(
            labels ? tr("%1 tracks (%2 rejected). Click one on the timeline to review it.")
                         .arg(labels->tracks.size())
                         .arg(labels->stats.rejected_tracks)
                   : tr("No labels yet."));
        return;
    }
    m_trackInfo->setText(
        tr("Track #%1: frames %2–%3, %4 teacher and %5 tracker boxes, %6%7")
            .arg(track->id)
            .arg(track->boxes.front().frame)
            .arg(track->boxes.back().frame)
            .arg(track->teacherBoxes())
            .arg(track->trackerBoxes())
            .arg(track->state == vision::Track::State::Accepted ? tr("accepted") : tr("rejected"))
            .arg(track->note.empty() ? QString()
                                     : QStringLiteral(" (") + QString::fromStdString(track->note) +
                                           QLatin1Char(')')) +
        (track->failure
             ? tr("; the tracker failed at frame %1%2: %3")
                   .arg(track->failure->frame)
                   .arg(track->failure->backward ? tr(" (following it back)") : QString())
                   .arg(QString::fromStdString(track->failure->reason))
             : QString()));
    m_trimFirst->setValue(track->boxes.front().frame);
    m_trimLast->setValue(track->boxes.back().frame);
}

void CapturePage::updateStudent()
{
    const QString dir = m_workflow->session().dir;
    const bool trained =
        !dir.isEmpty() && QFileInfo::exists(QString::fromStdString(
                              vision::StudentTeacher::weightsPath(dir.toStdString())));
    m_showStudent->setEnabled(trained);
    m_showStudent->setToolTip(
        trained ? tr("Draw the trained student's detections on the frame shown (solid, named in "
                     "the legend)")
                : tr("No full-frame student in this session yet: train one (step 6)"));
    const bool on = trained && m_showStudent->isChecked();
    m_frames.setStudent(on ? dir : QString());
    if (!on) {
        m_view->clearStudent();
        m_studentSpeed->clear();
        return;
    }
    m_studentSpeed->setText(tr("loading…"));
    showFrame(m_slider->value()); // the frame shown, again, with the student's boxes
}

void CapturePage::showFrame(int frame)
{
    m_timeline->setFrame(frame);
    m_frames.request(frame);
}

void CapturePage::browseTeacher()
{
    const QString kind = m_teacher->currentData().toString();
    QString chosen;
    if (kind == QLatin1String("session"))
        chosen = QFileDialog::getExistingDirectory(this, tr("The session whose student labels"));
    else if (kind == QLatin1String("onnx"))
        chosen = QFileDialog::getOpenFileName(this, tr("ONNX detector"), QString(),
                                              tr("ONNX models (*.onnx);;All files (*)"));
    else
        chosen = QFileDialog::getOpenFileName(this, tr("Cascade"), QString(),
                                              tr("Cascades (*.xml);;All files (*)"));
    if (chosen.isEmpty())
        return;
    m_teacherFile->setText(chosen);
    storeSettings();
}

} // namespace edgetrain::ui

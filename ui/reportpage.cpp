#include "reportpage.h"

#include "common.h"
#include "gallery.h"

#include <QApplication>
#include <QDesktopServices>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QUrl>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

namespace edgetrain::ui {

ReportPage::ReportPage(app::Workflow *workflow, PlanSource plan, QWidget *parent)
    : QWidget(parent), m_workflow(workflow), m_plan(std::move(plan))
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("7  Evaluate & report"),
        tr("Student and teacher on held-out tracks, above all on the boxes only the tracker had "
           "found: the frames where the teacher fails from this camera's viewpoint."),
        this));
    m_headline = new QLabel(this);
    m_headline->setWordWrap(true);
    QFont f = m_headline->font();
    f.setPointSizeF(f.pointSizeF() * 1.2);
    m_headline->setFont(f);
    layout->addWidget(m_headline);

    auto *row = new QHBoxLayout;
    m_results = new QTableWidget(3, 3, this);
    m_results->setHorizontalHeaderLabels({tr("Boxes"), tr("Teacher"), tr("Student")});
    m_results->setVerticalHeaderLabels({tr("Recall, boxes the teacher found"),
                                        tr("Recall, boxes only the tracker found"),
                                        tr("Precision (detections)")});
    m_results->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_results->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_results->setMaximumHeight(110);
    row->addWidget(m_results, 1);
    auto *buttons = new QVBoxLayout;
    m_evaluate = new QPushButton(tr("Evaluate"), this);
    m_frames = new QSpinBox(this);
    m_frames->setRange(1, 100000);
    m_frames->setPrefix(tr("on "));
    m_frames->setSuffix(tr(" held-out frames"));
    connect(m_frames, &QSpinBox::valueChanged, this,
            [this](int n) { m_workflow->session().evaluation.frames = n; });
    m_exportPdf = new QPushButton(tr("Export PDF report…"), this);
    m_exportAll = new QPushButton(tr("Export report, charts and CSV…"), this);
    buttons->addWidget(m_evaluate);
    buttons->addWidget(m_frames);
    buttons->addWidget(m_exportPdf);
    buttons->addWidget(m_exportAll);
    buttons->addStretch(1);
    row->addLayout(buttons);
    layout->addLayout(row);

    layout->addWidget(new QLabel(tr("Frames the teacher missed and the student found (dashed orange: "
                                    "the tracker's box; green: the student):"),
                                 this));
    m_gallery = new QListWidget(this);
    m_gallery->setViewMode(QListView::IconMode);
    m_gallery->setResizeMode(QListView::Adjust);
    m_gallery->setMovement(QListView::Static);
    m_gallery->setIconSize(QSize(200, 220));
    m_gallery->setSpacing(4);
    layout->addWidget(m_gallery, 1);
    layout->addWidget(new TaskStrip(workflow, app::Task::Evaluation, this));

    connect(m_evaluate, &QPushButton::clicked, m_workflow, &app::Workflow::startEvaluation);
    connect(m_exportPdf, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Export PDF report"), m_workflow->session().path(QStringLiteral("report.pdf")),
            tr("PDF (*.pdf)"));
        if (path.isEmpty())
            return;
        QString error;
        QApplication::setOverrideCursor(Qt::WaitCursor);
        const bool ok = ReportWriter::writePdf(path, content(), &error);
        QApplication::restoreOverrideCursor();
        if (!ok)
            QMessageBox::warning(this, tr("Report"), error);
        else
            Q_EMIT m_workflow->message(tr("report written to %1").arg(path));
    });
    connect(m_exportAll, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(
            this, tr("Export the report to"), m_workflow->session().path(QStringLiteral("report")));
        if (dir.isEmpty())
            return;
        QStringList written;
        QString error;
        if (!exportTo(dir, &written, &error))
            QMessageBox::warning(this, tr("Report"), error);
        else
            Q_EMIT m_workflow->message(tr("%1 files written to %2").arg(written.size()).arg(dir));
    });
    connect(m_workflow, &app::Workflow::evaluationChanged, this, &ReportPage::refresh);
    connect(m_workflow, &app::Workflow::sessionChanged, this, &ReportPage::refresh);
    connect(m_workflow, &app::Workflow::taskStarted, this, [this] { m_evaluate->setEnabled(false); });
    connect(m_workflow, &app::Workflow::taskFinished, this,
            [this] { m_evaluate->setEnabled(m_workflow->busy() == app::Task::None); });
    refresh();
}

ReportContent ReportPage::content() const
{
    ReportContent c;
    c.session = &m_workflow->session();
    c.plan = m_plan ? m_plan() : std::nullopt;
    c.gallery = m_images;
    return c;
}

bool ReportPage::exportTo(const QString &dir, QStringList *written, QString *error) const
{
    // About half a second for a demo session (charts are widgets: they render on this thread).
    QApplication::setOverrideCursor(Qt::WaitCursor);
    const bool ok = ReportWriter::exportAll(dir, content(), written, error);
    QApplication::restoreOverrideCursor();
    return ok;
}

void ReportPage::refresh()
{
    const app::Session &s = m_workflow->session();
    {
        const QSignalBlocker block(m_frames);
        m_frames->setValue(s.evaluation.frames);
    }
    if (!s.evaluation.done) {
        m_headline->setText(s.training.weights.isEmpty()
                                ? tr("Train the student (step 5); it is evaluated when training ends.")
                                : tr("The student is trained: evaluate it against the teacher."));
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c)
                m_results->setItem(r, c, new QTableWidgetItem(QStringLiteral("–")));
        m_images.clear();
        m_gallery->clear();
        return;
    }
    const auto &e = s.evaluation.result;
    auto pct = [](double v) { return QString::number(100 * v, 'f', 1) + QStringLiteral(" %"); };
    auto recall = [&](int boxes, double v) { return boxes > 0 ? pct(v) : QStringLiteral("–"); };
    m_headline->setText(
        tr("<b>On %1 held-out boxes only the tracker had found, the student finds %2</b> "
           "(the teacher: %3).%4")
            .arg(e.tracker_only_boxes)
            .arg(recall(e.tracker_only_boxes, e.student_recall_tracker_only),
                 recall(e.tracker_only_boxes, e.teacher_recall_tracker_only),
                 s.capture.every == 1 ? tr(" The teacher ran on every frame: these are exactly its misses.")
                                      : tr(" The teacher ran on every %1th frame: some of these it never saw.")
                                            .arg(s.capture.every)));
    const QString cells[3][3] = {
        {QString::number(e.teacher_found_boxes), recall(e.teacher_found_boxes, e.teacher_recall_teacher_found),
         recall(e.teacher_found_boxes, e.student_recall_teacher_found)},
        {QString::number(e.tracker_only_boxes), recall(e.tracker_only_boxes, e.teacher_recall_tracker_only),
         recall(e.tracker_only_boxes, e.student_recall_tracker_only)},
        {QString(), QStringLiteral("%1 (%2)").arg(pct(e.teacher_precision)).arg(e.teacher_detections),
         QStringLiteral("%1 (%2)").arg(pct(e.student_precision)).arg(e.student_detections)}};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            auto *item = new QTableWidgetItem(cells[r][c]);
            item->setTextAlignment(Qt::AlignCenter);
            m_results->setItem(r, c, item);
        }
    loadGallery();
}

void ReportPage::loadGallery()
{
    const auto labels = m_workflow->labels();
    m_images.clear();
    m_gallery->clear();
    if (!labels)
        return;
    const int request = ++m_galleryRequest;
    (void)QtConcurrent::run([s = m_workflow->session(), labels] {
        try {
            return Gallery::renderGains(s, *labels, 12);
        } catch (const std::exception &) {
            return QList<QImage>(); // the video moved: the numbers stand, the pictures are gone
        }
    }).then(this, [this, request](const QList<QImage> &images) {
        if (request != m_galleryRequest)
            return;
        m_images = images;
        for (const QImage &img : images)
            m_gallery->addItem(new QListWidgetItem(QIcon(QPixmap::fromImage(img)), QString()));
        if (images.isEmpty())
            m_gallery->addItem(tr("No held-out frame where the teacher missed a box and the student found it."));
    });
}

} // namespace edgetrain::ui

#include "reportpage.h"

#include "charts.h"
#include "common.h"
#include "core/error.h"
#include "gallery.h"
#include "reporttext.h"
#include "vision/export/studentexport.h"
#include "vision/studentteacher.h"

#include <QApplication>
#include <QDesktopServices>
#include <QFileDialog>
#include <QFileInfo>
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

namespace {

void fillTable(QTableWidget *table, const QList<QStringList> &rows, bool firstColumnIsHeader)
{
    const int columns =
        rows.isEmpty() ? 0 : int(rows.first().size()) - (firstColumnIsHeader ? 1 : 0);
    table->clear();
    table->setColumnCount(columns);
    table->setRowCount(int(rows.size()) - 1);
    QStringList header = rows.isEmpty() ? QStringList() : rows.first();
    QStringList vertical;
    if (firstColumnIsHeader && !header.isEmpty())
        header.removeFirst();
    table->setHorizontalHeaderLabels(header);
    for (int r = 1; r < rows.size(); ++r) {
        QStringList row = rows[r];
        if (firstColumnIsHeader) {
            vertical.append(row.value(0));
            row.removeFirst();
        }
        for (int c = 0; c < row.size() && c < columns; ++c) {
            auto *item = new QTableWidgetItem(row[c]);
            item->setTextAlignment(Qt::AlignCenter);
            table->setItem(r - 1, c, item);
        }
    }
    if (firstColumnIsHeader)
        table->setVerticalHeaderLabels(vertical);
}

QLabel *sectionTitle(const QString &text, QWidget *parent)
{
    auto *label = new QLabel(text, parent);
    QFont f = label->font();
    f.setBold(true);
    label->setFont(f);
    return label;
}

} // namespace

ReportPage::ReportPage(app::Workflow *workflow, PlanSource plan, QWidget *parent)
    : QWidget(parent), m_workflow(workflow), m_plan(std::move(plan))
{
    auto *layout = new QVBoxLayout(this);
    layout->addWidget(pageHeader(
        tr("7  Evaluate & report"),
        tr("The teacher, the motion baseline and the student against frames a person verified: "
           "recall, precision and their curves. The figures against the tracker's own labels "
           "stay below, named for what they are."),
        this));
    auto *top = new QHBoxLayout;
    m_headline = new QLabel(this);
    m_headline->setWordWrap(true);
    m_headline->setTextFormat(Qt::RichText);
    QFont f = m_headline->font();
    f.setPointSizeF(f.pointSizeF() * 1.2);
    m_headline->setFont(f);
    top->addWidget(m_headline, 1);
    m_verify = new QPushButton(tr("Verify frames…"), this);
    m_verify->setToolTip(tr("Go to step 4 and make boxes true on a few frames"));
    top->addWidget(m_verify, 0, Qt::AlignTop);
    layout->addLayout(top);

    auto *row = new QHBoxLayout;
    auto *tables = new QVBoxLayout;
    m_verifiedTitle = sectionTitle(tr("Against verified frames"), this);
    tables->addWidget(m_verifiedTitle);
    m_verified = new QTableWidget(this);
    m_verified->verticalHeader()->setVisible(false);
    // Every column as wide as its header and cells (a scroll bar when the window is narrow):
    // a stretched last column was squeezed below its header's width, "Frames/s" elided.
    m_verified->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_verified->horizontalHeader()->setTextElideMode(Qt::ElideNone);
    m_verified->setEditTriggers(QAbstractItemView::NoEditTriggers);
    tables->addWidget(m_verified, 1);
    tables->addWidget(
        sectionTitle(tr("Against the tracker's labels (not checked by a person)"), this));
    m_results = new QTableWidget(this);
    m_results->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    m_results->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_results->setMaximumHeight(110);
    tables->addWidget(m_results);
    // Three fifths for the tables: the verified one, with its intervals, fits whole at 1366 px.
    row->addLayout(tables, 3);
    m_pr = new PrChart(this);
    m_pr->setMinimumSize(420, 280);
    row->addWidget(m_pr, 2);
    auto *buttons = new QHBoxLayout;
    m_evaluate = new QPushButton(tr("Evaluate"), this);
    m_frames = new QSpinBox(this);
    m_frames->setRange(1, 100000);
    m_frames->setPrefix(tr("on "));
    m_frames->setSuffix(tr(" held-out frames"));
    connect(m_frames, &QSpinBox::valueChanged, this,
            [this](int n) { m_workflow->setEvaluationFrames(n); });
    m_selfTrain = new QPushButton(tr("Self-train a round"), this);
    m_selfTrain->setToolTip(tr("The student and the tracker relabel the training frames; confident "
                               "new boxes join the labels (source: student), the student trains "
                               "again on the cluster, and the report adds the round's figures."));
    m_exportPdf = new QPushButton(tr("Export PDF report…"), this);
    m_exportAll = new QPushButton(tr("Export report, charts and CSV…"), this);
    m_exportStudent = new QPushButton(tr("Export student…"), this);
    m_exportStudent->setToolTip(tr("The trained student as ONNX (OpenCV, ONNX Runtime, …) or "
                                   "safetensors, with what a runtime needs to decode it."));
    buttons->addWidget(m_evaluate);
    buttons->addWidget(m_frames);
    buttons->addWidget(m_selfTrain);
    buttons->addStretch(1);
    buttons->addWidget(m_exportPdf);
    buttons->addWidget(m_exportAll);
    buttons->addWidget(m_exportStudent);
    layout->addLayout(buttons);
    layout->addLayout(row, 3);

    m_galleryTitle = new QLabel(this);
    m_galleryTitle->setWordWrap(true);
    layout->addWidget(m_galleryTitle);
    m_gallery = new QListWidget(this);
    m_gallery->setViewMode(QListView::IconMode);
    m_gallery->setResizeMode(QListView::Adjust);
    m_gallery->setMovement(QListView::Static);
    m_gallery->setIconSize(QSize(200, 220));
    m_gallery->setSpacing(4);
    layout->addWidget(m_gallery, 2);
    layout->addWidget(new TaskStrip(workflow, app::Task::Evaluation, this));

    connect(m_verify, &QPushButton::clicked, this, &ReportPage::verifyRequested);
    connect(m_headline, &QLabel::linkActivated, this, [this] { Q_EMIT verifyRequested(); });
    connect(m_evaluate, &QPushButton::clicked, m_workflow, &app::Workflow::startEvaluation);
    connect(m_selfTrain, &QPushButton::clicked, m_workflow, &app::Workflow::startSelfTrainingRound);
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
    connect(m_exportStudent, &QPushButton::clicked, this, &ReportPage::exportStudent);
    connect(m_workflow, &app::Workflow::evaluationChanged, this, &ReportPage::refresh);
    connect(m_workflow, &app::Workflow::sessionChanged, this, &ReportPage::refresh);
    connect(m_workflow, &app::Workflow::taskStarted, this, [this] {
        m_evaluate->setEnabled(false);
        m_selfTrain->setEnabled(false);
    });
    connect(m_workflow, &app::Workflow::taskFinished, this, [this] {
        m_evaluate->setEnabled(m_workflow->busy() == app::Task::None);
        m_selfTrain->setEnabled(m_workflow->canSelfTrain());
    });
    refresh();
}

ReportContent ReportPage::content() const
{
    ReportContent c;
    c.session = &m_workflow->session();
    c.plan = m_plan ? m_plan() : std::nullopt;
    c.gallery = m_images;
    c.galleryVerified = m_imagesVerified;
    c.category = m_workflow->verification()->truth().category;
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

void ReportPage::exportStudent()
{
    const QString onnx = tr("ONNX (*.onnx)");
    QString filter = onnx;
    QString path = QFileDialog::getSaveFileName(
        this, tr("Export the student"), m_workflow->session().path(QStringLiteral("student.onnx")),
        onnx + QStringLiteral(";;") + tr("safetensors (*.safetensors)"), &filter);
    if (path.isEmpty())
        return;
    if (QFileInfo(path).suffix().isEmpty())
        path += filter == onnx ? QStringLiteral(".onnx") : QStringLiteral(".safetensors");
    try {
        const std::string file = path.toStdString();
        QApplication::setOverrideCursor(Qt::WaitCursor);
        const std::string done = vision::StudentExport::exportSession(
            m_workflow->session().dir.toStdString(), vision::StudentExport::formatOf(file), file);
        QApplication::restoreOverrideCursor();
        Q_EMIT m_workflow->message(QString::fromStdString(done));
    } catch (const core::Error &e) {
        QApplication::restoreOverrideCursor();
        QMessageBox::warning(this, tr("Export student"), QString::fromUtf8(e.what()));
    }
}

void ReportPage::refresh()
{
    const app::Session &s = m_workflow->session();
    m_selfTrain->setEnabled(m_workflow->canSelfTrain());
    m_selfTrain->setText(tr("Self-train round %1").arg(s.round + 1));
    m_exportStudent->setEnabled(QFileInfo::exists(
        QString::fromStdString(vision::StudentTeacher::weightsPath(s.dir.toStdString()))));
    {
        const QSignalBlocker block(m_frames);
        m_frames->setValue(s.evaluation.frames);
    }
    const std::string category = m_workflow->verification()->truth().category;
    const app::VerifiedRound *round = ReportText::currentRound(s);
    m_verify->setVisible(round == nullptr);
    fillTable(m_verified, ReportText::verifiedRows(s), false);
    m_verifiedTitle->setText(round ? tr("Against %1 verified frames").arg(round->frames)
                                   : tr("Against verified frames: none yet"));
    if (round)
        m_pr->show(round->scores, round->intervals);
    else
        m_pr->show({});
    fillTable(m_results, ReportText::trackerRows(s), true);

    if (round) {
        m_headline->setText(
            QStringLiteral("<b>%1</b>").arg(ReportText::headline(s, category).toHtmlEscaped()));
    } else if (!s.evaluation.done) {
        m_headline->setText(
            (s.training.weights.isEmpty()
                 ? tr("Train the student (step 6); it is evaluated when training ends.")
                 : tr("The student is trained: evaluate it against the teacher.")) +
            QLatin1Char(' ') +
            tr("Verify frames in <a href=\"verify\">step 4</a> to measure it against boxes a "
               "person checked."));
    } else {
        m_headline->setText(
            tr("%1<br><span style=\"color:#8a4b00\">No frame is verified yet: these "
               "figures are against the tracker's own labels, so the tracker's mistakes "
               "count as truth. <a href=\"verify\">Verify frames</a> to measure recall and "
               "precision against boxes a person checked.</span>")
                .arg(ReportText::trackerHeadline(s).toHtmlEscaped()));
    }
    if (!s.evaluation.done && !round) {
        m_images.clear();
        m_gallery->clear();
        m_galleryTitle->clear();
        return;
    }
    loadGallery();
}

void ReportPage::loadGallery()
{
    const app::Session &session = m_workflow->session();
    const app::VerifiedRound *round = ReportText::currentRound(session);
    const auto labels = m_workflow->labels();
    m_images.clear();
    m_gallery->clear();
    m_imagesVerified = round != nullptr;
    m_galleryTitle->setText(
        (round ? tr("Verified frames the student never trained on. ")
               : tr("Held-out frames where the teacher found nobody at the labelled place and "
                    "the student did, against the tracker's labels. ")) +
        ReportText::galleryLegend(round != nullptr));
    m_gallery->setIconSize(round ? QSize(400, 300) : QSize(200, 220));
    if (!round && !labels)
        return;
    const int request = ++m_galleryRequest;
    m_galleryLoading = true;
    m_gallery->addItem(round ? tr("Running the teacher and the student on the verified frames…")
                             : tr("Drawing the frames…"));
    std::optional<app::VerifiedRound> verified;
    if (round)
        verified = *round;
    (void)QtConcurrent::run(
        [s = session, labels, verified, truth = m_workflow->verification()->truth()] {
            using Result = std::pair<QList<QImage>, QString>;
            try {
                if (verified)
                    return Result(Gallery::renderVerified(s, truth, verified->first_frame,
                                                          verified->scores, 6),
                                  {});
                return Result(Gallery::renderGains(ReportText::withOneGainPerFrame(s), *labels, 12),
                              {});
            } catch (const std::exception &e) {
                // The video or a model moved: the numbers stand, the pictures are gone.
                return Result({}, QString::fromStdString(e.what()));
            }
        })
        .then(this, [this, request,
                     isVerified = bool(verified)](const std::pair<QList<QImage>, QString> &result) {
            if (request != m_galleryRequest)
                return;
            m_galleryLoading = false;
            m_gallery->clear();
            m_images = result.first;
            for (const QImage &img : m_images)
                m_gallery->addItem(new QListWidgetItem(QIcon(QPixmap::fromImage(img)), QString()));
            if (!result.second.isEmpty())
                m_gallery->addItem(tr("The frames cannot be drawn: %1").arg(result.second));
            else if (m_images.isEmpty())
                m_gallery->addItem(
                    isVerified ? tr("No verified frame (done, after the training frames) to draw.")
                               : tr("No held-out frame where the teacher missed a box and the "
                                    "student found it."));
        });
}

} // namespace edgetrain::ui

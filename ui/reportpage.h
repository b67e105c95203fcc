#pragma once

#include "app/session/workflow.h"
#include "reportwriter.h"

#include <QWidget>

#include <functional>

class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace edgetrain::ui {

class PrChart;

/**
 * Step 7: the detectors against verified frames (headline, table per detector and round, the
 * precision-recall chart), the figures against the tracker's labels, the gallery (verified
 * frames with truth and detections, else the frames the teacher missed and the student found),
 * and the exports. Without verified frames it says so and offers the Verify step.
 */
class ReportPage : public QWidget
{
    Q_OBJECT

public:
    using PlanSource = std::function<std::optional<app::PlanView>()>;
    ReportPage(app::Workflow *workflow, PlanSource plan, QWidget *parent = nullptr);
    /** Everything the PDF needs, as shown now. */
    ReportContent content() const;
    /** Writes report.pdf, charts/ (PNG + SVG) and the CSV files under `dir`. */
    bool exportTo(const QString &dir, QStringList *written, QString *error) const;

    QLabel *headline() const { return m_headline; }
    QPushButton *verifyButton() const { return m_verify; }
    QPushButton *selfTrainButton() const { return m_selfTrain; }
    QPushButton *exportStudentButton() const { return m_exportStudent; }
    QTableWidget *verifiedTable() const { return m_verified; }
    QTableWidget *trackerTable() const { return m_results; }
    PrChart *prChart() const { return m_pr; }
    QListWidget *gallery() const { return m_gallery; }
    /** True while the gallery is being drawn (the detectors run on the verified frames). */
    bool galleryLoading() const { return m_galleryLoading; }

Q_SIGNALS:
    /** The user asked to verify frames (the window shows the Verify step). */
    void verifyRequested();

private:
    void refresh();
    void loadGallery();
    /** Asks for a .onnx or .safetensors file and writes the session's student to it
     *  (vision::StudentExport, as `edgetrain-cli export`). */
    void exportStudent();

    app::Workflow *m_workflow;
    PlanSource m_plan;
    QLabel *m_headline, *m_verifiedTitle, *m_galleryTitle;
    QTableWidget *m_verified, *m_results;
    PrChart *m_pr;
    QListWidget *m_gallery;
    QPushButton *m_verify, *m_evaluate, *m_selfTrain, *m_exportAll, *m_exportPdf, *m_exportStudent;
    QSpinBox *m_frames;
    QList<QImage> m_images;
    bool m_imagesVerified = false;
    bool m_galleryLoading = false;
    int m_galleryRequest = 0;
};

} // namespace edgetrain::ui

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

/** Step 6: student against teacher, the gallery of the student's finds, and the exports. */
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

private:
    void refresh();
    void loadGallery();

    app::Workflow *m_workflow;
    PlanSource m_plan;
    QLabel *m_headline;
    QTableWidget *m_results;
    QListWidget *m_gallery;
    QPushButton *m_evaluate, *m_exportAll, *m_exportPdf;
    QSpinBox *m_frames;
    QList<QImage> m_images;
    int m_galleryRequest = 0;
};

} // namespace edgetrain::ui

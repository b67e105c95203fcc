#pragma once

#include "app/session/workflow.h"

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace edgetrain::ui {

/** Step 3: the crops from accepted tracks and the background, split by track, with a gallery. */
class DatasetPage : public QWidget
{
    Q_OBJECT

public:
    explicit DatasetPage(app::Workflow *workflow, QWidget *parent = nullptr);
    QListWidget *gallery() const { return m_gallery; }
    QTableWidget *counts() const { return m_counts; }

private:
    void loadSettings();
    void refresh();
    void loadGallery();

    app::Workflow *m_workflow;
    QSpinBox *m_width, *m_height;
    QDoubleSpinBox *m_negatives;
    QPushButton *m_build, *m_export;
    QTableWidget *m_counts;
    QComboBox *m_split, *m_class;
    QListWidget *m_gallery;
    QLabel *m_stale;
    bool m_loaded = false;
    bool m_storing = false; // setDatasetSettings() from this page
    int m_galleryRequest = 0;
};

} // namespace edgetrain::ui

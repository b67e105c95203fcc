#pragma once

#include "app/session/workflow.h"

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace edgetrain::ui {

/**
 * Step 3: what the student trains on, by the session's dataset kind.
 *  - The full-frame student ("frames"): whole labelled frames with their objects and ignore
 *    regions, split into training and validation by time block; the table counts frames,
 *    objects, ignore regions, pasted objects and samples per split, and the gallery shows the
 *    frames, their jittered and pasted copies, or the background samples, boxes drawn.
 *  - The crop student ("crops"): crops from accepted tracks and the background, split by track
 *    into train, validation and test, with a gallery of the crops.
 * The controls shown are the ones that kind's build reads.
 */
class DatasetPage : public QWidget
{
    Q_OBJECT

public:
    explicit DatasetPage(app::Workflow *workflow, QWidget *parent = nullptr);
    QListWidget *gallery() const { return m_gallery; }
    QTableWidget *counts() const { return m_counts; }
    /** The dataset's figures in full sentences (empty before one is built). */
    QLabel *summary() const { return m_summary; }

private:
    QGroupBox *makeCropSettings();
    QGroupBox *makeFrameSettings();
    void storeSettings();
    void loadSettings();
    void showKind(bool frames);
    void refresh();
    void refreshCrops();
    void refreshFrames();
    void loadGallery();
    void exportDataset();
    bool frames() const;

    app::Workflow *m_workflow;
    QLabel *m_explanation;
    QGroupBox *m_cropSettings, *m_frameSettings;
    QSpinBox *m_width, *m_height;
    QDoubleSpinBox *m_negatives;
    QComboBox *m_frameWidth;
    QSpinBox *m_frameEvery, *m_frameAugment;
    QPushButton *m_build, *m_export;
    QTableWidget *m_counts;
    QLabel *m_summary;
    QComboBox *m_split, *m_class;
    QListWidget *m_gallery;
    QLabel *m_stale;
    QLabel *m_legend;           // the gallery's box styles (frames only)
    bool m_framesShown = false; // the kind the controls are set up for
    bool m_loaded = false;
    bool m_storing = false; // setDatasetSettings() from this page
    int m_galleryRequest = 0;
};

} // namespace edgetrain::ui

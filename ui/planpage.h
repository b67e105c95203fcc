#pragma once

#include "app/session/workflow.h"
#include "clustercandidates.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGroupBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSlider;
class QSpinBox;
class QTableWidget;

namespace edgetrain::ui {

class PlanChart;

/** Step 4: model, batch, epochs, mode, the nodes taking part, and the memory budget per device. */
class PlanPage : public QWidget
{
    Q_OBJECT

public:
    explicit PlanPage(app::Workflow *workflow, QWidget *parent = nullptr);
    QSlider *slider() const { return m_slider; }
    QComboBox *modelBox() const { return m_model; }
    QComboBox *objectiveBox() const { return m_objective; }
    /** The full-frame student's input: the frame dataset's, or the camera's full frame (shown
     *  when the session has a frame size to offer). Choosing one sets the dataset's width. */
    QComboBox *inputBox() const { return m_input; }
    QLabel *scheduleLabel() const { return m_schedule; }
    /** What running the first stages on tiles would do for this budget (PlanView::tiled). */
    QLabel *tilingLabel() const { return m_tiling; }
    /** The other input's prediction (PlanView::alternative). */
    QLabel *inputNote() const { return m_inputNote; }
    PlanChart *chart() const { return m_chart; }
    QTableWidget *memoryTable() const { return m_memory; }
    /** The planner's candidates: of the last comparison (compareButton()) if one ran since the
     *  session opened and no run ranked after it, else of the last run that chose its cluster. */
    QTableWidget *candidateTable() const { return m_candidatesBox->table(); }
    QLabel *candidateSummary() const { return m_candidatesBox->summary(); }
    /** "Compare now": profiles the ticked devices and ranks the clusters, training nothing. */
    QPushButton *compareButton() const { return m_candidatesBox->compareButton(); }
    const std::optional<app::PlanView> &lastPlan() const { return m_last; }
    /** Plans for the current settings again (nodes, batch or model changed). */
    void replan();

protected:
    void resizeEvent(QResizeEvent *event) override;
    void showEvent(QShowEvent *event) override;

private:
    /** Gives the wrapped sentences the height their width needs as their minimum: the page's
     *  layout would size them by a one-line hint and draw what follows over them. */
    void fitSentences();
    // The page's parts, made once by the constructor.
    QGroupBox *trainingBox();
    QGroupBox *nodesBox();
    QGroupBox *memoryBox();
    void connectControls();
    void loadSettings();
    void storeSettings();
    void store(const app::PlanSettings &p);
    void refreshNodes();
    void onSlider();
    void show(const app::PlanView &plan);
    void showAlternatives(const app::PlanView &plan);
    void showInputs();
    void chooseInput();
    /** The plan request for the page's settings: the Workflow's, at the input chosen here. */
    app::PlanRequest request(std::int64_t budget) const;
    QString device() const; // empty: all devices
    std::int64_t budgetFromSlider() const;

    app::Workflow *m_workflow;
    QComboBox *m_model, *m_input, *m_mode, *m_device, *m_objective;
    QFormLayout *m_trainingForm;
    QSpinBox *m_batch, *m_epochs, *m_staleness, *m_localSteps;
    QDoubleSpinBox *m_lr;
    QListWidget *m_nodes;
    QCheckBox *m_noBudget;
    QSlider *m_slider;
    QLabel *m_budget, *m_schedule, *m_overhead, *m_warning, *m_batchNote;
    QLabel *m_tiling, *m_inputNote;
    QTableWidget *m_memory;
    ClusterCandidates *m_candidatesBox;
    PlanChart *m_chart;
    std::optional<app::PlanView> m_last;
    /** The chain (model, input, device batch) the slider's range was set for: its store-all
     *  peak and floor. */
    std::optional<app::PlanRequest> m_rangeFor;
    bool m_loading = false;
    bool m_storing = false; // setPlanSettings() from this page: its widgets show the values already
};

} // namespace edgetrain::ui

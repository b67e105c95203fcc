#pragma once

#include "app/session/workflow.h"

#include <QWidget>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QListWidget;
class QPushButton;
class QSlider;
class QSpinBox;
class QTableWidget;

namespace edgetrain::ui {

class MemoryChart;

/** Step 4: model, batch, epochs, mode, the nodes taking part, and the memory budget per device. */
class PlanPage : public QWidget
{
    Q_OBJECT

public:
    explicit PlanPage(app::Workflow *workflow, QWidget *parent = nullptr);
    QSlider *slider() const { return m_slider; }
    QComboBox *modelBox() const { return m_model; }
    QComboBox *objectiveBox() const { return m_objective; }
    QLabel *scheduleLabel() const { return m_schedule; }
    QTableWidget *memoryTable() const { return m_memory; }
    /** The planner's candidates: of the last comparison (compareButton()) if one ran since the
     *  session opened and no run ranked after it, else of the last run that chose its cluster. */
    QTableWidget *candidateTable() const { return m_candidates; }
    QLabel *candidateSummary() const { return m_candidateSummary; }
    /** "Compare now": profiles the ticked devices and ranks the clusters, training nothing. */
    QPushButton *compareButton() const { return m_compare; }
    const std::optional<app::PlanView> &lastPlan() const { return m_last; }
    /** Plans for the current settings again (nodes, batch or model changed). */
    void replan();

private:
    // The page's parts, made once by the constructor.
    QGroupBox *trainingBox();
    QGroupBox *nodesBox();
    QGroupBox *candidatesBox();
    QGroupBox *memoryBox();
    void connectControls();
    void loadSettings();
    void storeSettings();
    void store(const app::PlanSettings &p);
    void refreshNodes();
    void onSlider();
    void show(const app::PlanView &plan);
    void showCandidates();
    QString device() const; // empty: all devices
    std::int64_t budgetFromSlider() const;

    app::Workflow *m_workflow;
    QComboBox *m_model, *m_mode, *m_device, *m_objective;
    QSpinBox *m_batch, *m_epochs, *m_staleness, *m_localSteps;
    QDoubleSpinBox *m_lr;
    QListWidget *m_nodes;
    QCheckBox *m_noBudget;
    QSlider *m_slider;
    QLabel *m_budget, *m_schedule, *m_overhead, *m_warning, *m_batchNote, *m_candidateSummary;
    QTableWidget *m_memory, *m_candidates;
    QPushButton *m_compare;
    MemoryChart *m_chart;
    std::optional<app::PlanView> m_last;
    std::int64_t m_rangeFor = -1; // device batch the slider's range was set for
    bool m_loading = false;
    bool m_storing = false; // setPlanSettings() from this page: its widgets show the values already
};

} // namespace edgetrain::ui

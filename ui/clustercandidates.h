#pragma once

#include "app/session/workflow.h"

#include <QGroupBox>

class QLabel;
class QPushButton;
class QTableWidget;

namespace edgetrain::ui {

/** The Plan step's ranking of clusters: of the last comparison (compareButton()) if one ran
 *  since the session opened and no run ranked after it, else of the last run that chose its
 *  cluster; every candidate with its predicted figures, the chosen (or best) one marked. */
class ClusterCandidates : public QGroupBox
{
    Q_OBJECT

public:
    explicit ClusterCandidates(app::Workflow *workflow, QWidget *parent = nullptr);
    QTableWidget *table() const { return m_candidates; }
    QLabel *summary() const { return m_candidateSummary; }
    /** "Compare now": profiles the ticked devices and ranks the clusters, training nothing. */
    QPushButton *compareButton() const { return m_compare; }
    /** Shows the workflow's ranking again. */
    void refresh();

private:
    app::Workflow *m_workflow;
    QLabel *m_candidateSummary;
    QTableWidget *m_candidates;
    QPushButton *m_compare;
};

} // namespace edgetrain::ui

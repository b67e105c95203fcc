#include "clustercandidates.h"

#include "app/report/palette.h"
#include "common.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace edgetrain::ui {

ClusterCandidates::ClusterCandidates(app::Workflow *workflow, QWidget *parent)
    : QGroupBox(tr("Clusters the planner compared"), parent), m_workflow(workflow)
{
    // The planner's ranking: of the last comparison ("Compare now"), else of the last run that
    // let it choose: every candidate cluster with its predicted figures, the chosen (or best)
    // one marked, a run's measured training next to it.
    auto *candidatesLayout = new QVBoxLayout(this);
    m_candidateSummary = new QLabel(this);
    m_candidateSummary->setObjectName(QStringLiteral("candidateSummary"));
    m_candidateSummary->setWordWrap(true);
    candidatesLayout->addWidget(m_candidateSummary);
    // Before training: profile the ticked devices and rank the clusters, nothing trained.
    auto *compareRow = new QHBoxLayout;
    m_compare = new QPushButton(tr("Compare now"), this);
    m_compare->setObjectName(QStringLiteral("compareClusters"));
    m_compare->setToolTip(
        tr("Profiles the job on every ticked device (a few steps each, its link and power) and "
           "ranks every cluster of them by the objective chosen under “Train on:”, without "
           "training: what the planner would choose, and what each choice would cost"));
    compareRow->addWidget(m_compare);
    compareRow->addWidget(new TaskStrip(m_workflow, app::Task::ClusterPlan, this), 1);
    candidatesLayout->addLayout(compareRow);
    m_candidates = new QTableWidget(0, 8, this);
    m_candidates->setObjectName(QStringLiteral("candidateTable"));
    m_candidates->setHorizontalHeaderLabels({tr("Rank"), tr("Devices"), tr("Mode"), tr("Time (s)"),
                                             tr("Power (W)"), tr("Energy (J)"), tr("EDP (J·s)"),
                                             tr("Note")});
    m_candidates->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_candidates->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_candidates->verticalHeader()->hide();
    m_candidates->horizontalHeader()->setStretchLastSection(true);
    m_candidates->setToolTip(tr("Predicted for the whole job; click a heading to sort"));
    candidatesLayout->addWidget(m_candidates, 1);
    connect(m_workflow, &app::Workflow::clusterPlanChanged, this, &ClusterCandidates::refresh);
    connect(m_workflow, &app::Workflow::sessionChanged, this, &ClusterCandidates::refresh);
    refresh();
}

namespace {
/** A number cell that sorts by its value (QTableWidgetItem compares text); unknown last. */
class NumberItem : public QTableWidgetItem
{
public:
    NumberItem(double value, int decimals, bool known = true)
    {
        if (known) {
            setText(QString::number(value, 'f', decimals));
            setData(Qt::UserRole, value);
        } else {
            setText(QStringLiteral("–"));
        }
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem &other) const override
    {
        const QVariant a = data(Qt::UserRole), b = other.data(Qt::UserRole);
        if (a.isValid() && b.isValid())
            return a.toDouble() < b.toDouble();
        if (a.isValid() != b.isValid())
            return a.isValid();
        return QTableWidgetItem::operator<(other);
    }
};
} // namespace

void ClusterCandidates::refresh()
{
    const bool preview = m_workflow->clusterPreview().has_value();
    const auto &plan = preview ? m_workflow->clusterPreview() : m_workflow->session().training.plan;
    m_candidates->setSortingEnabled(false);
    m_candidates->setRowCount(0);
    if (!plan) {
        m_candidateSummary->setText(
            tr("None yet. With “Train on:” set to the fastest cluster, the least energy, power "
               "or EDP, “Compare now” profiles the ticked devices and the planner ranks every "
               "cluster of them here; training does the same first, then trains on the best."));
        return;
    }
    QString summary =
        (preview ? tr("Compared now, by %1, nothing trained: %2 ranked after %3 s of profiling")
                 : tr("Last run, by %1: %2 ranked after %3 s of profiling"))
            .arg(plan->objective)
            .arg(counted(qint64(plan->candidates.size()), tr("candidate"), tr("candidates")))
            .arg(plan->profilingSeconds, 0, 'f', 1);
    if (plan->chosen >= 0 && plan->chosen < int(plan->candidates.size())) {
        const auto &c = plan->candidates[std::size_t(plan->chosen)];
        summary +=
            (preview ? tr("; the best: %1, predicted %2 s") : tr("; chosen: %1, predicted %2 s"))
                .arg(c.nodes.join(u'+'))
                .arg(c.seconds, 0, 'f', 1);
        if (plan->measuredSeconds > 0)
            summary += tr(", measured %1 s").arg(plan->measuredSeconds, 0, 'f', 1);
        if (c.powerKnown) {
            summary += tr("; %1 J predicted").arg(c.joules, 0, 'f', 0);
            if (plan->measuredJoules > 0)
                summary += tr(", %1 J measured").arg(plan->measuredJoules, 0, 'f', 0);
        }
        summary += QLatin1Char('.');
    } else {
        summary += tr("; none could train within the limits.");
    }
    m_candidateSummary->setText(summary);
    m_candidates->setRowCount(int(plan->candidates.size()));
    for (int r = 0; r < int(plan->candidates.size()); ++r) {
        const auto &c = plan->candidates[std::size_t(r)];
        const bool chosen = r == plan->chosen;
        QTableWidgetItem *items[] = {
            new NumberItem(r + 1, 0),
            new QTableWidgetItem(c.nodes.join(u'+')),
            new QTableWidgetItem(c.mode),
            new NumberItem(c.seconds, 1),
            new NumberItem(c.watts, 2, c.powerKnown),
            new NumberItem(c.joules, 0, c.powerKnown),
            new NumberItem(c.edp, 0, c.powerKnown),
            new QTableWidgetItem(chosen ? (preview ? tr("best") : tr("chosen")) : c.whyNot)};
        for (int col = 0; col < 8; ++col) {
            if (chosen) {
                QFont f = items[col]->font();
                f.setBold(true);
                items[col]->setFont(f);
                items[col]->setBackground(QColor(0xe4, 0xf2, 0xe4));
            } else if (!c.whyNot.isEmpty()) {
                items[col]->setForeground(app::palette::kMutedText);
            }
            m_candidates->setItem(r, col, items[col]);
        }
    }
    m_candidates->setSortingEnabled(true);
    m_candidates->sortByColumn(0, Qt::AscendingOrder);
    m_candidates->resizeColumnsToContents();
}

} // namespace edgetrain::ui

#pragma once

#include "app/session/workflow.h"
#include "charts.h"

#include <QTimer>
#include <QWidget>

#include <set>

class QListWidget;
class QPushButton;
class QTableWidget;

namespace edgetrain::ui {

/** Step 5: start and stop the cluster run; live per-device charts; nodes that drop out. */
class TrainPage : public QWidget
{
    Q_OBJECT

public:
    explicit TrainPage(app::Workflow *workflow, QWidget *parent = nullptr);
    const TrainingCharts &charts() const { return m_charts; }
    QPushButton *startButton() const { return m_start; }

private:
    void reload();
    void onMetrics(const app::MetricRow &row);
    void showDevices();
    void updateButtons();

    app::Workflow *m_workflow;
    QPushButton *m_start, *m_stop;
    QTableWidget *m_devices;
    QListWidget *m_events;
    TrainingCharts m_charts;
    QTimer m_flush;
    std::size_t m_nextFlush = 0;
    std::map<QString, app::MetricRow> m_latest;
    std::set<QString> m_lost;
};

} // namespace edgetrain::ui

#pragma once

#include "app/session/workflow.h"
#include "charts.h"

#include <QTimer>
#include <QWidget>

#include <set>

class QGridLayout;
class QListWidget;
class QPushButton;
class QTableWidget;

namespace edgetrain::ui {

/** Step 6: start and stop the cluster run; the devices' table; the run's events in words (epochs,
 *  devices that drop out or rejoin, how it ended); live per-device charts, as many per row as
 *  the page's width gives room for. */
class TrainPage : public QWidget
{
    Q_OBJECT

public:
    explicit TrainPage(app::Workflow *workflow, QWidget *parent = nullptr);
    const TrainingCharts &charts() const { return m_charts; }
    QPushButton *startButton() const { return m_start; }
    QTableWidget *devicesTable() const { return m_devices; }
    QListWidget *eventsList() const { return m_events; }

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    void reload();
    void onMetrics(const app::MetricRow &row);
    void showDevices();
    void updateButtons();
    /** Lays the charts out `columns` to a row (the power chart left out while it has nothing
     *  to show). */
    void placeCharts(int columns);
    void addEvent(const QString &text, bool muted = false);

    app::Workflow *m_workflow;
    QPushButton *m_start, *m_stop;
    QTableWidget *m_devices;
    QListWidget *m_events;
    QGridLayout *m_grid;
    int m_columns = 0;
    TrainingCharts m_charts;
    QTimer m_flush;
    std::size_t m_nextFlush = 0;
    std::map<QString, app::MetricRow> m_latest;
    std::set<QString> m_lost;
};

} // namespace edgetrain::ui

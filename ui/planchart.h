#pragma once

#include "app/session/plannerworker.h"

#include <QChartView>

class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace edgetrain::ui {

/**
 * The Plan step's chart: predicted peak memory against the step's cost (untiled store-all = 1)
 * for the checkpointing schedules the planner found, and, where the planner offers tiles, the
 * schedules of the offered tiling as a second line; the chosen plan and the offered tiled plan
 * marked, the budget as a dashed line. Colours are the palette's series(0) and series(1).
 */
class PlanChart : public QChartView
{
    Q_OBJECT

public:
    explicit PlanChart(QWidget *parent = nullptr);
    void show(const app::PlanView &plan);

    /** The tiled schedules' line (hidden when no tiling is offered); for tests. */
    QLineSeries *tiledLine() const { return m_tiled; }
    /** The offered tiled plan's mark (no point when none is offered); for tests. */
    QScatterSeries *tiledChoice() const { return m_tiledChoice; }

private:
    QLineSeries *m_frontier, *m_tiled, *m_budget;
    QScatterSeries *m_points, *m_tiledPoints, *m_current, *m_tiledChoice;
    QValueAxis *m_x, *m_y;
};

} // namespace edgetrain::ui

#pragma once

#include "app/session/workflow.h"
#include "trainingcharts.h"
#include "vision/detectionmetrics.h"

#include <QChartView>
#include <QPointF>

#include <map>
#include <memory>
#include <vector>

class QAreaSeries;
class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace edgetrain::ui {

/** The window's charts' look, the report's drawn charts' too (app/report/chart.h): a bold
 *  9.5 pt title, small margins, square corners, the legend below in 8 pt, no animation. */
void styleChart(QChart *chart, const QString &title);
/** The i-th device's colour (app::palette::series), the same in every chart. */
QColor chartColour(int i);
/** A value axis in the charts' 8 pt type, added to `chart` at `where`. */
QValueAxis *makeAxis(QChart *chart, Qt::Alignment where, const QString &title);
/** A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten. */
double niceCeil(double v);
/** Round ticks from `min` to at least `max` (about `ticks` steps of 1, 2 or 5 times a power of
 *  ten, at least `minStep`), the range widened to whole steps; the labels carry as many
 *  decimals as the step needs. */
void roundAxis(QValueAxis *axis, double min, double max, int ticks = 4, double minStep = 0);

/** Peak memory against recompute factor for the schedules the planner found, with the chosen
 *  plan marked and the budget as a line. */
class MemoryChart : public QChartView
{
    Q_OBJECT

public:
    explicit MemoryChart(QWidget *parent = nullptr);
    void show(const app::PlanView &plan);

private:
    QLineSeries *m_frontier, *m_budget;
    QScatterSeries *m_points, *m_current;
    QValueAxis *m_x, *m_y;
};

/**
 * Precision against recall on verified frames: one curve per detector (its DetectorScore's
 * curve, recall on x, precision on y, both 0-1), its operating point marked, a legend naming
 * each with its AP@0.5. Colours follow detectorColor(), as in the video views.
 */
class PrChart : public QChartView
{
    Q_OBJECT

public:
    explicit PrChart(QWidget *parent = nullptr);
    /** Replaces the curves; no scores: an empty chart that says there are no verified frames.
     *  With `intervals` (one per score), each operating point sits in its 95 % box: recall's
     *  interval across, precision's up. */
    void show(const std::vector<vision::DetectorScore> &scores,
              const std::vector<vision::FigureIntervals> &intervals = {});
    /** The curve and the operating point of a detector (nullptr if not shown). */
    QLineSeries *curve(const QString &name) const;
    QScatterSeries *operatingPoint(const QString &name) const;
    /** The operating point's 95 % box (nullptr without intervals). */
    QAreaSeries *intervalBox(const QString &name) const;
    int curveCount() const { return int(m_curves.size()); }

private:
    struct Detector
    {
        QLineSeries *curve = nullptr;
        QScatterSeries *point = nullptr;
        QAreaSeries *box = nullptr;
    };
    std::map<QString, Detector> m_curves;
    QValueAxis *m_x, *m_y;
};

/** One colour per detector everywhere (charts, galleries, video views): app::palette's colour
 *  on a light background for the detector's source (palette::sourceOf); others grey. */
QColor detectorColor(const QString &name);

/** Byte counts for people: "38.2 MiB". */
QString formatBytes(double bytes);

} // namespace edgetrain::ui

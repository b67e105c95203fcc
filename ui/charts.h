#pragma once

#include "app/session/workflow.h"
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
/** The i-th colour of the charts' palette (eight, repeating): app::Chart::colour's. */
QColor chartColour(int i);

/**
 * A quantity over time with one line per device (and, for a second variant such as network
 * transmit, a dashed one). Points are buffered and reach the chart when flush() is called, so a
 * burst of readings costs one repaint. The train page flushes one of its six charts every 100 ms,
 * in turn, so each chart is redrawn every 600 ms.
 */
class DeviceChart : public QChartView
{
    Q_OBJECT

public:
    DeviceChart(const QString &title, const QString &unit, QWidget *parent = nullptr);
    void append(const QString &device, double seconds, double value, int variant = 0);
    void flush();
    void clear();
    /** Marks a device's lines as dropped out ("name (lost)", dotted). */
    void setLost(const QString &device, bool lost);
    void setFixedMax(double max) { m_fixedMax = max; } // percentages: 0-100 whatever the data
    /** Colours by device shared with other charts, so a device has one colour everywhere. */
    void sharePalette(std::shared_ptr<std::map<QString, int>> colors)
    {
        m_colors = std::move(colors);
    }
    int pointCount() const; // points shown, all lines together
    const QString &title() const { return m_title; }

private:
    struct Line
    {
        QLineSeries *series = nullptr;
        std::vector<QPointF> points;
        bool dirty = false;
    };
    Line &line(const QString &device, int variant);
    void restyle(const QString &device);

    QString m_title, m_unit;
    std::map<std::pair<QString, int>, Line> m_lines;
    std::shared_ptr<std::map<QString, int>> m_colors = std::make_shared<std::map<QString, int>>();
    std::map<QString, bool> m_lost;
    QValueAxis *m_x = nullptr, *m_y = nullptr;
    double m_fixedMax = 0;
};

/** The training charts of one run, in a fixed order. */
struct TrainingCharts
{
    DeviceChart *cpu, *memory, *network, *power, *loss, *accuracy, *speed;
    std::vector<DeviceChart *> all() const
    {
        return {cpu, memory, network, power, loss, accuracy, speed};
    }
    /** The six of the report's training page (its power figures are in its energy table). */
    std::vector<DeviceChart *> reportPage() const
    {
        return {cpu, memory, network, loss, accuracy, speed};
    }
    static TrainingCharts create(QWidget *parent);
    void add(const app::MetricRow &row);   // CPU, memory, network, power
    void add(const app::ProgressRow &row); // loss, accuracy, throughput
    void flush();
    void clear();
    /** Fills the charts from a session's recorded readings (reports, reopened sessions). */
    void load(const app::Session &session);
};

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

/** One colour per detector everywhere (charts, galleries, video views): teacher green, tracker
 *  orange, student blue, motion purple, truth magenta; others grey. */
QColor detectorColor(const QString &name);

/** Byte counts for people: "38.2 MiB". */
QString formatBytes(double bytes);

} // namespace edgetrain::ui

#pragma once

#include <QColor>
#include <QPointF>
#include <QRectF>
#include <QSize>
#include <QString>
#include <QStringList>

#include <vector>

class QPainter;

namespace edgetrain::app {

/** One axis of a Chart: linear or logarithmic over [min, max], or named categories. */
struct ChartAxis
{
    enum class Scale { Linear, Log };
    QString title;
    Scale scale = Scale::Linear;
    double min = 0, max = 1;
    /** Linear: the distance between ticks, counted from `anchor`; 0 picks a round one. */
    double step = 0, anchor = 0;
    /** A category axis (the bars' groups): one slot a name; min, max and scale unused. */
    QStringList categories;

    /** Widens [min, max] to whole round ticks and sets `step` to them (a linear axis). */
    void roundOut(int ticks = 5);
};

/** Points joined by a line, with a dot at each, or dots alone; sizes in 96-dpi pixels. */
struct ChartSeries
{
    QString name; // empty: not in the legend
    QColor colour;
    std::vector<QPointF> points;
    bool line = true, dashed = false;
    double width = 2.2, dot = 6;
};

/** Bars stacked per category: `values[i]` in the x axis's category i. */
struct ChartBars
{
    QString name;
    QColor colour;
    std::vector<double> values;
};

/**
 * A chart drawn with QPainter alone (Qt Gui, no widgets), so that the reports of the window and
 * of edgetrain-cli draw the same pictures: a title, two axes with their grid, lines and dots or
 * stacked bars, a legend at its foot. Text is sized in points and lines in 96-dpi pixels scaled
 * to the device, so a chart reads alike on a PNG, an SVG or a page of a PDF.
 */
struct Chart
{
    QString title;
    ChartAxis x, y;
    std::vector<ChartSeries> series;
    std::vector<ChartBars> bars;

    /** The report's palette: palette::series(i), the colour-blind-safe one of the window. */
    static QColor colour(int i);

    /** Draws the chart into `box` of `p`'s device; leaves the painter's state as it was. */
    void paint(QPainter &p, const QRectF &box) const;
    /** DIR/NAME.png (`size` at twice its resolution) and, where Qt Svg is built, DIR/NAME.svg;
     *  appends the paths to `written`; false with `error` naming the file that failed. */
    bool writeFiles(const QString &dir, const QString &name, QSize size, QStringList *written,
                    QString *error) const;
};

} // namespace edgetrain::app

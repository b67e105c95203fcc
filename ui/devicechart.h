#pragma once

#include <QChartView>
#include <QPointF>
#include <QStringList>

#include <map>
#include <memory>
#include <vector>

class QGraphicsTextItem;
class QLineSeries;
class QValueAxis;

namespace edgetrain::ui {

/**
 * A quantity with one line per device (and, for a second variant such as network transmit, a
 * dashed one), over time or by epoch. Points are buffered and reach the chart when flush() is
 * called, so a burst of readings costs one repaint. The axes end on round ticks and scale their
 * unit to the data (seconds to minutes or hours; bytes to KiB, MiB, GiB), so their labels stay
 * short enough to fit a small chart.
 */
class DeviceChart : public QChartView
{
    Q_OBJECT

public:
    /** What x is: seconds since the run started, or the epoch (each epoch's values averaged). */
    enum class XAxis { Time, Epoch };
    /** What the values are: plain numbers in the chart's unit, or bytes (per second), which the
     *  y axis shows in B, KiB, MiB or GiB (per second). */
    enum class Values { Plain, Bytes, BytesPerSecond };

    DeviceChart(const QString &title, const QString &unit, QWidget *parent = nullptr);
    void setXAxis(XAxis x);
    void setValues(Values values) { m_values = values; }
    /** x: seconds, or the epoch (values of one epoch and device are averaged into one point).
     *  A line over time keeps a few thousand points: past that its older half is thinned. */
    void append(const QString &device, double x, double value, int variant = 0);
    /** A named grey dashed line besides the devices' (a plan, a validation figure): `points` in
     *  the chart's x (seconds or epochs) and values; one point: a level across the chart. Empty
     *  points remove it. */
    void setReference(const QString &name, std::vector<QPointF> points);
    /** What the chart says over its plot while no device has a point (why it is empty). */
    void setNote(const QString &text);
    QString note() const { return m_noteText; }
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
    /** Gives `device` the next colour of the shared palette if it has none yet. */
    void addDevice(const QString &device);
    /** Gives the shared palette's colours in `order` (devices it knew besides keep theirs, after
     *  those) and restyles this chart's lines; every chart sharing the palette calls it alike. */
    void orderDevices(const QStringList &order);
    int pointCount() const; // points shown, the devices' lines together (not the references)
    const QString &title() const { return m_title; }
    void setTitle(const QString &title);

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    struct Line
    {
        QLineSeries *series = nullptr;
        std::vector<QPointF> points;
        std::map<int, std::pair<double, int>> epochs; // by epoch: sum and count of its values
        bool dirty = false;
    };
    struct Reference
    {
        QLineSeries *series = nullptr;
        std::vector<QPointF> points;
    };
    Line &line(const QString &device, int variant);
    void restyle(const QString &device);
    /** The device's place in the shared palette; one past the known ones for a stranger (the
     *  lookup adds no entry). */
    int colorIndex(const QString &device) const;
    /** Puts the series in the palette's order, so every chart's legend lists the devices
     *  alike. */
    void reorder();
    void placeNote();

    QString m_title, m_unit;
    XAxis m_xAxis = XAxis::Time;
    Values m_values = Values::Plain;
    std::map<std::pair<QString, int>, Line> m_lines;
    std::map<QString, Reference> m_references;
    std::shared_ptr<std::map<QString, int>> m_colors = std::make_shared<std::map<QString, int>>();
    std::map<QString, bool> m_lost;
    QValueAxis *m_x = nullptr, *m_y = nullptr;
    QGraphicsTextItem *m_note = nullptr;
    QString m_noteText;
    double m_fixedMax = 0;
    // The units the series hold now: when the axes' unit changes, every line is rescaled, not
    // only the ones that got points.
    double m_xPer = 1.0, m_yPer = 1.0;
    bool m_dirty = false;
};

} // namespace edgetrain::ui

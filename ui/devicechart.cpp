#include "devicechart.h"

#include "app/report/palette.h"
#include "charts.h"

#include <QGraphicsTextItem>
#include <QLegendMarker>
#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace edgetrain::ui {

namespace {

constexpr double kKiB = 1024.0;
// Points a line over time holds at most: a long run's line stays light to copy and draw.
constexpr std::size_t kMaxPoints = 4000;

/** Halves the older half of `points` by averaging neighbouring pairs; the first point stays, so
 *  the line still starts where the run did (and the newer half keeps its detail). */
void thin(std::vector<QPointF> &points)
{
    const std::size_t older = points.size() / 2;
    std::vector<QPointF> out{points.front()};
    out.reserve(points.size());
    std::size_t i = 1;
    for (; i + 1 < older; i += 2)
        out.push_back((points[i] + points[i + 1]) / 2);
    out.insert(out.end(), points.begin() + std::ptrdiff_t(i), points.end());
    points = std::move(out);
}

/** The time axis's unit for a run `seconds` long: its title and seconds per unit. */
std::pair<QString, double> timeUnit(double seconds)
{
    if (seconds > 3 * 3600)
        return {QStringLiteral("hours"), 3600.0};
    if (seconds > 180)
        return {QStringLiteral("minutes"), 60.0};
    return {QStringLiteral("seconds"), 1.0};
}

/** The byte unit for values up to `max`: its name and bytes per unit. */
std::pair<QString, double> byteUnit(double max)
{
    if (max >= 10 * kKiB * kKiB * kKiB)
        return {QStringLiteral("GiB"), kKiB * kKiB * kKiB};
    if (max >= 10 * kKiB * kKiB)
        return {QStringLiteral("MiB"), kKiB * kKiB};
    if (max >= 10 * kKiB)
        return {QStringLiteral("KiB"), kKiB};
    return {QStringLiteral("B"), 1.0};
}

QList<QPointF> scaled(const std::vector<QPointF> &points, double xPer, double yPer)
{
    QList<QPointF> out;
    out.reserve(qsizetype(points.size()));
    for (const QPointF &p : points)
        out.append(QPointF(p.x() / xPer, p.y() / yPer));
    return out;
}

} // namespace

DeviceChart::DeviceChart(const QString &title, const QString &unit, QWidget *parent)
    : QChartView(parent), m_title(title), m_unit(unit)
{
    auto *c = new QChart;
    styleChart(c, title);
    setChart(c);
    setRenderHint(QPainter::Antialiasing);
    m_x = makeAxis(c, Qt::AlignBottom, timeUnit(0).first);
    m_y = makeAxis(c, Qt::AlignLeft, unit);
    roundAxis(m_x, 0, 10);
    roundAxis(m_y, 0, 1);
    m_note = new QGraphicsTextItem(c);
    m_note->setDefaultTextColor(app::palette::kMutedText);
    m_note->hide();
    connect(c, &QChart::plotAreaChanged, this, &DeviceChart::placeNote);
    setMinimumSize(300, 220);
}

void DeviceChart::setXAxis(XAxis x)
{
    m_xAxis = x;
    m_x->setTitleText(x == XAxis::Epoch ? QStringLiteral("epoch") : timeUnit(0).first);
    if (x == XAxis::Epoch)
        roundAxis(m_x, 0, 1, 4, 1);
}

void DeviceChart::setTitle(const QString &title)
{
    m_title = title;
    chart()->setTitle(title);
}

void DeviceChart::addDevice(const QString &device)
{
    if (!m_colors->count(device)) {
        const int next = int(m_colors->size());
        (*m_colors)[device] = next;
    }
}

void DeviceChart::orderDevices(const QStringList &order)
{
    std::vector<std::pair<int, QString>> others;
    for (const auto &[name, index] : *m_colors)
        if (!order.contains(name))
            others.emplace_back(index, name);
    std::sort(others.begin(), others.end());
    std::map<QString, int> colors;
    for (const QString &name : order)
        colors.emplace(name, int(colors.size()));
    for (const auto &[index, name] : others)
        colors.emplace(name, int(colors.size()));
    *m_colors = std::move(colors);
    reorder();
}

DeviceChart::Line &DeviceChart::line(const QString &device, int variant)
{
    Line &l = m_lines[{device, variant}];
    if (!l.series) {
        addDevice(device);
        l.series = new QLineSeries(this);
        l.series->setPointsVisible(m_xAxis == XAxis::Epoch);
        chart()->addSeries(l.series);
        l.series->attachAxis(m_x);
        l.series->attachAxis(m_y);
        reorder();
    }
    return l;
}

void DeviceChart::reorder()
{
    std::vector<std::pair<std::pair<int, int>, QLineSeries *>> order;
    for (const auto &[key, l] : m_lines)
        order.push_back({{colorIndex(key.first), key.second}, l.series});
    std::sort(order.begin(), order.end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    for (const auto &[name, r] : m_references)
        order.push_back({{int(m_colors->size()), 0}, r.series});
    for (const auto &[key, series] : order) {
        chart()->removeSeries(series);
        chart()->addSeries(series);
        series->attachAxis(m_x);
        series->attachAxis(m_y);
    }
    for (const auto &[key, l] : m_lines)
        if (key.second == 0)
            restyle(key.first);
}

int DeviceChart::colorIndex(const QString &device) const
{
    const auto it = m_colors->find(device);
    return it == m_colors->end() ? int(m_colors->size()) : it->second;
}

void DeviceChart::restyle(const QString &device)
{
    const auto lostIt = m_lost.find(device);
    const bool lost = lostIt != m_lost.end() && lostIt->second;
    const int index = colorIndex(device);
    for (int v = 0; v < 2; ++v) {
        const auto it = m_lines.find({device, v});
        if (it == m_lines.end())
            continue;
        QPen pen(chartColour(index), 1.6);
        pen.setStyle(lost ? Qt::DotLine : v == 1 ? Qt::DashLine : app::palette::seriesStyle(index));
        it->second.series->setPen(pen);
        it->second.series->setColor(pen.color()); // the epoch charts' dots
        QString name = device;
        if (lost)
            name += QStringLiteral(" (lost)");
        it->second.series->setName(name);
        // One legend entry per device: the second variant is told apart by its dashes (title).
        for (QLegendMarker *marker : chart()->legend()->markers(it->second.series))
            marker->setVisible(v == 0 || m_lines.find({device, 0}) == m_lines.end());
    }
}

void DeviceChart::append(const QString &device, double x, double value, int variant)
{
    if (!std::isfinite(value) || !std::isfinite(x))
        return;
    Line &l = line(device, variant);
    if (m_xAxis == XAxis::Epoch) {
        const int epoch = int(std::lround(x));
        auto &[sum, count] = l.epochs[epoch];
        sum += value;
        ++count;
        l.points.clear();
        for (const auto &[e, sc] : l.epochs)
            l.points.emplace_back(e, sc.first / sc.second);
    } else {
        l.points.emplace_back(x, value);
        if (l.points.size() > kMaxPoints)
            thin(l.points);
    }
    l.dirty = true;
}

void DeviceChart::setReference(const QString &name, std::vector<QPointF> points)
{
    auto it = m_references.find(name);
    if (points.empty()) {
        if (it != m_references.end()) {
            chart()->removeSeries(it->second.series);
            delete it->second.series;
            m_references.erase(it);
        }
        m_dirty = true;
        return;
    }
    if (it == m_references.end()) {
        Reference r;
        r.series = new QLineSeries(this);
        r.series->setName(name);
        r.series->setPen(QPen(app::palette::kMutedText, 1.6, Qt::DashLine));
        r.series->setPointsVisible(m_xAxis == XAxis::Epoch && points.size() > 1);
        r.series->setColor(app::palette::kMutedText);
        chart()->addSeries(r.series);
        r.series->attachAxis(m_x);
        r.series->attachAxis(m_y);
        it = m_references.emplace(name, r).first;
    }
    it->second.points = std::move(points);
    m_dirty = true;
}

void DeviceChart::setNote(const QString &text)
{
    m_noteText = text;
    m_note->setPlainText(text);
    placeNote();
}

void DeviceChart::placeNote()
{
    bool empty = true;
    for (const auto &[key, l] : m_lines)
        empty = empty && l.points.empty();
    const bool shown = empty && !m_noteText.isEmpty();
    m_note->setVisible(shown);
    // Axes without a line say nothing: the note alone, where the plot would be.
    m_x->setVisible(!shown);
    m_y->setVisible(!shown);
    const QRectF area = chart()->plotArea();
    m_note->setTextWidth(std::max(40.0, area.width() - 16));
    m_note->setPos(area.left() + 8,
                   area.top() +
                       std::max(0.0, (area.height() - m_note->boundingRect().height()) / 2));
}

void DeviceChart::resizeEvent(QResizeEvent *event)
{
    QChartView::resizeEvent(event);
    placeNote();
}

void DeviceChart::flush()
{
    bool any = m_dirty;
    double xMax = m_xAxis == XAxis::Epoch ? 1 : 10, yMax = 0;
    auto extend = [&](const std::vector<QPointF> &points) {
        for (const QPointF &p : points) {
            xMax = std::max(xMax, p.x());
            yMax = std::max(yMax, p.y());
        }
    };
    for (auto &[key, l] : m_lines) {
        extend(l.points);
        any = any || l.dirty;
    }
    for (const auto &[name, r] : m_references)
        extend(r.points);
    if (!any)
        return;
    const auto [xTitle, xPer] =
        m_xAxis == XAxis::Epoch ? std::pair{QStringLiteral("epoch"), 1.0} : timeUnit(xMax);
    double yPer = 1.0;
    QString yTitle = m_unit;
    if (m_values != Values::Plain) {
        const auto [unit, per] = byteUnit(yMax);
        yPer = per;
        yTitle = m_values == Values::BytesPerSecond ? unit + QStringLiteral("/s") : unit;
    }
    const bool rescaled = xPer != m_xPer || yPer != m_yPer;
    m_xPer = xPer;
    m_yPer = yPer;
    for (auto &[key, l] : m_lines) {
        if (!l.dirty && !m_dirty && !rescaled)
            continue;
        l.series->replace(scaled(l.points, xPer, yPer));
        l.dirty = false;
    }
    for (auto &[name, r] : m_references) {
        std::vector<QPointF> points = r.points;
        if (points.size() == 1) // a level: across the chart
            points = {QPointF(0, points[0].y()), QPointF(xMax, points[0].y())};
        r.series->replace(scaled(points, xPer, yPer));
    }
    m_dirty = false;
    m_x->setTitleText(xTitle);
    m_y->setTitleText(yTitle);
    roundAxis(m_x, 0, xMax / xPer, 5, m_xAxis == XAxis::Epoch ? 1 : 0);
    if (m_fixedMax > 0)
        roundAxis(m_y, 0, m_fixedMax);
    else
        roundAxis(m_y, 0, yMax / yPer * 1.05);
    placeNote();
}

void DeviceChart::clear()
{
    for (auto &[key, l] : m_lines) {
        chart()->removeSeries(l.series);
        delete l.series;
    }
    m_lines.clear();
    for (auto &[name, r] : m_references) {
        chart()->removeSeries(r.series);
        delete r.series;
    }
    m_references.clear();
    m_colors->clear();
    m_lost.clear();
    m_xPer = m_yPer = 1.0;
    roundAxis(m_x, 0, m_xAxis == XAxis::Epoch ? 1 : 10, 4, m_xAxis == XAxis::Epoch ? 1 : 0);
    roundAxis(m_y, 0, m_fixedMax > 0 ? m_fixedMax : 1);
    placeNote();
}

void DeviceChart::setLost(const QString &device, bool lost)
{
    m_lost[device] = lost;
    restyle(device);
}

int DeviceChart::pointCount() const
{
    int n = 0;
    for (const auto &[key, l] : m_lines)
        n += int(l.series->count());
    return n;
}

} // namespace edgetrain::ui

#include "chart.h"

#include "palette.h"

#include <QFontMetricsF>
#include <QImage>
#include <QPaintDevice>
#include <QPainter>
#include <QPolygonF>
#ifdef EDGETRAIN_REPORT_SVG
#include <QSvgGenerator>
#endif

#include <algorithm>
#include <cmath>

namespace edgetrain::app {

namespace {

const QColor kText(0x40, 0x40, 0x40), kFrame(0xd4, 0xd4, 0xd4), kAxis(0x9a, 0x9a, 0x9a),
    kGrid(0xe0, 0xe0, 0xe0), kMinorGrid(0xf2, 0xf2, 0xf2);

struct Tick
{
    double value;
    QString label; // empty: a minor tick, a grid line alone
};

/** A round distance between about `ticks` ticks over `span`: 1, 2 or 5 times a power of ten. */
double roundStep(double span, int ticks)
{
    if (!(span > 0))
        return 1;
    const double raw = span / std::max(1, ticks);
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (raw <= m * magnitude * (1 + 1e-9))
            return m * magnitude;
    return 10 * magnitude;
}

/** A linear tick's label: as many decimals as the step needs, no exponent. */
QString linearLabel(double v, double step)
{
    if (std::abs(v) < step * 1e-6)
        v = 0; // no "-0"
    const int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step) - 1e-9));
    return QString::number(v, 'f', std::clamp(decimals, 0, 6));
}

std::vector<Tick> ticksOf(const ChartAxis &a)
{
    std::vector<Tick> ticks;
    if (!a.categories.isEmpty() || !(a.max > a.min))
        return ticks;
    if (a.scale == ChartAxis::Scale::Log) {
        if (a.min <= 0)
            return ticks;
        // labels at the powers of ten, grid lines at 2..9 times them
        for (int k = int(std::floor(std::log10(a.min))); std::pow(10.0, k) <= a.max * (1 + 1e-9);
             ++k)
            for (int m = 1; m <= 9; ++m) {
                const double v = m * std::pow(10.0, k);
                if (v >= a.min * (1 - 1e-9) && v <= a.max * (1 + 1e-9))
                    ticks.push_back(
                        {v, m > 1 ? QString()
                                  : QString::number(v, v >= 1 ? 'f' : 'g', v >= 1 ? 0 : 3)});
            }
        return ticks;
    }
    const double step = a.step > 0 ? a.step : roundStep(a.max - a.min, 5);
    const double first = std::ceil((a.min - a.anchor) / step - 1e-9);
    for (double i = first; a.anchor + i * step <= a.max + step * 1e-9; ++i)
        ticks.push_back({a.anchor + i * step, linearLabel(a.anchor + i * step, step)});
    return ticks;
}

/** The axis's ticks, fewer and rounder where their labels would be closer than `gap` over an
 *  axis `length` long (a linear axis; a log axis keeps its decades). */
std::vector<Tick> fittingTicks(const ChartAxis &a, double length, double gap)
{
    std::vector<Tick> ticks = ticksOf(a);
    if (a.scale != ChartAxis::Scale::Linear || ticks.size() < 3 || gap <= 0)
        return ticks;
    const int fit = std::max(1, int(length / gap));
    if (int(ticks.size()) - 1 <= fit)
        return ticks;
    ChartAxis fewer = a;
    const double step = ticks[1].value - ticks[0].value;
    const int intervals = int(ticks.size()) - 1;
    fewer.anchor = ticks[0].value;
    // every k-th tick where that still ends on the last one (0, 40, 80 of 0, 20, ..., 80)
    for (int k = 2; k < intervals; ++k)
        if (intervals % k == 0 && intervals / k <= fit) {
            fewer.step = k * step;
            return ticksOf(fewer);
        }
    fewer.step = std::max(roundStep(a.max - a.min, fit), 2 * step);
    return ticksOf(fewer);
}

/** Where `v` lies along the axis, 0 at its start and 1 at its end. */
double fraction(const ChartAxis &a, double v)
{
    if (a.scale == ChartAxis::Scale::Log) {
        const double lo = std::log10(a.min), hi = std::log10(a.max);
        return hi > lo ? (std::log10(v) - lo) / (hi - lo) : 0.5;
    }
    return a.max > a.min ? (v - a.min) / (a.max - a.min) : 0.5;
}

bool drawable(const ChartAxis &a, double v)
{
    return std::isfinite(v) && (a.scale == ChartAxis::Scale::Linear || v > 0);
}

/** An entry of the legend: a short line (dashed or not) with a dot, a dot alone, or a box. */
struct LegendEntry
{
    QString name;
    QColor colour;
    bool line = false, dashed = false, box = false;
    double width = 0, dot = 0;
};

void drawMarker(QPainter &p, const LegendEntry &e, const QRectF &m, double u)
{
    const QPointF centre = m.center();
    if (e.box) {
        const double side = m.height() * 0.7;
        p.fillRect(QRectF(centre.x() - side / 2, centre.y() - side / 2, side, side), e.colour);
        return;
    }
    if (e.line) {
        p.setPen(QPen(e.colour, e.width * u, e.dashed ? Qt::DashLine : Qt::SolidLine, Qt::FlatCap));
        p.drawLine(QPointF(m.left(), centre.y()), QPointF(m.right(), centre.y()));
    }
    p.setPen(Qt::NoPen);
    p.setBrush(e.colour);
    p.drawEllipse(centre, e.dot * u / 2, e.dot * u / 2);
    p.setBrush(Qt::NoBrush);
}

/** Draws the legend at the foot of `r`, as many entries a row as fit, each row centred;
 *  returns the height it took. */
double drawLegend(QPainter &p, const std::vector<LegendEntry> &entries, const QRectF &r,
                  const QFontMetricsF &lm, double u)
{
    const double markerW = 20 * u, gap = 5 * u, spacing = 14 * u, lineH = lm.height();
    std::vector<std::vector<std::size_t>> rows;
    std::vector<double> rowWidths;
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const double w = markerW + gap + lm.horizontalAdvance(entries[i].name);
        if (rows.empty() || rowWidths.back() + spacing + w > r.width()) {
            rows.emplace_back();
            rowWidths.push_back(-spacing);
        }
        rows.back().push_back(i);
        rowWidths.back() += spacing + w;
    }
    if (rows.empty())
        return 0;
    const double height = rows.size() * lineH + 4 * u;
    for (std::size_t row = 0; row < rows.size(); ++row) {
        double left = r.center().x() - std::min(rowWidths[row], r.width()) / 2;
        const double top = r.bottom() - height + 4 * u + row * lineH;
        for (std::size_t i : rows[row]) {
            drawMarker(p, entries[i], QRectF(left, top, markerW, lineH), u);
            left += markerW + gap;
            const double w = lm.horizontalAdvance(entries[i].name);
            p.setPen(kText);
            p.drawText(QRectF(left, top, w + 2 * u, lineH), Qt::AlignLeft | Qt::AlignVCenter,
                       entries[i].name);
            left += w + spacing;
        }
    }
    return height;
}

} // namespace

void ChartAxis::roundOut(int ticks)
{
    step = roundStep(max - min, ticks);
    anchor = 0;
    min = std::floor(min / step + 1e-9) * step;
    max = std::ceil(max / step - 1e-9) * step;
    if (!(max > min))
        max = min + step;
}

QColor Chart::colour(int i)
{
    return palette::series(i);
}

void Chart::paint(QPainter &p, const QRectF &box) const
{
    p.save();
    p.setRenderHint(QPainter::Antialiasing);
    p.setRenderHint(QPainter::TextAntialiasing);
    const double u = p.device()->logicalDpiX() / 96.0; // 96-dpi pixels on this device
    p.fillRect(box, Qt::white);
    p.setPen(QPen(kFrame, u));
    p.drawRect(box.adjusted(u / 2, u / 2, -u / 2, -u / 2));
    QRectF r = box.adjusted(8 * u, 6 * u, -10 * u, -6 * u);

    // Text a little smaller on a chart narrower than half a page, never below legible.
    const double inches = box.width() / p.device()->logicalDpiX();
    const double textScale = std::clamp(inches / 3.5, 0.8, 1.0);
    QFont titleFont = p.font();
    titleFont.setPointSizeF(9.5 * textScale);
    titleFont.setBold(true);
    QFont labelFont = p.font();
    labelFont.setPointSizeF(8 * textScale);
    labelFont.setBold(false);
    const QFontMetricsF tm(titleFont, p.device()), lm(labelFont, p.device());
    const double lineH = lm.height();
    p.setPen(kText);
    if (!title.isEmpty()) {
        p.setFont(titleFont);
        // on two lines where one is too narrow, never more
        const QRectF room(r.left(), r.top(), r.width(), 2 * tm.height());
        const QRectF used =
            p.boundingRect(room, Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, title);
        p.save();
        p.setClipRect(room);
        p.drawText(room, Qt::AlignHCenter | Qt::AlignTop | Qt::TextWordWrap, title);
        p.restore();
        r.setTop(std::min(used.bottom(), room.bottom()) + 4 * u);
    }

    // The legend at the foot.
    std::vector<LegendEntry> entries;
    for (const ChartBars &b : bars)
        if (!b.name.isEmpty())
            entries.push_back({b.name, b.colour, false, false, true});
    for (const ChartSeries &s : series)
        if (!s.name.isEmpty())
            entries.push_back({s.name, s.colour, s.line, s.dashed, false, s.width, s.dot});
    p.setFont(labelFont);
    r.setBottom(r.bottom() - drawLegend(p, entries, r, lm, u));

    // The plot area: what the axes' titles and tick labels leave; no more ticks than fit.
    double bottom = r.bottom() - lineH - 4 * u; // the x tick labels
    if (!x.title.isEmpty())
        bottom -= lineH;
    const double top = r.top() + lineH / 2;
    const std::vector<Tick> yTicks = fittingTicks(y, bottom - top, 1.8 * lineH);
    double yLabelW = 0;
    for (const Tick &t : yTicks)
        yLabelW = std::max(yLabelW, lm.horizontalAdvance(t.label));
    const double left = r.left() + (y.title.isEmpty() ? 0 : lineH + 4 * u) + yLabelW + 6 * u;
    double widest = 0;
    for (const Tick &t : ticksOf(x))
        widest = std::max(widest, lm.horizontalAdvance(t.label));
    const std::vector<Tick> xTicks = fittingTicks(x, r.right() - left, widest + 10 * u);
    double rightPad = 4 * u;
    if (!xTicks.empty())
        rightPad = std::max(rightPad, lm.horizontalAdvance(xTicks.back().label) / 2);
    const QRectF plot(QPointF(left, top), QPointF(r.right() - rightPad, bottom));
    if (plot.width() <= 0 || plot.height() <= 0) {
        p.restore();
        return;
    }
    auto px = [&](double v) { return plot.left() + fraction(x, v) * plot.width(); };
    auto py = [&](double v) { return plot.bottom() - fraction(y, v) * plot.height(); };

    for (const Tick &t : yTicks) {
        const double at = py(t.value);
        p.setPen(QPen(t.label.isEmpty() ? kMinorGrid : kGrid, u));
        p.drawLine(QPointF(plot.left(), at), QPointF(plot.right(), at));
        p.setPen(kText);
        p.drawText(QRectF(plot.left() - 6 * u - yLabelW, at - lineH / 2, yLabelW, lineH),
                   Qt::AlignRight | Qt::AlignVCenter, t.label);
    }
    const QRectF xLabels(plot.left(), plot.bottom() + 4 * u, plot.width(), lineH);
    for (const Tick &t : xTicks) {
        const double at = px(t.value);
        p.setPen(QPen(t.label.isEmpty() ? kMinorGrid : kGrid, u));
        p.drawLine(QPointF(at, plot.top()), QPointF(at, plot.bottom()));
        p.setPen(kText);
        const double w = lm.horizontalAdvance(t.label) + 2 * u;
        p.drawText(QRectF(at - w / 2, xLabels.top(), w, lineH), Qt::AlignCenter, t.label);
    }
    const double slot = x.categories.isEmpty() ? 0 : plot.width() / x.categories.size();
    p.setPen(kText);
    for (int i = 0; i < x.categories.size(); ++i)
        p.drawText(QRectF(plot.left() + i * slot, xLabels.top(), slot, lineH), Qt::AlignCenter,
                   lm.elidedText(x.categories[i], Qt::ElideRight, slot));
    if (!x.title.isEmpty())
        p.drawText(QRectF(plot.left(), xLabels.bottom(), plot.width(), lineH), Qt::AlignCenter,
                   x.title);
    if (!y.title.isEmpty()) {
        p.save();
        p.translate(r.left(), plot.center().y());
        p.rotate(-90);
        p.drawText(QRectF(-plot.height() / 2, 0, plot.height(), lineH), Qt::AlignCenter,
                   lm.elidedText(y.title, Qt::ElideRight, plot.height()));
        p.restore();
    }

    // Stacked bars, then the series over them, then the axes' lines over both.
    for (int i = 0; i < x.categories.size(); ++i) {
        double base = 0;
        for (const ChartBars &b : bars) {
            const double v = std::size_t(i) < b.values.size() ? b.values[std::size_t(i)] : 0;
            if (v <= 0)
                continue;
            const double centre = plot.left() + (i + 0.5) * slot;
            p.fillRect(QRectF(QPointF(centre - slot * 0.3, py(base + v)),
                              QPointF(centre + slot * 0.3, py(base))),
                       b.colour);
            base += v;
        }
    }
    p.setClipRect(plot.adjusted(-8 * u, -8 * u, 8 * u, 8 * u));
    for (const ChartSeries &s : series) {
        QPolygonF points;
        for (const QPointF &v : s.points)
            if (drawable(x, v.x()) && drawable(y, v.y()))
                points.append(QPointF(px(v.x()), py(v.y())));
        if (s.line && points.size() > 1) {
            p.setPen(QPen(s.colour, s.width * u, s.dashed ? Qt::DashLine : Qt::SolidLine,
                          Qt::RoundCap, Qt::RoundJoin));
            p.drawPolyline(points);
        }
        p.setPen(Qt::NoPen);
        p.setBrush(s.colour);
        for (const QPointF &at : points)
            p.drawEllipse(at, s.dot * u / 2, s.dot * u / 2);
        p.setBrush(Qt::NoBrush);
    }
    p.setClipping(false);
    p.setPen(QPen(kAxis, u));
    p.drawLine(plot.bottomLeft(), plot.bottomRight());
    p.drawLine(plot.bottomLeft(), plot.topLeft());
    p.restore();
}

bool Chart::writeFiles(const QString &dir, const QString &name, QSize size, QStringList *written,
                       QString *error) const
{
    const QString png = dir + QLatin1Char('/') + name + QStringLiteral(".png");
    QImage image(size * 2, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(2);
    image.fill(Qt::white);
    {
        QPainter p(&image);
        paint(p, QRectF(QPointF(), QSizeF(size)));
    }
    if (!image.save(png)) {
        *error = QStringLiteral("cannot write '%1'").arg(png);
        return false;
    }
    written->append(png);
#ifdef EDGETRAIN_REPORT_SVG
    const QString svg = dir + QLatin1Char('/') + name + QStringLiteral(".svg");
    QSvgGenerator generator;
    generator.setFileName(svg);
    generator.setSize(size);
    generator.setViewBox(QRect(QPoint(), size));
    generator.setResolution(96); // the PNG's: the same text sizes
    generator.setTitle(title);
    QPainter p;
    if (!p.begin(&generator)) {
        *error = QStringLiteral("cannot write '%1'").arg(svg);
        return false;
    }
    paint(p, QRectF(QPointF(), QSizeF(size)));
    p.end();
    written->append(svg);
#endif
    return true;
}

} // namespace edgetrain::app

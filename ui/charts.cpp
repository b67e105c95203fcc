#include "charts.h"

#include "app/report/palette.h"

#include <QAreaSeries>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLocale>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace edgetrain::ui {

QValueAxis *makeAxis(QChart *chart, Qt::Alignment where, const QString &title)
{
    auto *axis = new QValueAxis;
    QFont f = axis->labelsFont();
    f.setPointSizeF(8);
    axis->setLabelsFont(f);
    axis->setTitleFont(f);
    axis->setTitleText(title);
    axis->setLabelFormat(QStringLiteral("%.3g"));
    chart->addAxis(axis, where);
    return axis;
}

double niceCeil(double v)
{
    if (v <= 0)
        return 1.0;
    const double p = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * p >= v)
            return m * p;
    return 10 * p;
}

void roundAxis(QValueAxis *axis, double min, double max, int ticks, double minStep)
{
    if (!(max > min)) // nothing above the bottom yet (all zeros): one unit
        max = min + 1;
    const double step = std::max(minStep, niceCeil((max - min) / ticks));
    const double bottom = std::floor(min / step + 1e-9) * step;
    const double top = std::max(bottom + step, std::ceil(max / step - 1e-9) * step);
    // Fixed ticks while range and interval change: a wide range with the old, narrow interval
    // would lay out millions of ticks in between.
    axis->setTickType(QValueAxis::TicksFixed);
    axis->setRange(bottom, top);
    axis->setTickAnchor(bottom);
    axis->setTickInterval(step);
    axis->setTickType(QValueAxis::TicksDynamic);
    const int decimals = step >= 1 ? 0 : int(std::ceil(-std::log10(step) - 1e-9));
    axis->setLabelFormat(QStringLiteral("%.") + QString::number(decimals) + QStringLiteral("f"));
}

void styleChart(QChart *chart, const QString &title)
{
    chart->setTitle(title);
    QFont f = chart->titleFont();
    f.setPointSizeF(9.5);
    f.setBold(true);
    chart->setTitleFont(f);
    chart->setMargins(QMargins(4, 2, 4, 2));
    chart->setBackgroundRoundness(0);
    chart->legend()->setAlignment(Qt::AlignBottom);
    QFont lf = chart->legend()->font();
    lf.setPointSizeF(8);
    chart->legend()->setFont(lf);
    chart->setAnimationOptions(QChart::NoAnimation); // live data: animations only cost time
}

QColor chartColour(int i)
{
    return app::palette::series(i);
}

QString formatBytes(double bytes)
{
    return QLocale().formattedDataSize(qint64(bytes), 1, QLocale::DataSizeIecFormat);
}

MemoryChart::MemoryChart(QWidget *parent) : QChartView(parent)
{
    auto *c = new QChart;
    styleChart(c, QStringLiteral("Peak memory against recompute"));
    setChart(c);
    setRenderHint(QPainter::Antialiasing);
    m_x = makeAxis(c, Qt::AlignBottom, QStringLiteral("compute per step (store-all = 1)"));
    m_y = makeAxis(c, Qt::AlignLeft, QStringLiteral("predicted peak, MiB"));
    m_frontier = new QLineSeries(this);
    m_frontier->setName(QStringLiteral("schedules"));
    m_frontier->setPen(QPen(app::palette::kBlue, 1.5));
    m_points = new QScatterSeries(this);
    m_points->setMarkerSize(7);
    m_points->setColor(app::palette::kBlue);
    m_current = new QScatterSeries(this);
    m_current->setName(QStringLiteral("chosen"));
    m_current->setMarkerSize(13);
    m_current->setColor(app::palette::kVermillion);
    m_budget = new QLineSeries(this);
    m_budget->setName(QStringLiteral("budget"));
    m_budget->setPen(QPen(app::palette::kMutedText, 1.2, Qt::DashLine));
    for (QXYSeries *s : {static_cast<QXYSeries *>(m_frontier), static_cast<QXYSeries *>(m_points),
                         static_cast<QXYSeries *>(m_budget), static_cast<QXYSeries *>(m_current)}) {
        c->addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_y);
    }
    c->legend()->markers(m_points).first()->setVisible(false);
    setMinimumSize(300, 220);
}

void MemoryChart::show(const app::PlanView &v)
{
    constexpr double MiB = 1024.0 * 1024.0;
    QList<QPointF> pts;
    double xMax = 1.0, yMax = 0.0;
    for (const app::PlanPoint &p : v.sweep) {
        pts.append(QPointF(p.recomputeFactor, double(p.peakBytes) / MiB));
        xMax = std::max(xMax, p.recomputeFactor);
        yMax = std::max(yMax, double(p.peakBytes) / MiB);
    }
    std::sort(pts.begin(), pts.end(),
              [](const QPointF &a, const QPointF &b) { return a.x() < b.x(); });
    m_frontier->replace(pts);
    m_points->replace(pts);
    const double chosenY = double(v.plan.predicted_peak_bytes) / MiB;
    m_current->replace(v.error.isEmpty() && v.plan.fits
                           ? QList<QPointF>{QPointF(v.plan.predicted_recompute_factor, chosenY)}
                           : QList<QPointF>{});
    // Store-all (1) a little off the left edge, so its dot is not cut in half.
    roundAxis(m_x, 0.95, std::max(xMax * 1.02, 1.05), 4);
    if (v.request.budgetBytes >= 0) {
        const double b = double(v.request.budgetBytes) / MiB;
        m_budget->replace({QPointF(m_x->min(), b), QPointF(m_x->max(), b)});
        yMax = std::max(yMax, b);
    } else {
        m_budget->clear();
    }
    roundAxis(m_y, 0, yMax * 1.05);
}

QColor detectorColor(const QString &name)
{
    return app::palette::onLight(app::palette::sourceOf(name));
}

PrChart::PrChart(QWidget *parent) : QChartView(parent)
{
    auto *c = new QChart;
    styleChart(c, QString());
    setChart(c);
    setRenderHint(QPainter::Antialiasing);
    m_x = makeAxis(c, Qt::AlignBottom, QStringLiteral("recall"));
    m_y = makeAxis(c, Qt::AlignLeft, QStringLiteral("precision"));
    for (QValueAxis *axis : {m_x, m_y}) {
        axis->setRange(0, 1);
        axis->setTickCount(6);
        axis->setLabelFormat(QStringLiteral("%.1f"));
    }
    setMinimumSize(260, 220);
}

void PrChart::show(const std::vector<vision::DetectorScore> &scores,
                   const std::vector<vision::FigureIntervals> &intervals)
{
    for (auto &[name, d] : m_curves)
        for (QAbstractSeries *s :
             {static_cast<QAbstractSeries *>(d.curve), static_cast<QAbstractSeries *>(d.point),
              static_cast<QAbstractSeries *>(d.box)})
            if (s) {
                chart()->removeSeries(s);
                delete s;
            }
    m_curves.clear();
    const bool boxes = !intervals.empty() && intervals.size() == scores.size();
    chart()->setTitle(scores.empty()
                          ? QStringLiteral("Precision against recall: no verified frames yet")
                      // Short enough to stay whole in the Report step's two fifths at 1366 px.
                      : boxes ? QStringLiteral("Precision–recall (IoU 0.5), 95 % intervals")
                              : QStringLiteral("Precision–recall (IoU 0.5), operating points"));
    for (std::size_t i = 0; i < scores.size(); ++i) {
        const vision::DetectorScore &d = scores[i];
        const QString name = QString::fromStdString(d.name);
        const QColor colour = detectorColor(name);
        Detector shown;
        if (boxes && d.detections > 0) {
            const vision::FigureIntervals &ci = intervals[i];
            auto *upper = new QLineSeries(this);
            auto *lower = new QLineSeries(this);
            upper->append(
                {QPointF(ci.recall.lo, ci.precision.hi), QPointF(ci.recall.hi, ci.precision.hi)});
            lower->append(
                {QPointF(ci.recall.lo, ci.precision.lo), QPointF(ci.recall.hi, ci.precision.lo)});
            shown.box = new QAreaSeries(upper, lower);
            upper->setParent(shown.box); // the area series does not own its edges
            lower->setParent(shown.box);
            shown.box->setName(QStringLiteral("%1 95 % interval").arg(name));
            QColor fill = colour;
            fill.setAlpha(50);
            shown.box->setBrush(fill);
            shown.box->setPen(QPen(colour, 1.0, Qt::DashLine));
        }
        shown.curve = new QLineSeries(this);
        shown.curve->setName(QStringLiteral("%1 (AP50 %2)").arg(name).arg(d.ap50, 0, 'f', 2));
        shown.curve->setPen(
            QPen(colour, 2.0, app::palette::lineStyle(app::palette::sourceOf(name))));
        QList<QPointF> points;
        points.reserve(qsizetype(d.curve.size()));
        for (const vision::PrPoint &p : d.curve)
            points.append(QPointF(p.recall, p.precision));
        shown.curve->replace(points);
        shown.point = new QScatterSeries(this);
        shown.point->setName(QStringLiteral("%1 operating point").arg(name));
        shown.point->setMarkerSize(12);
        shown.point->setColor(colour);
        shown.point->setBorderColor(Qt::black);
        shown.point->replace(d.detections > 0 ? QList<QPointF>{QPointF(d.recall, d.precision)}
                                              : QList<QPointF>{});
        for (QAbstractSeries *s : {static_cast<QAbstractSeries *>(shown.box),
                                   static_cast<QAbstractSeries *>(shown.curve),
                                   static_cast<QAbstractSeries *>(shown.point)}) {
            if (!s)
                continue;
            chart()->addSeries(s);
            s->attachAxis(m_x);
            s->attachAxis(m_y);
        }
        // One legend entry per detector; the title says what the dots and boxes are.
        for (QAbstractSeries *s : {static_cast<QAbstractSeries *>(shown.point),
                                   static_cast<QAbstractSeries *>(shown.box)})
            if (s)
                for (QLegendMarker *marker : chart()->legend()->markers(s))
                    marker->setVisible(false);
        m_curves[name] = shown;
    }
}

QLineSeries *PrChart::curve(const QString &name) const
{
    const auto it = m_curves.find(name);
    return it == m_curves.end() ? nullptr : it->second.curve;
}

QScatterSeries *PrChart::operatingPoint(const QString &name) const
{
    const auto it = m_curves.find(name);
    return it == m_curves.end() ? nullptr : it->second.point;
}

QAreaSeries *PrChart::intervalBox(const QString &name) const
{
    const auto it = m_curves.find(name);
    return it == m_curves.end() ? nullptr : it->second.box;
}

} // namespace edgetrain::ui

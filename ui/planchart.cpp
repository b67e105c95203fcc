#include "planchart.h"

#include "app/report/palette.h"
#include "charts.h"

#include <QLegendMarker>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>

namespace edgetrain::ui {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;

QList<QPointF> byCost(const std::vector<app::PlanPoint> &points)
{
    QList<QPointF> pts;
    for (const app::PlanPoint &p : points)
        pts.append(QPointF(p.recomputeFactor, double(p.peakBytes) / kMiB));
    std::sort(pts.begin(), pts.end(),
              [](const QPointF &a, const QPointF &b) { return a.x() < b.x(); });
    return pts;
}
} // namespace

PlanChart::PlanChart(QWidget *parent) : QChartView(parent)
{
    auto *c = new QChart;
    styleChart(c, tr("Peak memory against recompute"));
    setChart(c);
    setRenderHint(QPainter::Antialiasing);
    m_x = makeAxis(c, Qt::AlignBottom, tr("compute per step (store-all = 1)"));
    m_y = makeAxis(c, Qt::AlignLeft, tr("predicted peak, MiB"));
    auto line = [this](int series, const QString &name) {
        auto *s = new QLineSeries(this);
        s->setName(name);
        s->setPen(QPen(app::palette::series(series), 1.5, app::palette::seriesStyle(series)));
        return s;
    };
    auto dots = [this](const QColor &colour, qreal size) {
        auto *s = new QScatterSeries(this);
        s->setMarkerSize(size);
        s->setColor(colour);
        s->setBorderColor(colour);
        return s;
    };
    m_frontier = line(0, tr("schedules"));
    m_points = dots(app::palette::series(0), 7);
    m_tiled = line(1, tr("with tiles"));
    m_tiledPoints = dots(app::palette::series(1), 7);
    m_current = dots(app::palette::kVermillion, 13);
    m_current->setName(tr("chosen"));
    m_tiledChoice = dots(app::palette::series(1), 13);
    m_tiledChoice->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    m_tiledChoice->setBorderColor(app::palette::kText);
    m_tiledChoice->setName(tr("tiled plan"));
    m_budget = new QLineSeries(this);
    m_budget->setName(tr("budget"));
    m_budget->setPen(QPen(app::palette::kMutedText, 1.2, Qt::DashLine));
    setMinimumSize(300, 220);
}

void PlanChart::show(const app::PlanView &v)
{
    const QList<QPointF> untiled = byCost(v.sweep);
    const QList<QPointF> tiled = byCost(v.tiledSweep);
    m_frontier->replace(untiled);
    m_points->replace(untiled);
    m_tiled->replace(tiled);
    m_tiledPoints->replace(tiled);
    const bool offered = v.error.isEmpty() && v.tiled && v.tiled->tiling.active();
    m_tiled->setName(offered
                         ? tr("on %1×%2 tiles").arg(v.tiled->tiling.rows).arg(v.tiled->tiling.cols)
                         : tr("with tiles"));
    const bool chosen = v.error.isEmpty() && v.plan.fits;
    m_current->replace(chosen ? QList<QPointF>{QPointF(v.plan.predicted_recompute_factor,
                                                       double(v.plan.predicted_peak_bytes) / kMiB)}
                              : QList<QPointF>{});
    const bool tiledFits = offered && v.tiled->plan.fits;
    m_tiledChoice->replace(
        tiledFits ? QList<QPointF>{QPointF(v.tiled->predicted_step_factor,
                                           double(v.tiled->plan.predicted_peak_bytes) / kMiB)}
                  : QList<QPointF>{});
    // Only what there is to show, in the legend too (a hidden legend marker keeps its room);
    // lines first, so the marks are drawn over them.
    QChart *c = chart();
    for (QAbstractSeries *s : c->series())
        c->removeSeries(s);
    auto add = [this, c](QXYSeries *s, bool shown, bool named = true) {
        if (!shown)
            return;
        c->addSeries(s);
        s->attachAxis(m_x);
        s->attachAxis(m_y);
        if (!named)
            c->legend()->markers(s).first()->setVisible(false);
    };
    add(m_frontier, true);
    add(m_points, true, false);
    add(m_tiled, !tiled.isEmpty());
    add(m_tiledPoints, !tiled.isEmpty(), false);
    add(m_budget, v.request.budgetBytes >= 0);
    add(m_current, chosen);
    add(m_tiledChoice, tiledFits);
    // The axes after the series: attaching a series sets an axis's ticks back.
    double xMax = 1.0, yMax = 0.0;
    const QList<QPointF> marks = m_current->points() + m_tiledChoice->points();
    for (const QList<QPointF> *pts : {&untiled, &tiled, &marks})
        for (const QPointF &p : *pts) {
            xMax = std::max(xMax, p.x());
            yMax = std::max(yMax, p.y());
        }
    // Store-all (1) a little off the left edge, so its dot is not cut in half.
    roundAxis(m_x, 0.95, std::max(xMax * 1.02, 1.05), 4);
    if (v.request.budgetBytes >= 0) {
        const double b = double(v.request.budgetBytes) / kMiB;
        m_budget->replace({QPointF(m_x->min(), b), QPointF(m_x->max(), b)});
        yMax = std::max(yMax, b);
    }
    roundAxis(m_y, 0, yMax * 1.05);
}

} // namespace edgetrain::ui

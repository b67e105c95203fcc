#include "charts.h"

#include "app/report/chart.h"

#include <QAreaSeries>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLocale>
#include <QScatterSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>

namespace edgetrain::ui {

namespace {

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

/** A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten. */
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

} // namespace

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
    return app::Chart::colour(i); // the reports' palette: one copy
}

QString formatBytes(double bytes)
{
    return QLocale().formattedDataSize(qint64(bytes), 1, QLocale::DataSizeIecFormat);
}

DeviceChart::DeviceChart(const QString &title, const QString &unit, QWidget *parent)
    : QChartView(parent), m_title(title), m_unit(unit)
{
    auto *c = new QChart;
    styleChart(c, title);
    setChart(c);
    setRenderHint(QPainter::Antialiasing);
    m_x = makeAxis(c, Qt::AlignBottom, QStringLiteral("seconds"));
    m_y = makeAxis(c, Qt::AlignLeft, unit);
    m_x->setRange(0, 10);
    m_y->setRange(0, 1);
    setMinimumSize(260, 170);
}

DeviceChart::Line &DeviceChart::line(const QString &device, int variant)
{
    Line &l = m_lines[{device, variant}];
    if (!l.series) {
        if (!m_colors->count(device)) {
            const int next = int(m_colors->size());
            (*m_colors)[device] = next;
        }
        l.series = new QLineSeries(this);
        chart()->addSeries(l.series);
        l.series->attachAxis(m_x);
        l.series->attachAxis(m_y);
        restyle(device);
    }
    return l;
}

void DeviceChart::restyle(const QString &device)
{
    const bool lost = m_lost[device];
    for (int v = 0; v < 2; ++v) {
        const auto it = m_lines.find({device, v});
        if (it == m_lines.end())
            continue;
        QPen pen(chartColour((*m_colors)[device]), 1.6);
        pen.setStyle(lost ? Qt::DotLine : v == 1 ? Qt::DashLine : Qt::SolidLine);
        it->second.series->setPen(pen);
        QString name = device;
        if (lost)
            name += QStringLiteral(" (lost)");
        it->second.series->setName(name);
        // One legend entry per device: the second variant is told apart by its dashes (title).
        if (v == 1)
            for (QLegendMarker *marker : chart()->legend()->markers(it->second.series))
                marker->setVisible(false);
    }
}

void DeviceChart::append(const QString &device, double seconds, double value, int variant)
{
    if (!std::isfinite(value))
        return;
    Line &l = line(device, variant);
    l.points.emplace_back(seconds, value);
    l.dirty = true;
}

void DeviceChart::flush()
{
    bool any = false;
    double xMax = 10, yMax = 0;
    for (auto &[key, l] : m_lines) {
        if (!l.points.empty()) {
            xMax = std::max(xMax, l.points.back().x());
            for (const QPointF &p : l.points)
                yMax = std::max(yMax, p.y());
        }
        if (!l.dirty)
            continue;
        l.series->replace(QList<QPointF>(l.points.begin(), l.points.end()));
        l.dirty = false;
        any = true;
    }
    if (!any)
        return;
    m_x->setRange(0, std::ceil(xMax * 1.05));
    m_x->setLabelFormat(QStringLiteral("%.0f"));
    const double top = m_fixedMax > 0 ? m_fixedMax : niceCeil(yMax * 1.1);
    m_y->setRange(0, top);
    m_y->setLabelFormat(top >= 20  ? QStringLiteral("%.0f")
                        : top >= 2 ? QStringLiteral("%.1f")
                                   : QStringLiteral("%.2f"));
}

void DeviceChart::clear()
{
    for (auto &[key, l] : m_lines) {
        chart()->removeSeries(l.series);
        delete l.series;
    }
    m_lines.clear();
    m_colors->clear();
    m_lost.clear();
    m_x->setRange(0, 10);
    m_y->setRange(0, 1);
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

TrainingCharts TrainingCharts::create(QWidget *parent)
{
    TrainingCharts c;
    c.cpu = new DeviceChart(QStringLiteral("CPU"), QStringLiteral("% of the device"), parent);
    c.cpu->setFixedMax(100);
    c.memory = new DeviceChart(QStringLiteral("Memory in use"), QStringLiteral("MiB"), parent);
    c.network = new DeviceChart(QStringLiteral("Network: received (solid), sent (dashed)"),
                                QStringLiteral("KiB/s"), parent);
    // measured where a sensor exposes it, else the device profile's estimate (the Train page's
    // device table says which)
    c.power = new DeviceChart(QStringLiteral("Power"), QStringLiteral("W"), parent);
    c.loss = new DeviceChart(QStringLiteral("Training loss"), QStringLiteral("loss"), parent);
    c.accuracy = new DeviceChart(QStringLiteral("Training accuracy"), QStringLiteral("%"), parent);
    c.accuracy->setFixedMax(100);
    c.speed = new DeviceChart(QStringLiteral("Throughput"), QStringLiteral("images/s"), parent);
    const auto colors = std::make_shared<std::map<QString, int>>();
    for (DeviceChart *chart : c.all())
        chart->sharePalette(colors);
    return c;
}

void TrainingCharts::add(const app::MetricRow &m)
{
    cpu->append(m.node, m.seconds, m.cpuPercent);
    memory->append(m.node, m.seconds, m.memoryUsedBytes / (1024.0 * 1024.0));
    network->append(m.node, m.seconds, m.rxBytesPerSecond / 1024.0, 0);
    network->append(m.node, m.seconds, m.txBytesPerSecond / 1024.0, 1);
    if (m.powerWatts >= 0)
        power->append(m.node, m.seconds, m.powerWatts);
}

void TrainingCharts::add(const app::ProgressRow &p)
{
    loss->append(p.node, p.seconds, p.loss);
    accuracy->append(p.node, p.seconds, 100 * p.accuracy);
    speed->append(p.node, p.seconds, p.imagesPerSecond);
}

void TrainingCharts::flush()
{
    for (DeviceChart *c : all())
        c->flush();
}

void TrainingCharts::clear()
{
    for (DeviceChart *c : all())
        c->clear();
}

void TrainingCharts::load(const app::Session &session)
{
    clear();
    for (const app::MetricRow &m : session.training.metrics) {
        add(m);
        // Sessions from before progress.csv: the training curves from the device readings.
        if (session.training.progress.empty() && m.phase == QLatin1String("training") &&
            m.epoch > 0)
            add(app::ProgressRow{m.seconds, m.node, m.epoch, 0, m.loss, m.accuracy,
                                 m.imagesPerSecond});
    }
    for (const app::ProgressRow &p : session.training.progress)
        add(p);
    for (const auto &e : session.training.events) {
        const QString &name = e.node.name;
        if (net::takesNodeOut(e.kind) || net::bringsNodeBack(e.kind))
            for (DeviceChart *c : all())
                c->setLost(name, net::takesNodeOut(e.kind));
    }
    flush();
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
    m_frontier->setPen(QPen(QColor(0x1f, 0x77, 0xb4), 1.5));
    m_points = new QScatterSeries(this);
    m_points->setMarkerSize(7);
    m_points->setColor(QColor(0x1f, 0x77, 0xb4));
    m_current = new QScatterSeries(this);
    m_current->setName(QStringLiteral("chosen"));
    m_current->setMarkerSize(13);
    m_current->setColor(QColor(0xd6, 0x27, 0x28));
    m_budget = new QLineSeries(this);
    m_budget->setName(QStringLiteral("budget"));
    m_budget->setPen(QPen(QColor(0x55, 0x55, 0x55), 1.2, Qt::DashLine));
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
    const double x1 = std::max(1.0, std::ceil(xMax * 10 + 0.5) / 10);
    if (v.request.budgetBytes >= 0) {
        const double b = double(v.request.budgetBytes) / MiB;
        m_budget->replace({QPointF(0.95, b), QPointF(x1, b)});
        yMax = std::max(yMax, b);
    } else {
        m_budget->clear();
    }
    m_x->setRange(0.95, x1);
    m_y->setRange(0, niceCeil(yMax * 1.1));
}

QColor detectorColor(const QString &name)
{
    if (name == QLatin1String("teacher"))
        return QColor(40, 200, 80);
    if (name == QLatin1String("tracker"))
        return QColor(255, 150, 0);
    if (name == QLatin1String("student"))
        return QColor(60, 140, 255);
    if (name == QLatin1String("motion"))
        return QColor(148, 103, 189);
    if (name == QLatin1String("truth"))
        return QColor(255, 40, 220);
    return QColor(120, 120, 120);
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
                      : boxes ? QStringLiteral("Precision–recall, verified frames (IoU 0.5); "
                                               "boxes: 95 % intervals")
                              : QStringLiteral("Precision–recall on verified frames (IoU 0.5); "
                                               "dots: operating points"));
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
        shown.curve->setPen(QPen(colour, 2.0));
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

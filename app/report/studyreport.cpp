#include "studyreport.h"

#include "chart.h"
#include "pdfpage.h"
#include "wording.h"

#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QPdfWriter>

#include <algorithm>
#include <cmath>
#include <map>

namespace edgetrain::app {

namespace {

using net::ClusterStudy;

constexpr int kChartW = 900, kChartH = 480; // the chart files' size, and the PDF's proportions

QString fixed(double v, int decimals)
{
    return QString::number(v, 'f', decimals); // the report's numbers: C locale, like its CSV
}

struct Line
{
    QString name;
    std::vector<QPointF> points;
    int colour = 0;
    bool dashed = false;
};

/** y against the number of devices (integers on x), one line a series. */
Chart lineChart(const QString &title, const QString &yTitle, const std::vector<Line> &lines,
                int maxDevices)
{
    Chart chart;
    chart.title = title;
    chart.x.title = QObject::tr("number of devices");
    chart.x.min = 0.8;
    chart.x.max = maxDevices + 0.2;
    chart.x.step = 1;
    chart.x.anchor = 1;
    chart.y.title = yTitle;
    double top = 0;
    for (const Line &l : lines) {
        ChartSeries s;
        s.name = l.name;
        s.colour = Chart::colour(l.colour);
        s.dashed = l.dashed;
        s.points = l.points;
        for (const QPointF &p : l.points)
            top = std::max(top, p.y());
        chart.series.push_back(s);
    }
    chart.y.min = 0;
    chart.y.max = top > 0 ? top * 1.1 : 1.0;
    chart.y.roundOut();
    return chart;
}

/** Predicted against measured training time (log-log), a series per model, and y = x. */
Chart predictionChart(const ClusterStudy::ChoiceAnalysis &a)
{
    Chart chart;
    chart.title = QObject::tr("Training time: predicted against measured");
    chart.x.title = QObject::tr("measured (s)");
    chart.y.title = QObject::tr("predicted (s)");
    chart.x.scale = chart.y.scale = ChartAxis::Scale::Log;
    double lo = 1e9, hi = 0;
    std::map<QString, ChartSeries> byModel;
    for (const auto &r : a.runs) {
        if (r.measured_seconds <= 0 || r.predicted_seconds <= 0)
            continue;
        ChartSeries &s = byModel[r.model];
        if (s.name.isEmpty()) {
            s.name = r.model;
            s.line = false;
            s.dot = 8;
        }
        s.points.emplace_back(r.measured_seconds, r.predicted_seconds);
        lo = std::min({lo, r.measured_seconds, r.predicted_seconds});
        hi = std::max({hi, r.measured_seconds, r.predicted_seconds});
    }
    if (hi <= 0) {
        lo = 0.1;
        hi = 10;
    }
    lo = std::pow(10.0, std::floor(std::log10(lo)));
    hi = std::pow(10.0, std::ceil(std::log10(hi)));
    if (hi <= lo)
        hi = lo * 10;
    ChartSeries diagonal;
    diagonal.name = QObject::tr("predicted = measured");
    diagonal.colour = QColor(0x88, 0x88, 0x88);
    diagonal.dashed = true;
    diagonal.width = 1.2;
    diagonal.dot = 0;
    diagonal.points = {{lo, lo}, {hi, hi}};
    chart.series.push_back(diagonal);
    int colour = 0;
    for (auto &[model, s] : byModel) {
        s.colour = Chart::colour(colour++);
        chart.series.push_back(s);
    }
    chart.x.min = chart.y.min = lo;
    chart.x.max = chart.y.max = hi;
    return chart;
}

/** Per objective: how many cases the pick was the measured best, the second, or worse. */
Chart selectionChart(const ClusterStudy::ChoiceAnalysis &a)
{
    Chart chart;
    chart.title = QObject::tr("The planner's pick against measurement");
    ChartBars best{QObject::tr("the best"), Chart::colour(2), {}};
    ChartBars second{QObject::tr("second best"), Chart::colour(4), {}};
    ChartBars worse{QObject::tr("worse"), Chart::colour(1), {}};
    double top = 0;
    for (const QString &objective : ClusterStudy::objectives()) {
        int b = 0, s = 0, w = 0;
        for (const auto &c : a.cases)
            if (c.objective == objective)
                (c.rank == 1 ? b : c.rank == 2 ? s : w)++;
        if (b + s + w == 0)
            continue;
        chart.x.categories.append(objective);
        best.values.push_back(b);
        second.values.push_back(s);
        worse.values.push_back(w);
        top = std::max(top, double(b + s + w));
    }
    chart.bars = {best, second, worse};
    chart.x.title = QObject::tr("objective");
    chart.y.title = QObject::tr("cases");
    chart.y.min = 0;
    chart.y.step = std::max(1.0, std::ceil(top / 6));
    chart.y.max = std::max(1.0, std::ceil(top / chart.y.step) * chart.y.step);
    return chart;
}

QString labLine(const net::LabState &lab)
{
    if (lab.nodes.empty())
        return QObject::tr("The lab's description was not available (--report-only without "
                           "--lab).");
    QString text =
        wording::counted(qint64(lab.nodes.size()), QStringLiteral("node"), QStringLiteral("nodes"));
    if (!lab.not_emulated.isEmpty())
        text += QObject::tr("; not emulated: %1").arg(lab.not_emulated.join(QStringLiteral("; ")));
    else
        text += QObject::tr(
                    ", each an edgetrain-node in its own network namespace, its CPU limited by a "
                    "cgroup quota to the device's speed (this machine: %1 GFLOP/s per core, "
                    "time scale %2), its memory by a cgroup limit, its link shaped with tc")
                    .arg(fixed(lab.host_core_gflops, 1), fixed(lab.time_scale, 2));
    return text + QLatin1Char('.');
}

QList<QStringList> labTable(const net::LabState &lab)
{
    QList<QStringList> rows{{QObject::tr("node"), QObject::tr("profile"),
                             QObject::tr("CPU (cores here)"), QObject::tr("memory"),
                             QObject::tr("link")}};
    for (const net::LabNode &n : lab.nodes)
        rows.append({n.name, n.profile_id,
                     n.cpu_quota_cores > 0 ? fixed(n.cpu_quota_cores, 3) : QObject::tr("unlimited"),
                     n.memory_limit_bytes > 0
                         ? QStringLiteral("%1 MiB").arg(n.memory_limit_bytes >> 20)
                         : QObject::tr("unlimited"),
                     n.link_bits_per_second > 0
                         ? QStringLiteral("%1 Mbit/s").arg(fixed(n.link_bits_per_second / 1e6, 0))
                         : QObject::tr("unshaped")});
    return rows;
}

/** The pi-cluster study's groups: a model at one batch size, named by the model alone where it
 *  trained at one size ("lenet5"), else with it ("lenet5, batch 64"; files "lenet5-b64-..."). */
struct Group
{
    QString model;
    int batch = 0;
    QString title, file;
    bool has(const ClusterStudy::ScalingRow &r) const
    {
        return r.model == model && r.batch == batch;
    }
};

std::vector<Group> groupsOf(const std::vector<ClusterStudy::ScalingRow> &rows)
{
    std::vector<Group> groups;
    for (const auto &r : rows)
        if (std::none_of(groups.begin(), groups.end(), [&](const Group &g) { return g.has(r); }))
            groups.push_back({r.model, r.batch, r.model, r.model});
    for (Group &g : groups)
        if (std::count_if(groups.begin(), groups.end(),
                          [&](const Group &o) { return o.model == g.model; }) > 1) {
            g.title = QObject::tr("%1, batch %2").arg(g.model).arg(g.batch);
            g.file = QStringLiteral("%1-b%2").arg(g.model).arg(g.batch);
        }
    return groups;
}

std::vector<net::TrainingMode> modesOf(const std::vector<ClusterStudy::ScalingRow> &rows)
{
    std::vector<net::TrainingMode> modes;
    for (const auto &r : rows)
        if (std::find(modes.begin(), modes.end(), r.mode) == modes.end())
            modes.push_back(r.mode);
    return modes;
}

/** The charts of a study, named as their files are. */
struct StudyCharts
{
    std::vector<std::pair<QString, Chart>> named;
    const Chart &find(const QString &name) const
    {
        for (const auto &[n, c] : named)
            if (n == name)
                return c;
        static const Chart none;
        return none;
    }
};

StudyCharts piClusterCharts(const std::vector<ClusterStudy::ScalingRow> &rows)
{
    StudyCharts charts;
    int maxDevices = 1;
    for (const auto &r : rows)
        maxDevices = std::max(maxDevices, r.devices);
    const auto modes = modesOf(rows);
    for (const Group &group : groupsOf(rows)) {
        auto lines = [&](auto value, bool needsResources, bool twoVariants = false) {
            std::vector<Line> list;
            for (std::size_t m = 0; m < modes.size(); ++m)
                for (int variant = 0; variant < (twoVariants ? 2 : 1); ++variant) {
                    Line l;
                    l.name = net::modeName(modes[m]);
                    if (twoVariants)
                        l.name += variant == 0 ? QObject::tr(" received") : QObject::tr(" sent");
                    l.colour = int(m);
                    l.dashed = variant == 1;
                    for (const auto &r : rows)
                        if (group.has(r) && r.mode == modes[m] && r.error.isEmpty() &&
                            (r.resources || !needsResources))
                            l.points.emplace_back(r.devices, value(r, variant));
                    list.push_back(l);
                }
            return list;
        };
        auto add = [&](const QString &name, const QString &title, const QString &unit,
                       const std::vector<Line> &l) {
            charts.named.emplace_back(
                group.file + QLatin1Char('-') + name,
                lineChart(group.title + QStringLiteral(": ") + title, unit, l, maxDevices));
        };
        add(QStringLiteral("time"), QObject::tr("time per epoch"), QObject::tr("seconds"),
            lines([](const auto &r, int) { return r.epoch_seconds; }, false));
        add(QStringLiteral("accuracy"), QObject::tr("test accuracy"), QObject::tr("%"),
            lines([](const auto &r, int) { return 100.0 * std::max(0.0, r.test_accuracy); },
                  false));
        add(QStringLiteral("cpu"), QObject::tr("CPU use per device"), QObject::tr("%"),
            lines([](const auto &r, int) { return r.cpu_percent; }, true));
        add(QStringLiteral("memory"), QObject::tr("memory per device (agent's peak RSS)"),
            QObject::tr("MiB"), lines([](const auto &r, int) { return r.rss_mib; }, true));
        add(QStringLiteral("network"), QObject::tr("traffic per device and epoch"),
            QObject::tr("KiB"),
            lines([](const auto &r, int v) { return v == 0 ? r.received_kib : r.sent_kib; }, true,
                  true));
    }
    return charts;
}

StudyCharts choiceCharts(const ClusterStudy::ChoiceAnalysis &a)
{
    StudyCharts charts;
    charts.named.emplace_back(QStringLiteral("selection"), selectionChart(a));
    charts.named.emplace_back(QStringLiteral("predicted-vs-measured"), predictionChart(a));
    return charts;
}

QString percentOf(int n, std::size_t of)
{
    return of ? fixed(100.0 * n / double(of), 1) + QStringLiteral(" %") : QStringLiteral("–");
}

/** The study's PDF as it is written: its pages share the painter, the figures and the charts. */
struct StudyPdf
{
    const StudyReportContent &c;
    bool pi;
    const std::vector<ClusterStudy::ScalingRow> &rows;
    const ClusterStudy::ChoiceAnalysis &analysis;
    const StudyCharts &charts;
    const std::vector<const net::StudyRecord *> &failed;
    QPdfWriter &writer;
    QPainter &painter;
    QString footer;
    int pages = 0;
    QRect full = writer.pageLayout().paintRectPixels(writer.resolution());
    QRectF area = PdfPage::bodyArea(full);
    double half = area.width() / 2 - 6;
    double chartH = half * kChartH / kChartW;
    int pageNumber = 0;

    PdfPage newPage()
    {
        if (pageNumber > 0)
            writer.newPage();
        ++pageNumber;
        PdfPage::footer(painter, full, footer, pageNumber, pages);
        return PdfPage(painter, area);
    }
    void overview(const QString &title);
    /** pi-cluster: per model and mode, the fastest number of devices, its speed-up over one
     *  device, and the accuracy on the most devices. */
    QString piResult() const;
    /** cluster-choice: how often the pick was the best, the prediction's error. */
    QString choiceResult() const;
    void groupPage(const Group &group);
    void choicePages();
    void failedPage();
};

void StudyPdf::overview(const QString &title)
{
    PdfPage page = newPage();
    page.heading(title);
    int failedCount = int(failed.size());
    page.paragraph(
        QObject::tr("Study “%1”, written %2: %3 of %4 planned runs finished, %5 of them "
                    "failed.")
            .arg(ClusterStudy::presetName(c.preset),
                 QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")))
            .arg(c.records.size())
            .arg(std::max<int>(c.runs_planned, int(c.records.size())))
            .arg(failedCount));
    page.paragraph(
        pi ? QObject::tr(
                 "After Distributed Training on a Raspberry Pi cluster (Tables 1-4, Figures "
                 "3-7): each model trained data-parallel on the first 1, 2, … of the lab's "
                 "devices, synchronously (an allreduce every step) and asynchronously (a "
                 "parameter server). Time per epoch is training only; test accuracy after the "
                 "last epoch; CPU is the devices' use while training, memory the node agent's "
                 "peak RSS, traffic the agent's own, each the mean over the devices of a run.")
           : QObject::tr(
                 "After the heterogeneous-cluster paper (its Figure 5: the best configuration "
                 "chosen in 76.67 % of cases, best or second in 95.83 %): per job the planner "
                 "profiles every device once and predicts time, power, energy and EDP for "
                 "every subset; then every subset trains the same job (sync) and is measured. "
                 "A case is a job and an objective; the pick is the planner's best predicted "
                 "subset, its rank its place among the measured ones."));
    page.subheading(QObject::tr("The lab"));
    page.paragraph(labLine(c.lab));
    if (!c.lab.nodes.empty())
        page.table(labTable(c.lab), {0.2, 0.2, 0.24, 0.18, 0.18});
    if (pi && !rows.empty()) {
        page.subheading(QObject::tr("Result"));
        page.paragraph(piResult());
    }
    if (!pi) {
        page.subheading(QObject::tr("Result"));
        page.paragraph(choiceResult());
    }
}

QString StudyPdf::piResult() const
{
    QStringList lines;
    for (const Group &g : groupsOf(rows))
        for (net::TrainingMode mode : modesOf(rows)) {
            const ClusterStudy::ScalingRow *fastest = nullptr, *one = nullptr, *most = nullptr;
            for (const auto &r : rows) {
                if (!g.has(r) || r.mode != mode || !r.error.isEmpty() || r.epoch_seconds <= 0)
                    continue;
                if (!fastest || r.epoch_seconds < fastest->epoch_seconds)
                    fastest = &r;
                if (r.devices == 1)
                    one = &r;
                if (!most || r.devices > most->devices)
                    most = &r;
            }
            if (!fastest)
                continue;
            QString line = QObject::tr("%1, %2: fastest on %3, %4 s an epoch")
                               .arg(g.title, net::modeName(mode),
                                    wording::counted(fastest->devices, QStringLiteral("device"),
                                                     QStringLiteral("devices")),
                                    QString::number(fastest->epoch_seconds, 'g', 3));
            if (one && fastest != one)
                line += QObject::tr(" (%1x one device's speed)")
                            .arg(fixed(one->epoch_seconds / fastest->epoch_seconds, 2));
            if (most->test_accuracy >= 0 && one && one->test_accuracy >= 0)
                line += QObject::tr("; test accuracy %1 on one device, %2 on %n", nullptr,
                                    most->devices)
                            .arg(fixed(one->test_accuracy, 3), fixed(most->test_accuracy, 3));
            lines.append(line + QLatin1Char('.'));
        }
    return lines.join(QLatin1Char('\n'));
}

QString StudyPdf::choiceResult() const
{
    QString text = QObject::tr("The planner picked the measured best in %1 of %2 cases "
                               "(%3), the best or the second in %4 (%5). Predicted "
                               "training time against measured, over %6 runs: median "
                               "error %7 %, 90th percentile %8 %. Profiling: median %9 % "
                               "of profiling plus the best cluster's training.")
                       .arg(analysis.best)
                       .arg(analysis.cases.size())
                       .arg(percentOf(analysis.best, analysis.cases.size()))
                       .arg(analysis.best_or_second)
                       .arg(percentOf(analysis.best_or_second, analysis.cases.size()))
                       .arg(analysis.runs.size())
                       .arg(fixed(100 * analysis.median_time_error, 1),
                            fixed(100 * analysis.p90_time_error, 1),
                            fixed(100 * analysis.median_profiling_share, 1));
    if (analysis.by_configuration)
        text +=
            QObject::tr(" Alike devices (one profile, emulated alike) taken as one: "
                        "a subset of them is one configuration, its runs repeated "
                        "measurements, ranked by their mean — which of two identical "
                        "boards measured better is treated as the lab's noise. So "
                        "counted, the pick was the best "
                        "configuration in %1 of %2 cases (%3), the best or the second "
                        "in %4 (%5).")
                .arg(analysis.best_by_configuration)
                .arg(analysis.cases.size())
                .arg(percentOf(analysis.best_by_configuration, analysis.cases.size()))
                .arg(analysis.best_or_second_by_configuration)
                .arg(percentOf(analysis.best_or_second_by_configuration, analysis.cases.size()));
    if (analysis.repeated > 0)
        text += QObject::tr(" Each case's pick and its closest contender (the measured "
                            "best, or the second where the pick was the best) were "
                            "measured up to %1 times in all, every other subset once: on "
                            "the means of their runs the pick was the best in %2 of %3 "
                            "cases (%4); where it was not, the range of its runs "
                            "overlapped the best mean's (the runs did not separate them) "
                            "in %5 more, %6 in all (%7).")
                    .arg(analysis.measurements)
                    .arg(analysis.best_on_repeats)
                    .arg(analysis.cases.size())
                    .arg(percentOf(analysis.best_on_repeats, analysis.cases.size()))
                    .arg(analysis.best_within_spread - analysis.best_on_repeats)
                    .arg(analysis.best_within_spread)
                    .arg(percentOf(analysis.best_within_spread, analysis.cases.size()));
    if (!analysis.skipped.isEmpty())
        text += QObject::tr(" Left out (the nodes reported no power figures): %1.")
                    .arg(analysis.skipped.join(QStringLiteral(", ")));
    return text;
}

void StudyPdf::groupPage(const Group &group)
{
    const auto modes = modesOf(rows);
    PdfPage page = newPage();
    page.heading(QObject::tr("%1: time and accuracy by number of devices").arg(group.title));
    int maxDevices = 0;
    for (const auto &r : rows)
        if (group.has(r))
            maxDevices = std::max(maxDevices, r.devices);
    QList<QStringList> table;
    QStringList header{QObject::tr("# of devices")};
    for (int d = 1; d <= maxDevices; ++d)
        header.append(QString::number(d));
    table.append(header);
    for (net::TrainingMode mode : modes) {
        QStringList time{net::modeName(mode) + QObject::tr(": time per epoch (s)")};
        QStringList accuracy{net::modeName(mode) + QObject::tr(": test accuracy")};
        for (int d = 1; d <= maxDevices; ++d) {
            const auto it = std::find_if(rows.begin(), rows.end(), [&](const auto &r) {
                return group.has(r) && r.mode == mode && r.devices == d;
            });
            const bool ok = it != rows.end() && it->error.isEmpty();
            time.append(ok ? QString::number(it->epoch_seconds, 'g', 3) : QStringLiteral("–"));
            accuracy.append(ok && it->test_accuracy >= 0 ? fixed(it->test_accuracy, 3)
                                                         : QStringLiteral("–"));
        }
        table.append(time);
        table.append(accuracy);
    }
    QList<double> widths{0.3};
    for (int d = 1; d <= maxDevices; ++d)
        widths.append(0.7 / maxDevices);
    page.table(table, widths);
    const double y = page.y();
    page.chart(charts.find(group.file + QStringLiteral("-time")), QRectF(0, y, half, chartH));
    page.chart(charts.find(group.file + QStringLiteral("-accuracy")),
               QRectF(half + 12, y, half, chartH));
    page.skip(chartH + 16);
    page.subheading(QObject::tr("Hardware resources per device (mean over the devices)"));
    QList<QStringList> usage{{QObject::tr("mode"), QObject::tr("devices"), QObject::tr("CPU %"),
                              QObject::tr("memory (MiB)"), QObject::tr("received (KiB/epoch)"),
                              QObject::tr("sent (KiB/epoch)")}};
    const QString none = QStringLiteral("–");
    for (const auto &r : rows)
        if (group.has(r) && r.error.isEmpty())
            usage.append({net::modeName(r.mode), QString::number(r.devices),
                          r.resources ? fixed(r.cpu_percent, 1) : none,
                          r.resources ? fixed(r.rss_mib, 1) : none,
                          r.resources ? fixed(r.received_kib, 1) : none,
                          r.resources ? fixed(r.sent_kib, 1) : none});
    page.table(usage, {0.12, 0.1, 0.12, 0.16, 0.25, 0.25}, 24);
    if (std::any_of(rows.begin(), rows.end(), [&](const auto &r) {
            return group.has(r) && r.error.isEmpty() && !r.resources;
        }))
        page.paragraph(QObject::tr("–: the run's result has no figures of the nodes' use "
                                   "(written by an older edgetrain-cli)."));
    // The three charts half a page wide, two a row, where the page has room for two
    // rows; else a third wide in one row.
    const bool halves = area.bottom() - page.y() >= 2 * chartH + 16;
    const double w = halves ? half : area.width() / 3 - 8;
    const double h = halves ? chartH : w * kChartH / kChartW;
    const double y2 = page.y();
    const int perRow = halves ? 2 : 3;
    int i = 0;
    for (const char *name : {"-cpu", "-memory", "-network"}) {
        page.chart(charts.find(group.file + QLatin1String(name)),
                   QRectF((i % perRow) * (w + 12), y2 + (i / perRow) * (h + 16), w, h));
        ++i;
    }
}

void StudyPdf::choicePages()
{
    {
        PdfPage page = newPage();
        page.heading(QObject::tr("The planner's pick per job and objective"));
        QList<QStringList> table{{QObject::tr("model"), QObject::tr("batch"),
                                  QObject::tr("objective"), QObject::tr("picked"),
                                  QObject::tr("measured best"), QObject::tr("rank")}};
        if (analysis.by_configuration)
            table[0].append(QObject::tr("alike as one"));
        if (analysis.repeated > 0)
            table[0].append(QObject::tr("repeated"));
        for (const auto &k : analysis.cases) {
            table.append({k.model, QString::number(k.batch), k.objective,
                          k.picked.join(QLatin1Char('+')), k.measured_best.join(QLatin1Char('+')),
                          k.rank > 0 ? QStringLiteral("%1 of %2").arg(k.rank).arg(k.measured)
                                     : QObject::tr("not measured")});
            if (analysis.by_configuration)
                table.back().append(
                    k.configuration_rank > 0
                        ? QStringLiteral("%1 of %2").arg(k.configuration_rank).arg(k.configurations)
                        : QObject::tr("not measured"));
            if (analysis.repeated > 0)
                table.back().append(k.best_on_repeats ? QObject::tr("best")
                                    : k.within_spread ? QObject::tr("within spread")
                                                      : QObject::tr("worse"));
        }
        if (analysis.by_configuration && analysis.repeated > 0)
            page.table(table, {0.08, 0.08, 0.1, 0.19, 0.19, 0.08, 0.13, 0.15}, 36);
        else if (analysis.repeated > 0)
            page.table(table, {0.1, 0.07, 0.1, 0.26, 0.26, 0.09, 0.12}, 36);
        else if (analysis.by_configuration)
            page.table(table, {0.08, 0.07, 0.1, 0.26, 0.25, 0.1, 0.14}, 36);
        else
            page.table(table, {0.12, 0.08, 0.1, 0.3, 0.3, 0.1}, 36);
        page.chart(charts.find(QStringLiteral("selection")),
                   QRectF(area.width() / 4, page.y(), half, chartH));
    }
    {
        PdfPage page = newPage();
        page.heading(QObject::tr("Predicted against measured"));
        page.chart(charts.find(QStringLiteral("predicted-vs-measured")),
                   QRectF(area.width() / 4, page.y(), half, chartH));
        page.skip(chartH + 16);
        page.subheading(QObject::tr("The largest errors of the predicted training time"));
        std::vector<const ClusterStudy::ChoiceRun *> runs;
        for (const auto &r : analysis.runs)
            if (r.measured_seconds > 0)
                runs.push_back(&r);
        auto err = [](const ClusterStudy::ChoiceRun *r) {
            return (r->predicted_seconds - r->measured_seconds) / r->measured_seconds;
        };
        std::sort(runs.begin(), runs.end(),
                  [&](auto *a, auto *b) { return std::abs(err(a)) > std::abs(err(b)); });
        QList<QStringList> table{{QObject::tr("model"), QObject::tr("batch"), QObject::tr("nodes"),
                                  QObject::tr("pred. s"), QObject::tr("meas. s"),
                                  QObject::tr("error"), QObject::tr("pred. W"),
                                  QObject::tr("meas. W")}};
        for (std::size_t i = 0; i < runs.size() && i < 30; ++i)
            table.append({runs[i]->model, QString::number(runs[i]->batch),
                          runs[i]->nodes.join(QLatin1Char('+')),
                          fixed(runs[i]->predicted_seconds, 2), fixed(runs[i]->measured_seconds, 2),
                          fixed(100 * err(runs[i]), 1) + QStringLiteral(" %"),
                          fixed(runs[i]->predicted_watts, 2), fixed(runs[i]->measured_watts, 2)});
        page.table(table, {0.1, 0.07, 0.37, 0.09, 0.09, 0.1, 0.09, 0.09});
    }
}

void StudyPdf::failedPage()
{
    PdfPage page = newPage();
    page.heading(QObject::tr("Runs that failed"));
    page.paragraph(QObject::tr("Each run's log is in logs/ of the study's folder."));
    QList<QStringList> table{{QObject::tr("run"), QObject::tr("why")}};
    for (const net::StudyRecord *r : failed)
        table.append({r->run.key(), r->error});
    page.table(table, {0.5, 0.5});
}

} // namespace

bool StudyReport::write(const QString &dir, const StudyReportContent &c, QStringList *written,
                        QString *error)
{
    const bool pi = c.preset == ClusterStudy::Preset::PiCluster;
    const auto rows = ClusterStudy::scaling(c.records);
    const auto analysis = ClusterStudy::choice(c.records, c.configurations);
    const auto charts = pi ? piClusterCharts(rows) : choiceCharts(analysis);
    const QString chartDir = dir + QStringLiteral("/charts");
    if (!QDir().mkpath(chartDir)) {
        *error = QStringLiteral("cannot create '%1'").arg(chartDir);
        return false;
    }
    for (const auto &[name, chart] : charts.named)
        if (!chart.writeFiles(chartDir, name, QSize(kChartW, kChartH), written, error))
            return false;

    std::vector<const net::StudyRecord *> failed;
    for (const auto &r : c.records)
        if (!r.ok())
            failed.push_back(&r);
    const std::vector<Group> groups = groupsOf(rows);
    const int pages = 1 + (pi ? int(groups.size()) : 2) + (failed.empty() ? 0 : 1);

    const QString path = dir + QStringLiteral("/study.pdf");
    QPdfWriter writer(path);
    const QString title = pi ? QObject::tr("Distributed training on a Raspberry Pi cluster")
                             : QObject::tr("Choosing the cluster: the planner against measurement");
    PdfPage::setUp(writer, QStringLiteral("EdgeTrain study — %1").arg(title));
    QPainter painter;
    if (!painter.begin(&writer)) {
        *error = QStringLiteral("cannot write the PDF '%1'").arg(path);
        return false;
    }

    StudyPdf pdf{c,
                 pi,
                 rows,
                 analysis,
                 charts,
                 failed,
                 writer,
                 painter,
                 QStringLiteral("EdgeTrain · study %1 · %2")
                     .arg(ClusterStudy::presetName(c.preset), QFileInfo(dir).fileName()),
                 pages};
    pdf.overview(title);
    if (pi)
        for (const Group &group : groups)
            pdf.groupPage(group);
    else
        pdf.choicePages();
    if (!failed.empty())
        pdf.failedPage();
    if (!painter.end()) {
        *error = QStringLiteral("cannot finish the PDF '%1'").arg(path);
        return false;
    }
    written->append(path);
    return true;
}

} // namespace edgetrain::app

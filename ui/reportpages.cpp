#include "reportpages.h"

#include "app/report/palette.h"
#include "app/report/pdfpage.h"
#include "app/session/repeatability.h"
#include "app/session/verifiedscoring.h"
#include "chartfiles.h"
#include "reporttext.h"
#include "vision/framesource.h"

#include <QApplication>
#include <QDateTime>
#include <QFileInfo>
#include <QPainter>

namespace edgetrain::ui {

namespace palette = app::palette;
using app::PdfPage;

namespace {

constexpr int kChartW = 900, kChartH = 480; // the chart files' size

// The charts' smallest text is 8 pt on screen; on paper it should read at this size.
constexpr double kChartTextPt = 7.5, kChartFontPt = 8.0;

QString percent(double v)
{
    return QString::number(100 * v, 'f', 1) + QStringLiteral(" %");
}

/** What the camera is: "vtest.avi · 768 × 576 pixels · 10 frames/s · 795 frames", from the
 *  source itself when it is a file (a live camera is not opened for a report). */
QString cameraLine(const app::Session &s)
{
    QString line = QFileInfo(s.capture.source).fileName();
    if (!QFileInfo(s.capture.source).isFile())
        return line;
    try {
        const auto source = vision::FrameSource::open(s.capture.source.toStdString());
        const cv::Size size = source->frameSize();
        if (size.width > 0)
            line += QObject::tr(" · %1 × %2 pixels").arg(size.width).arg(size.height);
        if (source->fps() > 0)
            line += QObject::tr(" · %1 frames/s").arg(source->fps(), 0, 'f', 0);
        if (source->frameCount() > 0)
            line += QObject::tr(" · %1 frames").arg(source->frameCount());
    } catch (const std::exception &) {
        // The video moved since the session was made: its name is all the report can say.
    }
    return line;
}

/** A key-figure tile: the detector's name over a bar in its colour, recall and precision with
 *  their 95 % intervals. */
void tile(QPainter &p, const QRectF &r, const vision::DetectorScore &d,
          const vision::FigureIntervals *ci)
{
    const palette::Source source = palette::sourceOf(QString::fromStdString(d.name));
    p.save();
    p.setPen(QPen(palette::kMutedText, 1));
    p.setBrush(Qt::NoBrush);
    p.drawRect(r);
    p.fillRect(QRectF(r.left(), r.top(), r.width(), 10), palette::onLight(source));
    QFont f = p.font();
    f.setPointSizeF(11);
    f.setBold(true);
    p.setFont(f);
    p.setPen(palette::kHeading);
    const double x = r.left() + 14, w = r.width() - 28;
    p.drawText(QRectF(x, r.top() + 18, w, 40), Qt::AlignLeft, palette::name(source));
    double y = r.top() + 62;
    const std::pair<QString, QString> figures[] = {
        {QObject::tr("recall"), d.truths > 0
                                    ? app::percentWithRange(d.recall, ci ? &ci->recall : nullptr)
                                    : QStringLiteral("–")},
        {QObject::tr("precision"),
         d.detections > 0 ? app::percentWithRange(d.precision, ci ? &ci->precision : nullptr)
                          : QObject::tr("no detection")}};
    for (const auto &[label, value] : figures) {
        f.setPointSizeF(8.5);
        f.setBold(false);
        p.setFont(f);
        p.setPen(palette::kMutedText);
        p.drawText(QRectF(x, y, w, 30), Qt::AlignLeft, label);
        y += p.fontMetrics().height();
        f.setPointSizeF(15);
        f.setBold(true);
        p.setFont(f);
        p.setPen(palette::kText);
        p.drawText(QRectF(x, y, w, 60), Qt::AlignLeft, value);
        y += p.fontMetrics().height() + 6;
    }
    p.restore();
}

/** The verified figures as tiles across the page, student first; returns their height. */
double tiles(PdfPage &page, const app::VerifiedRound &round)
{
    std::vector<std::size_t> order;
    for (const char *name : {"student", "teacher", "motion"})
        for (std::size_t i = 0; i < round.scores.size(); ++i)
            if (round.scores[i].name == name)
                order.push_back(i);
    if (order.empty())
        return 0;
    const double gap = 16, h = 196;
    const double w = (page.area().width() - gap * double(order.size() - 1)) / double(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        const vision::DetectorScore &d = round.scores[order[k]];
        tile(page.painter(), QRectF(double(k) * (w + gap), page.y(), w, h), d,
             round.interval(d.name));
    }
    page.skip(h + 16);
    return h;
}

/** The verified figures of every round (ReportText::verifiedRows). */
void verifiedTable(PdfPage &page, const app::Session &s)
{
    const QList<QStringList> rows = ReportText::verifiedRows(s);
    page.table(rows, rows.first().size() == 9
                         ? QList<double>{0.07, 0.1, 0.17, 0.17, 0.07, 0.07, 0.12, 0.11, 0.12}
                         : QList<double>{0.11, 0.19, 0.19, 0.08, 0.08, 0.13, 0.11, 0.11});
}

} // namespace

std::vector<std::pair<QString, QWidget *>> ReportCharts::named() const
{
    std::vector<std::pair<QString, QWidget *>> list{{QStringLiteral("cpu"), training.cpu},
                                                    {QStringLiteral("memory"), training.memory},
                                                    {QStringLiteral("network"), training.network},
                                                    {QStringLiteral("power"), training.power},
                                                    {QStringLiteral("loss"), training.loss},
                                                    {QStringLiteral("accuracy"), training.accuracy},
                                                    {QStringLiteral("throughput"), training.speed}};
    if (memory)
        list.emplace_back(QStringLiteral("memory-plan"), memory);
    list.emplace_back(QStringLiteral("pr"), pr);
    return list;
}

std::unique_ptr<ReportCharts> ReportCharts::make(const ReportContent &c)
{
    auto charts = std::make_unique<ReportCharts>();
    charts->training = TrainingCharts::create(charts->owner.get());
    charts->training.load(*c.session);
    if (c.plan && c.plan->error.isEmpty()) { // the window's dashed line of the plan's peak
        charts->training.setPlannedMemory(double(c.plan->plan.predicted_peak_bytes));
        charts->training.memory->flush();
    }
    if (c.plan) {
        charts->memory = new MemoryChart(charts->owner.get());
        charts->memory->show(*c.plan);
    }
    charts->pr = new PrChart(charts->owner.get());
    if (const app::VerifiedRound *round = ReportText::currentRound(*c.session))
        charts->pr->show(round->scores, round->intervals);
    else
        charts->pr->show({});
    for (const auto &[name, w] : charts->named()) {
        w->setAttribute(Qt::WA_DontShowOnScreen);
        w->resize(kChartW, kChartH);
        w->setBackgroundRole(QPalette::Base);
        w->show(); // not on screen: lays the legends out
    }
    // The charts' layouts (legends, axes) settle through posted layout requests: deliver those,
    // and nothing else (processEvents() would run whatever the user did meanwhile, re-entering
    // the caller).
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    return charts;
}

namespace ReportPages {

void nodes(PdfPage &page, const app::Session &s)
{
    page.heading(QObject::tr("Nodes"));
    QList<QStringList> rows{{QObject::tr("Name"), QObject::tr("Address"), QObject::tr("Arch"),
                             QObject::tr("Cores"), QObject::tr("RAM"), QObject::tr("Trained")}};
    for (const app::SessionNode &n : s.nodes)
        rows.append({n.name, QStringLiteral("%1:%2").arg(n.host).arg(n.port), n.arch,
                     n.cores ? QString::number(n.cores) : QString(),
                     n.ramBytes ? formatBytes(double(n.ramBytes)) : QString(),
                     s.training.nodes.contains(n.name) ? QObject::tr("yes") : QObject::tr("no")});
    page.table(rows, {0.2, 0.24, 0.12, 0.1, 0.17, 0.17});
    page.subheading(QObject::tr("What happened to the nodes during training"));
    QList<QStringList> events{
        {QObject::tr("Time"), QObject::tr("Node"), QObject::tr("Event"), QObject::tr("Details")}};
    for (const auto &e : s.training.events)
        events.append({QStringLiteral("%1 s").arg(e.seconds, 0, 'f', 1), e.node.name,
                       net::eventKindName(e.kind), e.message});
    if (events.size() == 1)
        page.paragraph(QObject::tr("No events recorded."));
    else
        page.table(events, {0.1, 0.18, 0.12, 0.6}, 12);
}

/** The settings: capture and labelling, the dataset, the training run. */
void settings(PdfPage &page, const app::Session &s)
{
    page.skip(10);
    page.heading(QObject::tr("Settings and data"));
    page.subheading(QObject::tr("Capture and labelling"));
    QList<QStringList> capture{
        {QObject::tr("Setting"), QObject::tr("Value")},
        {QObject::tr("Source"), s.capture.source},
        {QObject::tr("Teacher"), s.capture.teacher},
        {QObject::tr("Tracker"), s.capture.tracker},
        {QObject::tr("Teacher runs on"), ReportText::everyNth(s.capture.every)}};
    page.table(capture, {0.3, 0.7});
    // The split-by-track counts are the crop dataset's: the full-frame student's would be a
    // table of dashes.
    const bool crops = s.dataset.kind != QLatin1String("frames");
    page.subheading(crops ? QObject::tr("Dataset (split by track)") : QObject::tr("Dataset"));
    QList<QStringList> data{{QObject::tr("Split"), QObject::tr("Tracks"), QObject::tr("Positives"),
                             QObject::tr("Negatives")}};
    const char *splits[] = {"train", "validation", "test"};
    for (int i = 0; i < 3; ++i)
        data.append(
            {QString::fromLatin1(splits[i]),
             s.datasetStats ? QString::number(s.datasetStats->tracks[i]) : QStringLiteral("–"),
             s.datasetStats ? QString::number(s.datasetStats->positives[i]) : QStringLiteral("–"),
             s.datasetStats ? QString::number(s.datasetStats->negatives[i]) : QStringLiteral("–")});
    if (crops || s.datasetStats)
        page.table(data, {0.25, 0.25, 0.25, 0.25});
    if (!crops)
        page.paragraph(
            QObject::tr("Whole frames for the full-frame student, downscaled to %1 pixels wide.")
                .arg(s.dataset.frameWidth));
    else
        page.paragraph(QObject::tr("Crops of %1 × %2 pixels, %3 negatives per positive.")
                           .arg(s.dataset.width)
                           .arg(s.dataset.height)
                           .arg(s.dataset.negativesPerPositive));
    page.subheading(QObject::tr("Training"));
    QList<QStringList> plan{
        {QObject::tr("Setting"), QObject::tr("Value")},
        {QObject::tr("Student model"), s.plan.model},
        {QObject::tr("Global batch"), QString::number(s.plan.batch)},
        {QObject::tr("Epochs"),
         s.training.epochs.empty()
             ? QObject::tr("at most %1").arg(s.plan.epochs)
             : QObject::tr("%1 run of at most %2")
                   .arg(s.training.epochs.size())
                   .arg(std::max<qsizetype>(s.plan.epochs, s.training.epochs.size()))},
        {QObject::tr("Learning rate"), QString::number(s.plan.lr)},
        {QObject::tr("Mode"), s.plan.mode},
        {QObject::tr("Devices"), s.training.nodes.join(QStringLiteral(", "))},
        {QObject::tr("Run"),
         QStringLiteral("%1 (%2, %3 s)")
             .arg(s.training.jobId, QString::fromLatin1(app::trainingStateName(s.training.state)))
             .arg(s.training.seconds, 0, 'f', 1)}};
    if (s.plan.mode == QLatin1String("async"))
        plan.append({QObject::tr("Staleness bound"), QString::number(s.plan.staleness)});
    if (s.plan.mode == QLatin1String("local-sgd"))
        plan.append({QObject::tr("Steps between averages"), QString::number(s.plan.localSteps)});
    page.table(plan, {0.3, 0.7});
    page.paragraph(ReportText::trainingFacts(s));
}

/** The memory plan: the budgets, and the plan with its chart when one was computed. */
void memoryPlan(PdfPage page, const ReportContent &c, const ReportCharts &charts)
{
    const app::Session &s = *c.session;
    const QRectF &area = page.area();
    page.heading(QObject::tr("Memory plan"));
    QList<QStringList> budgets{{QObject::tr("Device"), QObject::tr("Budget")}};
    budgets.append({QObject::tr("all devices"), s.plan.budgetAllBytes < 0
                                                    ? QObject::tr("none")
                                                    : formatBytes(double(s.plan.budgetAllBytes))});
    for (const auto &[node, b] : s.plan.deviceBudgetBytes)
        budgets.append({node, b < 0 ? QObject::tr("none") : formatBytes(double(b))});
    page.table(budgets, {0.5, 0.5});
    if (c.plan) {
        const app::PlanView &v = *c.plan;
        page.paragraph(
            QObject::tr(
                "For a device batch of %1: schedule %2, %3 more compute per step "
                "than keeping every activation (store-all); predicted peak %4 (store-all: %5; "
                "the floor at this batch: %6).")
                .arg(v.request.deviceBatch)
                .arg(v.schedule)
                .arg(percent(v.plan.predicted_recompute_factor - 1))
                .arg(formatBytes(double(v.plan.predicted_peak_bytes)))
                .arg(formatBytes(double(v.storeAllPeak)))
                .arg(formatBytes(double(v.minimumBudget))));
        if (v.request.budgetBytes >= 0 && !v.plan.fits)
            page.paragraph(QObject::tr("The budget does not fit: at least %1 is needed.")
                               .arg(formatBytes(double(v.plan.min_budget_bytes))),
                           palette::kError);
        QList<QStringList> cats{{QObject::tr("Category"), QObject::tr("Predicted peak")}};
        const char *names[] = {"weights",     "gradients", "optimizer state",
                               "activations", "workspace", "recompute"};
        for (int i = 0; i < 6; ++i)
            cats.append({QString::fromLatin1(names[i]),
                         formatBytes(double(v.plan.predicted.peak_bytes[std::size_t(i)]))});
        cats.append({QObject::tr("all at once"), formatBytes(double(v.plan.predicted_peak_bytes))});
        page.table(cats, {0.5, 0.5});
        const double h = std::min(area.width() * 0.75, area.bottom() - page.y() - 160);
        chart(page, charts.memory, QRectF(0, page.y(), area.width(), h));
        page.skip(h + 10);
        page.paragraph(QObject::tr("Each dot is a schedule the planner weighed: how much memory "
                                   "it needs at its peak against how much compute a training "
                                   "step costs, where 1 is store-all (every intermediate result "
                                   "kept, nothing computed twice). The dashed line is the "
                                   "budget; the larger dot the schedule chosen."),
                       palette::kMutedText);
    } else {
        page.paragraph(QObject::tr("No memory plan was computed in this session."));
    }
}

/** Training on the devices: their charts, the energy used, the planner's choice. */
void training(PdfPage page, const app::Session &s, const ReportCharts &charts)
{
    const QRectF &area = page.area();
    page.heading(QObject::tr("Training on the devices"));
    page.paragraph(ReportText::trainingFacts(s));
    // What another run of this session (in the window, or headless) may change, and why.
    if (const QString again = app::repeatabilityText(app::runRepeatability(s)); !again.isEmpty())
        page.paragraph(again, app::palette::kMutedText);
    const auto list = charts.training.reportPage();
    // Three rows of two, as tall as the page leaves room for beside the tables below them.
    const double below = s.training.plan ? 420 : ReportText::energyRows(s).size() > 1 ? 200 : 60;
    const double w = (area.width() - 20) / 2,
                 h = std::clamp((area.bottom() - page.y() - below) / 3 - 14, w * 0.6, w * 0.85);
    for (int i = 0; i < int(list.size()); ++i)
        chart(page, list[std::size_t(i)],
              QRectF((i % 2) * (w + 20), page.y() + (i / 2) * (h + 14), w, h));
    page.skip(double((list.size() + 1) / 2) * (h + 14));
    if (s.training.metrics.empty())
        page.paragraph(QObject::tr("No training run was recorded in this session."));
    // Energy, from the devices' power (measured, or estimated from their profiles)
    if (const QList<QStringList> energy = ReportText::energyRows(s); energy.size() > 1)
        page.table(energy, {0.3, 0.2, 0.17, 0.17, 0.16}, 6);
    // The planner's choice, when it chose the devices
    if (s.training.plan) {
        page.paragraph(ReportText::clusterPlanSummary(s));
        page.table(ReportText::clusterPlanRows(s, 6), {0.24, 0.07, 0.08, 0.09, 0.09, 0.1, 0.33}, 7);
    }
}

/** Results against verified frames, with the precision-recall chart. */
void verifiedResults(PdfPage page, const ReportContent &c, const ReportCharts &charts)
{
    const app::Session &s = *c.session;
    const QRectF &area = page.area();
    page.heading(QObject::tr("Results against verified frames"));
    const app::VerifiedRound *round = ReportText::currentRound(s);
    if (round) {
        page.paragraph(ReportText::headline(s, c.category));
        verifiedTable(page, s);
        page.paragraph(ReportText::verifiedMethod(s), palette::kMutedText);
    } else {
        page.paragraph(ReportText::verifyInvitation());
    }
    const double h = std::min(area.width() * 0.8, area.bottom() - page.y() - 10);
    chart(page, charts.pr, QRectF(0, page.y(), area.width(), h));
    page.skip(h + 10);
}

/** Results against the tracker's labels, and the epochs. */
void trackerResults(PdfPage page, const app::Session &s)
{
    page.heading(QObject::tr("Results against the tracker's labels"));
    page.paragraph(ReportText::trackerHeadline(s));
    if (s.evaluation.done) {
        page.table(ReportText::trackerRows(s), {0.43, 0.13, 0.22, 0.22});
        page.paragraph(
            QObject::tr("Evaluated on %1 frames with held-out (test-split) tracks; a box counts "
                        "as found when a detection overlaps it by IoU ≥ %2. These labels were "
                        "made by the teacher and the tracker themselves: the teacher's own "
                        "boxes favour it, the tracker's mistakes count as truth, and "
                        "unlabelled people count against the student.")
                .arg(s.evaluation.result.frames)
                .arg(s.evaluation.result.match_iou));
    }
    page.subheading(QObject::tr("Epochs"));
    QList<QStringList> epochs{{QObject::tr("Epoch"), QObject::tr("Devices"), QObject::tr("Loss"),
                               QObject::tr("Accuracy"), QObject::tr("Validation"),
                               QObject::tr("Images/s"), QObject::tr("Seconds")}};
    for (const auto &e : s.training.epochs)
        epochs.append({QString::number(e.epoch), QString::number(e.nodes),
                       QString::number(e.train_loss, 'f', 4), percent(e.train_accuracy),
                       e.test_accuracy < 0 ? QStringLiteral("–") : percent(e.test_accuracy),
                       QString::number(e.images_per_second, 'f', 0),
                       QString::number(e.seconds, 'f', 1)});
    page.table(epochs, {0.1, 0.12, 0.16, 0.16, 0.16, 0.16, 0.14}, 30);
}

/** The gallery: verified frames, or what the student found. */
void gallery(PdfPage page, const ReportContent &c)
{
    const QRectF &area = page.area();
    if (c.galleryVerified) {
        page.heading(QObject::tr("Gallery: verified frames"));
        page.paragraph(QObject::tr("Verified frames the student never trained on, the teacher "
                                   "and the student each at its operating point. ") +
                       ReportText::galleryLegend(true));
    } else {
        page.heading(QObject::tr("Gallery: what the student found"));
        // The invitation only while nothing is verified: with verified frames their figures
        // lead the report, and this gallery is the tracker's side of it.
        page.paragraph(QObject::tr("Held-out frames where the teacher found nobody at the "
                                   "labelled place and the student did. ") +
                       ReportText::galleryLegend(false) +
                       (ReportText::currentRound(*c.session)
                            ? QString()
                            : QObject::tr(" Verify frames to see the detectors against boxes a "
                                          "person checked.")));
    }
    if (c.gallery.isEmpty())
        page.paragraph(QObject::tr("No such frame in this session."));
    // Whole frames (wider than high) two to a row; crops of one person four.
    const bool wide =
        !c.gallery.isEmpty() && c.gallery.first().width() > c.gallery.first().height();
    const int columns = wide ? 2 : 4;
    const double cellW = (area.width() - (columns - 1) * 12) / columns;
    const double maxH = wide ? 560.0 : 300.0;
    double y = page.y(), rowH = 0;
    for (int i = 0; i < c.gallery.size() && i < 16; ++i) {
        const QImage &img = c.gallery[i];
        const double scale = std::min(cellW / img.width(), maxH / img.height());
        const QSizeF size(img.width() * scale, img.height() * scale);
        if (i % columns == 0 && i > 0) {
            y += rowH + 12;
            rowH = 0;
        }
        if (y + size.height() > area.bottom())
            break;
        page.image(img, QRectF((i % columns) * (cellW + 12), y, size.width(), size.height()));
        rowH = std::max(rowH, size.height());
    }
}

/** The last deployment: each device's figures and its last frame with the student's boxes. */
void deploy(PdfPage page, const app::Session &s)
{
    const app::DeploymentRecord &d = *s.deployment;
    page.heading(QObject::tr("Running on the devices"));
    page.paragraph(
        QObject::tr("The student ran on %1, each on its own camera, for %2 s from %3%4. "
                    "Figures from each device's last report: frames/s over the run, the latency "
                    "of one frame (p50 / p95), the agent's CPU (100 % = one core) and memory.")
            .arg(ReportText::count(int(d.devices.size()), QObject::tr("device"),
                                   QObject::tr("devices")))
            .arg(d.seconds, 0, 'f', 0)
            .arg(d.started.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")))
            .arg(d.stopped ? QObject::tr(" until stopped") : QString()));
    if (!d.error.isEmpty())
        page.paragraph(d.error, palette::kError);
    QList<QStringList> rows{{QObject::tr("Device"), QObject::tr("Camera"), QObject::tr("Frames"),
                             QObject::tr("Frames/s"), QObject::tr("p50 ms"), QObject::tr("p95 ms"),
                             QObject::tr("Boxes"), QObject::tr("CPU"), QObject::tr("Memory")}};
    for (const app::DeploymentRecord::Device &v : d.devices)
        rows.append({v.node, v.source, QString::number(v.frames), QString::number(v.fps, 'f', 1),
                     QString::number(v.latencyMsP50, 'f', 0),
                     QString::number(v.latencyMsP95, 'f', 0), QString::number(v.detections),
                     QStringLiteral("%1 %").arg(v.cpuPercent, 0, 'f', 0),
                     v.rssBytes > 0 ? formatBytes(double(v.rssBytes)) : QString()});
    page.table(rows, {0.14, 0.18, 0.09, 0.1, 0.09, 0.09, 0.08, 0.08, 0.13});
    for (const app::DeploymentRecord::Device &v : d.devices)
        if (!v.error.isEmpty())
            page.paragraph(QStringLiteral("%1: %2").arg(v.node, v.error), palette::kError);
    page.skip(10);
    // The last frames, two to a row, each under its device's name.
    const QRectF &area = page.area();
    const double cellW = (area.width() - 20) / 2, captionH = 64; // two lines
    double y = page.y(), rowH = 0;
    int shown = 0;
    for (const app::DeploymentRecord::Device &v : d.devices) {
        const QImage img(s.path(v.frame));
        if (v.frame.isEmpty() || img.isNull())
            continue;
        const double scale = cellW / img.width();
        const QSizeF size(cellW, img.height() * scale);
        if (shown % 2 == 0 && shown > 0) {
            y += rowH + 16;
            rowH = 0;
        }
        if (y + captionH + size.height() > area.bottom())
            break;
        const double x = (shown % 2) * (cellW + 20);
        PdfPage caption(page.painter(), QRectF(x, y, cellW, captionH));
        caption.paragraph(QObject::tr("%1 · %2\n%3 frames/s · %4 boxes in this frame")
                              .arg(v.node, v.source)
                              .arg(v.fps, 0, 'f', 1)
                              .arg(v.frameDetections));
        page.image(img, QRectF(x, y + captionH, size.width(), size.height()));
        rowH = std::max(rowH, captionH + size.height());
        ++shown;
    }
}

void front(PdfPage page, const ReportContent &c, const ReportCharts &charts,
           const QStringList &contents)
{
    const app::Session &s = *c.session;
    QPainter &painter = page.painter();
    const QRectF &area = page.area();
    QFont f = painter.font();
    f.setPointSizeF(22);
    f.setBold(true);
    painter.setFont(f);
    painter.setPen(palette::kHeading);
    painter.drawText(QRectF(0, page.y(), area.width(), 80), Qt::AlignLeft,
                     QObject::tr("Viewpoint adaptation report"));
    page.skip(painter.fontMetrics().height() + 6);
    page.paragraph(
        QObject::tr("%1 · session created %2 · report written %3")
            .arg(s.title, s.created.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")),
                 QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"))),
        palette::kMutedText);
    page.paragraph(QObject::tr("Camera: %1. Teacher: %2 (on %3); tracker: %4.")
                       .arg(cameraLine(s), s.capture.teacher, ReportText::everyNth(s.capture.every),
                            s.capture.tracker));
    page.skip(6);
    f.setPointSizeF(11);
    f.setBold(false);
    painter.setFont(f);
    painter.setPen(palette::kText);
    const QString head = ReportText::headline(s, c.category);
    const QRectF r =
        painter.boundingRect(QRectF(0, page.y(), area.width(), 600), Qt::TextWordWrap, head);
    painter.drawText(QRectF(0, page.y(), area.width(), r.height()), Qt::TextWordWrap, head);
    page.skip(r.height() + 18);
    if (const app::VerifiedRound *round = ReportText::currentRound(s))
        tiles(page, *round);

    // One frame beside the run's facts.
    const double top = page.y();
    double bottom = top;
    const double factsX = c.gallery.isEmpty() ? 0 : area.width() * 0.5 + 20;
    if (!c.gallery.isEmpty()) {
        const QImage &img = c.gallery.first();
        const double w = area.width() * 0.5;
        const double scale = std::min(w / img.width(), 680.0 / img.height());
        const QSizeF size(img.width() * scale, img.height() * scale);
        page.image(img, QRectF(QPointF(0, top), size));
        PdfPage caption(painter, QRectF(0, top + size.height() + 6, w, 200));
        caption.paragraph((c.galleryVerified
                               ? QObject::tr("A verified frame: the teacher's boxes and the "
                                             "student's on the same picture. ")
                               : QObject::tr("A held-out frame where the teacher found nobody "
                                             "and the student did. ")) +
                              ReportText::galleryLegend(c.galleryVerified),
                          palette::kMutedText);
        bottom = caption.y();
    }
    PdfPage facts(painter, QRectF(factsX, top, area.width() - factsX, area.bottom() - top));
    facts.subheading(QObject::tr("The run"));
    QString devices = s.training.nodes.join(QStringLiteral(", "));
    if (devices.isEmpty())
        devices = QObject::tr("none yet");
    facts.paragraph(QObject::tr("Devices: %1.").arg(devices));
    if (const QString run = ReportText::trainingFacts(s); !run.isEmpty())
        facts.paragraph(run);
    else
        facts.paragraph(QObject::tr("No training run was recorded in this session."));
    facts.paragraph(
        QObject::tr("Student: %1, %2.")
            .arg(s.plan.model,
                 s.dataset.kind == QLatin1String("frames")
                     ? QObject::tr("whole frames %1 pixels wide").arg(s.dataset.frameWidth)
                     : QObject::tr("crops of %1 × %2 pixels")
                           .arg(s.dataset.width)
                           .arg(s.dataset.height)));
    facts.subheading(QObject::tr("Contents"));
    facts.paragraph(contents.join(QLatin1Char('\n')));
    page.skip(std::max(bottom, facts.y()) - top + 10);
    // The figures behind the tiles, or without verified frames the tracker's.
    if (ReportText::currentRound(s)) {
        page.subheading(QObject::tr("Against verified frames, every detector"));
        verifiedTable(page, s);
        // The curves behind the figures, in what room is left.
        const double h = std::min(area.width() * 0.5, area.bottom() - page.y());
        if (h > area.width() * 0.3)
            chart(page, charts.pr, QRectF(0, page.y(), area.width(), h));
    } else if (s.evaluation.done) {
        page.subheading(QObject::tr("Against the tracker's labels (not checked by a person)"));
        page.table(ReportText::trackerRows(s), {0.43, 0.13, 0.22, 0.22});
    }
}

void glossary(PdfPage page)
{
    page.heading(QObject::tr("Glossary"));
    page.paragraph(QObject::tr("The words and abbreviations of this report in plain words."),
                   palette::kMutedText);
    QList<QStringList> rows = ReportText::glossary();
    rows.removeFirst(); // the header: a list of definitions needs none
    page.definitions(rows, 0.22);
}

void chart(PdfPage &page, QWidget *w, const QRectF &target)
{
    ChartFiles::paint(w, page.painter(), target, chartScale(*page.painter().device(), *w));
}

double chartScale(const QPaintDevice &paper, const QWidget &chart)
{
    // Paper at the PDF's resolution against the widget's screen.
    return kChartTextPt / kChartFontPt * paper.logicalDpiY() / chart.logicalDpiY();
}

} // namespace ReportPages

} // namespace edgetrain::ui

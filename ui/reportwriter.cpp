#include "reportwriter.h"

#include "app/report/pdfpage.h"
#include "app/session/csvfield.h"
#include "chartfiles.h"
#include "charts.h"
#include "reporttext.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>

namespace edgetrain::ui {

namespace {

using app::PdfPage;

constexpr int kChartW = 900, kChartH = 480; // the charts' own size when rendered

QString percent(double v)
{
    return QString::number(100 * v, 'f', 1) + QStringLiteral(" %");
}

struct Charts
{
    std::unique_ptr<QWidget> owner = std::make_unique<QWidget>();
    TrainingCharts training;
    MemoryChart *memory = nullptr;
    PrChart *pr = nullptr;
    std::vector<std::pair<QString, QWidget *>> named() const
    {
        std::vector<std::pair<QString, QWidget *>> list{
            {QStringLiteral("cpu"), training.cpu},
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
};

std::unique_ptr<Charts> makeCharts(const ReportContent &c)
{
    auto charts = std::make_unique<Charts>();
    charts->training = TrainingCharts::create(charts->owner.get());
    charts->training.load(*c.session);
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

/** The title page: what the report is about, its headline and the contents. */
void titlePage(PdfPage page, QPainter &painter, const ReportContent &c)
{
    const app::Session &s = *c.session;
    const QRectF &area = page.area();
    page.skip(260);
    QFont f = painter.font();
    f.setPointSizeF(26);
    f.setBold(true);
    painter.setFont(f);
    painter.setPen(QColor(0x12, 0x3a, 0x63));
    painter.drawText(QRectF(0, page.y(), area.width(), 100), Qt::AlignLeft,
                     QObject::tr("Viewpoint adaptation report"));
    page.skip(110);
    page.paragraph(
        QObject::tr("Session “%1”, created %2; report written %3.")
            .arg(s.title, s.created.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")),
                 QDateTime::currentDateTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"))));
    page.paragraph(
        QObject::tr("Source: %1 · teacher: %2 · tracker: %3")
            .arg(QFileInfo(s.capture.source).fileName(), s.capture.teacher, s.capture.tracker));
    page.skip(30);
    QFont hf = painter.font();
    hf.setPointSizeF(13);
    painter.setFont(hf);
    painter.setPen(Qt::black);
    const QString head = ReportText::headline(s, c.category);
    const QRectF r =
        painter.boundingRect(QRectF(0, page.y(), area.width(), 600), Qt::TextWordWrap, head);
    painter.drawText(r, Qt::TextWordWrap, head);
    page.skip(r.height() + 50);
    page.subheading(QObject::tr("Contents"));
    page.paragraph(
        QObject::tr("2  Nodes\n3  Settings and data\n4  Memory plan\n5  Training on the devices\n"
                    "6  Results against verified frames\n7  Results against the tracker's labels\n"
                    "8  Gallery") +
        (s.deployment ? QObject::tr("\n9  Running on the devices") : QString()));
}

/** The nodes: what each one is, and what happened to them during training. */
void nodesPage(PdfPage page, const app::Session &s)
{
    page.heading(QObject::tr("2  Nodes"));
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
        page.table(events, {0.1, 0.18, 0.12, 0.6}, 30);
}

/** The settings: capture and labelling, the dataset, the training run. */
void settingsPage(PdfPage page, const app::Session &s)
{
    page.heading(QObject::tr("3  Settings and data"));
    page.subheading(QObject::tr("Capture and labelling"));
    QList<QStringList> capture{
        {QObject::tr("Setting"), QObject::tr("Value")},
        {QObject::tr("Source"), s.capture.source},
        {QObject::tr("Teacher"), s.capture.teacher},
        {QObject::tr("Tracker"), s.capture.tracker},
        {QObject::tr("Teacher runs on"), QObject::tr("every %1 frame(s)").arg(s.capture.every)}};
    page.table(capture, {0.3, 0.7});
    page.subheading(QObject::tr("Dataset (split by track)"));
    QList<QStringList> data{{QObject::tr("Split"), QObject::tr("Tracks"), QObject::tr("Positives"),
                             QObject::tr("Negatives")}};
    const char *splits[] = {"train", "validation", "test"};
    for (int i = 0; i < 3; ++i)
        data.append(
            {QString::fromLatin1(splits[i]),
             s.datasetStats ? QString::number(s.datasetStats->tracks[i]) : QStringLiteral("–"),
             s.datasetStats ? QString::number(s.datasetStats->positives[i]) : QStringLiteral("–"),
             s.datasetStats ? QString::number(s.datasetStats->negatives[i]) : QStringLiteral("–")});
    page.table(data, {0.25, 0.25, 0.25, 0.25});
    if (s.dataset.kind == QLatin1String("frames"))
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
        {QObject::tr("Epochs"), QString::number(s.plan.epochs)},
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
}

/** The memory plan: the budgets, and the plan with its chart when one was computed. */
void memoryPlanPage(PdfPage page, const ReportContent &c, const Charts &charts)
{
    const app::Session &s = *c.session;
    const QRectF &area = page.area();
    page.heading(QObject::tr("4  Memory plan"));
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
            QObject::tr("For a device batch of %1: schedule %2, %3 more compute per step "
                        "than keeping every activation; predicted peak %4 (store-all: %5; "
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
                           QColor(0xb0, 0x00, 0x20));
        QList<QStringList> cats{{QObject::tr("Category"), QObject::tr("Predicted peak")}};
        const char *names[] = {"weights",     "gradients", "optimizer state",
                               "activations", "workspace", "recompute"};
        for (int i = 0; i < 6; ++i)
            cats.append({QString::fromLatin1(names[i]),
                         formatBytes(double(v.plan.predicted.peak_bytes[std::size_t(i)]))});
        cats.append({QObject::tr("all at once"), formatBytes(double(v.plan.predicted_peak_bytes))});
        page.table(cats, {0.5, 0.5});
        const QRectF target(0, page.y(), area.width(), area.width() * kChartH / kChartW);
        page.image(ChartFiles::image(charts.memory, target.size()), target);
    } else {
        page.paragraph(QObject::tr("No memory plan was computed in this session."));
    }
}

/** Training on the devices: their charts, the energy used, the planner's choice. */
void trainingPage(PdfPage page, const app::Session &s, const Charts &charts)
{
    const QRectF &area = page.area();
    page.heading(QObject::tr("5  Training on the devices"));
    const auto list = charts.training.reportPage();
    const double w = (area.width() - 20) / 2, h = w * kChartH / kChartW;
    for (int i = 0; i < int(list.size()); ++i) {
        const QRectF target((i % 2) * (w + 20), page.y() + (i / 2) * (h + 14), w, h);
        page.image(ChartFiles::image(list[std::size_t(i)], target.size()), target);
    }
    page.skip(3 * (h + 14));
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
void verifiedResultsPage(PdfPage page, const ReportContent &c, const Charts &charts)
{
    const app::Session &s = *c.session;
    const QRectF &area = page.area();
    page.heading(QObject::tr("6  Results against verified frames"));
    const app::VerifiedRound *round = ReportText::currentRound(s);
    if (round) {
        page.paragraph(ReportText::headline(s, c.category));
        const QList<QStringList> rows = ReportText::verifiedRows(s);
        page.table(rows, rows.first().size() == 9
                             ? QList<double>{0.08, 0.12, 0.11, 0.12, 0.08, 0.09, 0.14, 0.13, 0.13}
                             : QList<double>{0.14, 0.12, 0.12, 0.09, 0.1, 0.13, 0.15, 0.15});
        page.paragraph(ReportText::verifiedMethod(s), QColor(0x44, 0x44, 0x44));
    } else {
        page.paragraph(ReportText::verifyInvitation());
    }
    const double h = area.width() * kChartH / kChartW;
    const QRectF prTarget(0, page.y(), area.width(), h);
    page.image(ChartFiles::image(charts.pr, prTarget.size()), prTarget);
    page.skip(h + 10);
}

/** Results against the tracker's labels, and the epochs. */
void trackerResultsPage(PdfPage page, const app::Session &s)
{
    page.heading(QObject::tr("7  Results against the tracker's labels"));
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
void galleryPage(PdfPage page, const ReportContent &c)
{
    const QRectF &area = page.area();
    if (c.galleryVerified) {
        page.heading(QObject::tr("8  Gallery: verified frames"));
        page.paragraph(
            QObject::tr("Verified frames the student never trained on. Magenta: the boxes a "
                        "person verified (dashed grey: ignored); green: the teacher's "
                        "detections; blue: the student's, each at its operating threshold."));
    } else {
        page.heading(QObject::tr("8  Gallery: what the student found"));
        page.paragraph(
            QObject::tr("Held-out frames where the teacher found nobody at the labelled place "
                        "and the student did. Dashed orange: the box the tracker carried there; "
                        "green: the student's detection. Verify frames to see the detectors "
                        "against boxes a person checked."));
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
void deployPage(PdfPage page, const app::Session &s)
{
    const app::DeploymentRecord &d = *s.deployment;
    page.heading(QObject::tr("9  Running on the devices"));
    page.paragraph(
        QObject::tr("The student ran on %1 device(s), each on its own camera, for %2 s from %3%4. "
                    "Figures from each device's last report: frames/s over the run, the latency "
                    "of one frame (p50 / p95), the agent's CPU (100 % = one core) and memory.")
            .arg(d.devices.size())
            .arg(d.seconds, 0, 'f', 0)
            .arg(d.started.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm")))
            .arg(d.stopped ? QObject::tr(" until stopped") : QString()));
    if (!d.error.isEmpty())
        page.paragraph(d.error, QColor(0xb0, 0x00, 0x20));
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
            page.paragraph(QStringLiteral("%1: %2").arg(v.node, v.error), QColor(0xb0, 0x00, 0x20));
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

} // namespace

int ReportWriter::pages(const app::Session &session)
{
    return kPages + (session.deployment ? 1 : 0);
}

bool ReportWriter::writePdf(const QString &path, const ReportContent &c, QString *error)
{
    const app::Session &s = *c.session;
    QDir().mkpath(QFileInfo(path).absolutePath());
    QPdfWriter writer(path);
    PdfPage::setUp(writer, QStringLiteral("EdgeTrain report — %1").arg(s.title));
    QPainter painter;
    if (!painter.begin(&writer)) {
        *error = QStringLiteral("cannot write the PDF '%1'").arg(path);
        return false;
    }
    const auto charts = makeCharts(c);
    const QRect full = writer.pageLayout().paintRectPixels(writer.resolution());
    const QRectF area = PdfPage::bodyArea(full);
    int pageNumber = 0;
    auto newPage = [&] {
        if (pageNumber > 0)
            writer.newPage();
        ++pageNumber;
        PdfPage::footer(
            painter, full,
            QStringLiteral("EdgeTrain · %1 · %2").arg(s.title, QFileInfo(s.dir).fileName()),
            pageNumber, pages(s));
        return PdfPage(painter, area);
    };

    titlePage(newPage(), painter, c);
    nodesPage(newPage(), s);
    settingsPage(newPage(), s);
    memoryPlanPage(newPage(), c, *charts);
    trainingPage(newPage(), s, *charts);
    verifiedResultsPage(newPage(), c, *charts);
    trackerResultsPage(newPage(), s);
    galleryPage(newPage(), c);
    if (s.deployment)
        deployPage(newPage(), s);
    if (!painter.end()) {
        *error = QStringLiteral("cannot finish the PDF '%1'").arg(path);
        return false;
    }
    return true;
}

bool ReportWriter::writeCharts(const QString &dir, const ReportContent &c, QStringList *written,
                               QString *error)
{
    if (!QDir().mkpath(dir)) {
        *error = QStringLiteral("cannot create '%1'").arg(dir);
        return false;
    }
    const auto charts = makeCharts(c);
    for (const auto &[name, w] : charts->named())
        if (!ChartFiles::write(w, dir, name, written, error))
            return false;
    return true;
}

bool ReportWriter::writeCsv(const QString &dir, const app::Session &s, QStringList *written,
                            QString *error)
{
    QDir().mkpath(dir);
    QByteArray evaluation = "measure,boxes,teacher,student\n";
    if (s.evaluation.done) {
        const auto &e = s.evaluation.result;
        evaluation += "recall_teacher_found," + QByteArray::number(e.teacher_found_boxes) + ',' +
                      QByteArray::number(e.teacher_recall_teacher_found, 'g', 6) + ',' +
                      QByteArray::number(e.student_recall_teacher_found, 'g', 6) + '\n';
        evaluation += "recall_tracker_only," + QByteArray::number(e.tracker_only_boxes) + ',' +
                      QByteArray::number(e.teacher_recall_tracker_only, 'g', 6) + ',' +
                      QByteArray::number(e.student_recall_tracker_only, 'g', 6) + '\n';
        evaluation += "precision,," + QByteArray::number(e.teacher_precision, 'g', 6) + ',' +
                      QByteArray::number(e.student_precision, 'g', 6) + '\n';
    }
    const auto bounds = [](const vision::FigureIntervals *ci) {
        QByteArray b;
        for (const vision::Interval *i : {&ci->recall, &ci->precision, &ci->f1, &ci->ap50})
            b += ',' + QByteArray::number(i->lo, 'g', 6) + ',' + QByteArray::number(i->hi, 'g', 6);
        return b;
    };
    const QByteArray noBounds(8, ','); // a round scored before intervals existed
    QByteArray verified = "round,frames,first_frame,detector,truths,detections,true_positives,"
                          "false_positives,recall,precision,f1,ap50,ap50_95,threshold,recall_lo,"
                          "recall_hi,precision_lo,precision_hi,f1_lo,f1_hi,ap50_lo,ap50_hi\n";
    QByteArray leads = "round,frames,of,over,recall,precision,f1,ap50,recall_lo,recall_hi,"
                       "precision_lo,precision_hi,f1_lo,f1_hi,ap50_lo,ap50_hi,resamples,seed\n";
    for (const app::VerifiedRound &r : s.evaluation.verified) {
        for (const vision::DetectorScore &d : r.scores) {
            const vision::FigureIntervals *ci = r.interval(d.name);
            verified +=
                QByteArray::number(r.round) + ',' + QByteArray::number(r.frames) + ',' +
                QByteArray::number(r.first_frame) + ',' + QByteArray::fromStdString(d.name) + ',' +
                QByteArray::number(d.truths) + ',' + QByteArray::number(d.detections) + ',' +
                QByteArray::number(d.true_positives) + ',' + QByteArray::number(d.false_positives) +
                ',' + QByteArray::number(d.recall, 'g', 6) + ',' +
                QByteArray::number(d.precision, 'g', 6) + ',' + QByteArray::number(d.f1, 'g', 6) +
                ',' + QByteArray::number(d.ap50, 'g', 6) + ',' +
                QByteArray::number(d.ap50_95, 'g', 6) + ',' +
                QByteArray::number(d.threshold, 'g', 6) + (ci ? bounds(ci) : noBounds) + '\n';
        }
        for (const vision::BootstrapDifference &d : r.differences)
            leads += QByteArray::number(r.round) + ',' + QByteArray::number(r.frames) + ',' +
                     QByteArray::fromStdString(d.a) + ',' + QByteArray::fromStdString(d.b) + ',' +
                     QByteArray::number(d.a_minus_b.recall, 'g', 6) + ',' +
                     QByteArray::number(d.a_minus_b.precision, 'g', 6) + ',' +
                     QByteArray::number(d.a_minus_b.f1, 'g', 6) + ',' +
                     QByteArray::number(d.a_minus_b.ap50, 'g', 6) + bounds(&d.ci) + ',' +
                     QByteArray::number(r.resamples) + ',' + QByteArray::number(r.seed) + '\n';
    }
    QByteArray deployment = "device,camera,frames,detections,fps,latency_ms_p50,latency_ms_p95,"
                            "cpu_percent,rss_bytes,error\n";
    if (s.deployment)
        for (const app::DeploymentRecord::Device &v : s.deployment->devices)
            deployment += app::csvField(v.node) + ',' + app::csvField(v.source) + ',' +
                          QByteArray::number(v.frames) + ',' + QByteArray::number(v.detections) +
                          ',' + QByteArray::number(v.fps, 'g', 6) + ',' +
                          QByteArray::number(v.latencyMsP50, 'g', 6) + ',' +
                          QByteArray::number(v.latencyMsP95, 'g', 6) + ',' +
                          QByteArray::number(v.cpuPercent, 'g', 6) + ',' +
                          QByteArray::number(v.rssBytes) + ',' + app::csvField(v.error) + '\n';
    const std::pair<QString, QByteArray> files[] = {
        {QStringLiteral("metrics.csv"), s.metricsCsv()},
        {QStringLiteral("progress.csv"), s.progressCsv()},
        {QStringLiteral("epochs.csv"), s.epochsCsv()},
        {QStringLiteral("evaluation.csv"), evaluation},
        {QStringLiteral("verified.csv"), verified},
        {QStringLiteral("verified-leads.csv"), leads},
        {QStringLiteral("deployment.csv"), deployment}};
    for (const auto &[name, data] : files) {
        const QString path = dir + QLatin1Char('/') + name;
        if (!app::writeFileAtomically(path, data, error))
            return false;
        written->append(path);
    }
    return true;
}

bool ReportWriter::exportAll(const QString &dir, const ReportContent &c, QStringList *written,
                             QString *error)
{
    const QString pdf = dir + QStringLiteral("/report.pdf");
    if (!writePdf(pdf, c, error))
        return false;
    written->append(pdf);
    if (!writeCharts(dir + QStringLiteral("/charts"), c, written, error) ||
        !writeCsv(dir, *c.session, written, error))
        return false;
    // The session's manifest and the trained student go along: the report's numbers and the
    // model they are about.
    QStringList files{QStringLiteral("session.json")};
    if (!c.session->training.weights.isEmpty())
        files.append(c.session->training.weights);
    for (const QString &name : files) {
        const QString from = c.session->path(name), to = dir + QLatin1Char('/') + name;
        if (QFileInfo(from) == QFileInfo(to) || !QFileInfo::exists(from))
            continue;
        QFile::remove(to);
        if (!QFile::copy(from, to)) {
            *error = QStringLiteral("cannot copy '%1' to '%2'").arg(from, to);
            return false;
        }
        written->append(to);
    }
    return true;
}

} // namespace edgetrain::ui

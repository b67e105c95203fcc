#include "reportwriter.h"

#include "app/report/pdfpage.h"
#include "app/session/csvfield.h"
#include "chartfiles.h"
#include "reportpages.h"
#include "reporttext.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>

namespace edgetrain::ui {

using app::PdfPage;

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
    const auto charts = ReportCharts::make(c);
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

    // Page by page, the sections in the order of the contents on the first page.
    QStringList contents{QObject::tr("2  Nodes; settings and data"),
                         QObject::tr("3  Memory plan"),
                         QObject::tr("4  Training on the devices"),
                         QObject::tr("5  Results against verified frames"),
                         QObject::tr("6  Results against the tracker's labels"),
                         QObject::tr("7  Gallery")};
    if (s.deployment)
        contents.append(QObject::tr("8  Running on the devices"));
    contents.append(QObject::tr("%1  Glossary").arg(pages(s)));
    ReportPages::front(newPage(), c, *charts, contents);
    {
        PdfPage page = newPage();
        ReportPages::nodes(page, s);
        ReportPages::settings(page, s);
    }
    ReportPages::memoryPlan(newPage(), c, *charts);
    ReportPages::training(newPage(), s, *charts);
    ReportPages::verifiedResults(newPage(), c, *charts);
    ReportPages::trackerResults(newPage(), s);
    ReportPages::gallery(newPage(), c);
    if (s.deployment)
        ReportPages::deploy(newPage(), s);
    ReportPages::glossary(newPage());
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
    const auto charts = ReportCharts::make(c);
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

#pragma once

#include "app/session/workflow.h"

#include <QImage>
#include <QList>
#include <QStringList>

#include <optional>
#include <string>

namespace edgetrain::ui {

/** What a report is made from: the session, the memory plan shown, the gallery's frames. */
struct ReportContent
{
    const app::Session *session = nullptr;
    std::optional<app::PlanView> plan;
    QList<QImage> gallery;           // drawn frames (Gallery::renderVerified or renderGains)
    bool galleryVerified = false;    // the gallery shows verified frames (else the tracker's gains)
    std::string category = "person"; // what the verified boxes are (GroundTruth::category)
};

/**
 * The session's report: a PDF (the front page with the key figures, nodes with the settings,
 * memory plan, training charts, results against verified frames with the precision-recall chart,
 * results against the tracker's labels, gallery, glossary — a page each, so kPages pages; and
 * when the student ran on the devices, a Deploy page before the glossary: pages()), its charts
 * drawn as vectors, every chart as PNG and SVG (the
 * precision-recall chart as pr.png / pr.svg), and the figures as CSV. Needs a QApplication (charts
 * are widgets); runs on the GUI thread in well under a second for a demo session.
 */
class ReportWriter
{
public:
    static constexpr int kPages = 8;
    /** The PDF's pages for `session`: kPages, one more with a deployment (the Deploy page). The
     *  last is the glossary. */
    static int pages(const app::Session &session);
    static bool writePdf(const QString &path, const ReportContent &content, QString *error);
    /** <dir>/<name>.png and .svg for each chart; the files written are appended to `written`. */
    static bool writeCharts(const QString &dir, const ReportContent &content, QStringList *written,
                            QString *error);
    /** metrics.csv (device readings), progress.csv (training progress per device), epochs.csv,
     *  evaluation.csv (against the tracker's labels), verified.csv (per round and detector,
     *  against verified frames; header only without), deployment.csv (each device's last report
     *  of the last deployment; header only without). */
    static bool writeCsv(const QString &dir, const app::Session &session, QStringList *written,
                         QString *error);
    /** All of it under `dir`: report.pdf, charts/, the CSV files, session.json and the trained
     *  student (safetensors). */
    static bool exportAll(const QString &dir, const ReportContent &content, QStringList *written,
                          QString *error);
};

} // namespace edgetrain::ui

#pragma once

#include "charts.h"
#include "reportwriter.h"

#include <QPainter>

#include <memory>
#include <vector>

namespace edgetrain::app {
class PdfPage;
}

namespace edgetrain::ui {

/** The report's chart widgets, laid out off screen (a QApplication is needed). */
struct ReportCharts
{
    std::unique_ptr<QWidget> owner = std::make_unique<QWidget>();
    TrainingCharts training;
    MemoryChart *memory = nullptr;
    PrChart *pr = nullptr;
    /** Each chart with its file name (charts/NAME.png and .svg). */
    std::vector<std::pair<QString, QWidget *>> named() const;
    static std::unique_ptr<ReportCharts> make(const ReportContent &content);
};

/** The pages of ReportWriter's PDF, each laid out top to bottom on the page it is given. */
namespace ReportPages {

/** The first page: title, the camera, the verified headline as key-figure tiles, one frame,
 *  the run's facts, `contents` (a line per section), and the verified figures with their
 *  precision-recall chart as room allows. */
void front(app::PdfPage page, const ReportContent &content, const ReportCharts &charts,
           const QStringList &contents);
/** The nodes and their events; settings() goes on below them on the same page. */
void nodes(app::PdfPage &page, const app::Session &session);
void settings(app::PdfPage &page, const app::Session &session);
void memoryPlan(app::PdfPage page, const ReportContent &content, const ReportCharts &charts);
void training(app::PdfPage page, const app::Session &session, const ReportCharts &charts);
void verifiedResults(app::PdfPage page, const ReportContent &content, const ReportCharts &charts);
void trackerResults(app::PdfPage page, const app::Session &session);
void gallery(app::PdfPage page, const ReportContent &content);
void deploy(app::PdfPage page, const app::Session &session);
/** What every term and abbreviation of the report means (ReportText::glossary). */
void glossary(app::PdfPage page);

/** Draws `chart` as vectors into `target`, its text at a size that reads on paper. */
void chart(app::PdfPage &page, QWidget *chart, const QRectF &target);
/** How many of `paper`'s pixels one of `chart`'s pixels becomes on a page (ChartFiles::paint's
 *  scale): the charts' 8 pt text lands at 7.5 pt. */
double chartScale(const QPaintDevice &paper, const QWidget &chart);

} // namespace ReportPages

} // namespace edgetrain::ui

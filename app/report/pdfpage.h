#pragma once

#include "palette.h"

#include <QColor>
#include <QList>
#include <QPainter>
#include <QRectF>
#include <QStringList>

class QImage;
class QPdfWriter;

namespace edgetrain::app {

struct Chart;

/** A page of a PDF (the session's report, a study's) being laid out top to bottom, in device
 *  pixels of the PDF (150 dpi): headings, paragraphs, tables and charts in the report's style. */
class PdfPage
{
public:
    PdfPage(QPainter &p, QRectF area) : m_p(p), m_area(area), m_y(area.top()) {}
    /** A4 at 150 dpi, 15 mm margins, the document's title, "EdgeTrain" as its creator. */
    static void setUp(QPdfWriter &writer, const QString &title);
    /** Where a page's body goes in `full` (its paint rectangle): all of it above the foot line. */
    static QRectF bodyArea(const QRect &full)
    {
        return QRectF(0, 0, full.width(), full.height() - 50);
    }
    /** The line at the foot of a page of `full` (its paint rectangle): `left`, and "N / M". */
    static void footer(QPainter &p, const QRect &full, const QString &left, int page, int pages);

    void heading(const QString &text);
    void subheading(const QString &text);
    void paragraph(const QString &text, const QColor &colour = palette::kText);
    /** Rows of cells; the first row is the header. Widths are fractions of the page width. */
    void table(const QList<QStringList> &rows, const QList<double> &widths, int maxRows = 40);
    /** Terms and their meanings: the term bold in the first `termWidth` (a fraction of the
     *  page width), the meaning wrapped beside it. */
    void definitions(const QList<QStringList> &rows, double termWidth);
    /** A chart drawn into the given rectangle, as vectors and text of the PDF. */
    void chart(const Chart &chart, QRectF target);
    void image(const QImage &img, QRectF target) { m_p.drawImage(target, img); }
    double y() const { return m_y; }
    void skip(double dy) { m_y += dy; }
    const QRectF &area() const { return m_area; }
    /** The painter it draws with: for a caption laid out in a part of the page of its own. */
    QPainter &painter() const { return m_p; }

private:
    void body(); // the body text's font and colour
    QPainter &m_p;
    QRectF m_area;
    double m_y;
};

} // namespace edgetrain::app

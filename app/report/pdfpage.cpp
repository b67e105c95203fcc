#include "pdfpage.h"

#include "chart.h"
#include "wording.h"

#include <QPageSize>
#include <QPdfWriter>

#include <algorithm>

namespace edgetrain::app {

void PdfPage::setUp(QPdfWriter &writer, const QString &title)
{
    writer.setPageSize(QPageSize(QPageSize::A4));
    writer.setResolution(150);
    writer.setPageMargins(QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
    writer.setTitle(title);
    writer.setCreator(QStringLiteral("EdgeTrain"));
}

void PdfPage::footer(QPainter &p, const QRect &full, const QString &left, int page, int pages)
{
    QFont f = p.font();
    f.setPointSizeF(8);
    f.setBold(false);
    p.setFont(f);
    p.setPen(palette::kMutedText);
    const QRectF line(0, full.height() - 30, full.width(), 30);
    p.drawText(line, Qt::AlignLeft | Qt::AlignBottom, left);
    p.drawText(line, Qt::AlignRight | Qt::AlignBottom,
               QStringLiteral("%1 / %2").arg(page).arg(pages));
}

void PdfPage::heading(const QString &text)
{
    QFont f = m_p.font();
    f.setPointSizeF(16);
    f.setBold(true);
    m_p.setFont(f);
    m_p.setPen(palette::kHeading);
    const QRectF r(m_area.left(), m_y, m_area.width(), 60);
    m_p.drawText(r, Qt::AlignLeft | Qt::AlignTop, text);
    m_y += m_p.fontMetrics().height() + 8;
    m_p.setPen(QPen(palette::kHeading, 2));
    m_p.drawLine(QPointF(m_area.left(), m_y), QPointF(m_area.right(), m_y));
    m_y += 18;
    body();
}

void PdfPage::subheading(const QString &text)
{
    m_y += 8;
    QFont f = m_p.font();
    f.setPointSizeF(11.5);
    f.setBold(true);
    m_p.setFont(f);
    m_p.setPen(palette::kHeading);
    m_p.drawText(QRectF(m_area.left(), m_y, m_area.width(), 40), Qt::AlignLeft, text);
    m_y += m_p.fontMetrics().height() + 6;
    body();
}

void PdfPage::paragraph(const QString &text, const QColor &colour)
{
    body();
    m_p.setPen(colour);
    const QRectF r =
        m_p.boundingRect(QRectF(m_area.left(), m_y, m_area.width(), 2000), Qt::TextWordWrap, text);
    // Into the full width: wrapped again into the tight rectangle a line can break otherwise and
    // fall outside it (drawText clips to its rectangle).
    m_p.drawText(QRectF(m_area.left(), m_y, m_area.width(), r.height()), Qt::TextWordWrap, text);
    m_y += r.height() + 10;
}

void PdfPage::table(const QList<QStringList> &rows, const QList<double> &widths, int maxRows)
{
    body();
    QFont f = m_p.font();
    f.setPointSizeF(8.5);
    m_p.setFont(f);
    const double h = m_p.fontMetrics().height() + 8;
    // Tints of the palette's text colours behind the rows: the text on them stays >= 4.5:1.
    QColor headerFill = palette::kHeading, stripe = palette::kMutedText, rule = palette::kMutedText;
    headerFill.setAlphaF(0.12);
    stripe.setAlphaF(0.06);
    rule.setAlphaF(0.45);
    for (int r = 0; r < rows.size() && r <= maxRows; ++r) {
        double x = m_area.left();
        if (r == 0)
            m_p.fillRect(QRectF(x, m_y, m_area.width(), h), headerFill);
        else if (r % 2 == 0)
            m_p.fillRect(QRectF(x, m_y, m_area.width(), h), stripe);
        QFont cf = f;
        cf.setBold(r == 0);
        m_p.setFont(cf);
        m_p.setPen(palette::kText);
        for (int c = 0; c < rows[r].size() && c < widths.size(); ++c) {
            const double w = widths[c] * m_area.width();
            // One row left over takes the place a "1 more row" line would: it is shown instead.
            const qint64 left = rows.size() - maxRows;
            const QString text =
                r == maxRows && left > 1
                    ? (c == 0 ? QStringLiteral("… %1").arg(wording::counted(
                                    left, QStringLiteral("more row"), QStringLiteral("more rows")))
                              : QString())
                    : rows[r][c];
            m_p.drawText(QRectF(x + 6, m_y, w - 12, h), Qt::AlignVCenter | Qt::AlignLeft,
                         m_p.fontMetrics().elidedText(text, Qt::ElideRight, int(w - 12)));
            x += w;
        }
        m_y += h;
    }
    m_p.setPen(QPen(rule, 1));
    m_p.drawLine(QPointF(m_area.left(), m_y), QPointF(m_area.right(), m_y));
    m_y += 14;
    body();
}

void PdfPage::definitions(const QList<QStringList> &rows, double termWidth)
{
    body();
    const double termW = termWidth * m_area.width(), gap = 12;
    const QRectF wide(0, 0, m_area.width() - termW - gap, 2000);
    for (const QStringList &row : rows) {
        if (row.size() < 2)
            continue;
        QFont f = m_p.font();
        f.setBold(true);
        m_p.setFont(f);
        m_p.setPen(palette::kHeading);
        const QRectF term =
            m_p.boundingRect(QRectF(m_area.left(), m_y, termW, 2000), Qt::TextWordWrap, row[0]);
        m_p.drawText(QRectF(term.left(), term.top(), termW, term.height()), Qt::TextWordWrap,
                     row[0]);
        body();
        const QRectF text = m_p.boundingRect(wide.translated(m_area.left() + termW + gap, m_y),
                                             Qt::TextWordWrap, row[1]);
        m_p.drawText(QRectF(text.left(), text.top(), wide.width(), text.height()), Qt::TextWordWrap,
                     row[1]);
        m_y += std::max(term.height(), text.height()) + 8;
    }
    m_y += 6;
}

void PdfPage::chart(const Chart &chart, QRectF target)
{
    chart.paint(m_p, target);
}

void PdfPage::body()
{
    QFont f = m_p.font();
    f.setPointSizeF(9.5);
    f.setBold(false);
    m_p.setFont(f);
    m_p.setPen(palette::kText);
}

} // namespace edgetrain::app

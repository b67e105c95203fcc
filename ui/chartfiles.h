#pragma once

#include <QImage>
#include <QRectF>
#include <QSizeF>
#include <QString>
#include <QStringList>

class QPainter;
class QWidget;

namespace edgetrain::ui {

/** A chart widget as files: DIR/NAME.png (at twice its size) and DIR/NAME.svg. */
class ChartFiles
{
public:
    /** Writes both and appends their paths to `written`; false with `error` set (naming the
     *  file) if one cannot be written. The widget must be laid out (shown off screen). */
    static bool write(QWidget *chart, const QString &dir, const QString &name, QStringList *written,
                      QString *error);
    /** The widget as an image for a page of a PDF `target` big (in the PDF's pixels), at
     *  twice the target's resolution. */
    static QImage image(QWidget *chart, QSizeF target);
    /** The widget as an SVG document (its own pixels as the view box). */
    static QByteArray svg(QWidget *chart, const QString &title);
    /**
     * Draws the chart as vectors into `target` of `painter` (a PDF's page): the widget is resized
     * to `target` / `scale` and laid out, written as SVG and that drawn with QSvgRenderer, so its
     * text lands on paper `scale` times the widget's size. Painted straight into the PDF's scaled
     * painter, a Qt Charts legend loses its layout (the entries land on one another, their
     * markers vanish); through the SVG it keeps the layout it has on screen.
     */
    static void paint(QWidget *chart, QPainter &painter, const QRectF &target, double scale);
};

} // namespace edgetrain::ui

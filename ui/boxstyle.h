#pragma once

#include "app/report/palette.h"

#include <QList>
#include <QPen>
#include <QPixmap>
#include <QString>

class QPainter;

namespace edgetrain::ui {

/**
 * How boxes are drawn over frames everywhere in the window: one colour, line style and name per
 * source (app::palette), and the legend that names them, so the Capture, Verify, Dataset and
 * Report views never disagree about who drew which box.
 */
class BoxStyle
{
public:
    using Source = app::palette::Source;

    /** One entry of a legend: a source's line and a text (its palette name when empty). */
    struct Key
    {
        Source source;
        QString text;
    };

    /** The pen for `source`'s boxes on a frame, `width` pixels wide. */
    static QPen pen(Source source, double width = 2.0);

    /** The hatch an ignore region is filled with (its outline is pen(Ignore)). */
    static QBrush ignoreBrush();

    /**
     * Draws a legend at `topLeft` over a frame: a dark strip with each key's line sample and
     * text in white, then `trailer` (the frame's number, a state) in `trailerColour`.
     * Uses the painter's font. Returns the strip's rectangle.
     */
    static QRectF drawLegend(QPainter &p, const QPointF &topLeft, const QList<Key> &keys,
                             const QString &trailer = QString(),
                             const QColor &trailerColour = Qt::white);

    /** The width drawLegend() takes for these keys in `font`. */
    static double legendWidth(const QFont &font, const QList<Key> &keys,
                              const QString &trailer = QString());

    /** The legend alone as a picture in `font`, for a page that shows frames in a list. */
    static QPixmap legendPixmap(const QList<Key> &keys, const QFont &font);
};

} // namespace edgetrain::ui

#pragma once

#include <QImage>
#include <QSizeF>
#include <QString>
#include <QStringList>

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
     *  twice the target's resolution: painted straight into the PDF's scaled painter, a Qt
     *  Charts legend loses its layout (the entries land on one another, their markers vanish). */
    static QImage image(QWidget *chart, QSizeF target);
};

} // namespace edgetrain::ui

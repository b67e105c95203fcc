#pragma once

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
};

} // namespace edgetrain::ui

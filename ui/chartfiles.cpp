#include "chartfiles.h"

#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <QWidget>

namespace edgetrain::ui {

bool ChartFiles::write(QWidget *w, const QString &dir, const QString &name, QStringList *written,
                       QString *error)
{
    const QString png = dir + QLatin1Char('/') + name + QStringLiteral(".png");
    QImage image(w->size() * 2, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(2);
    image.fill(Qt::white);
    {
        QPainter p(&image);
        w->render(&p);
    }
    if (!image.save(png)) {
        *error = QStringLiteral("cannot write '%1'").arg(png);
        return false;
    }
    const QString svg = dir + QLatin1Char('/') + name + QStringLiteral(".svg");
    QSvgGenerator generator;
    generator.setFileName(svg);
    generator.setSize(w->size());
    generator.setViewBox(QRect(QPoint(), w->size()));
    generator.setTitle(name);
    QPainter p;
    if (!p.begin(&generator)) {
        *error = QStringLiteral("cannot write '%1'").arg(svg);
        return false;
    }
    w->render(&p);
    p.end();
    written->append(png);
    written->append(svg);
    return true;
}

} // namespace edgetrain::ui

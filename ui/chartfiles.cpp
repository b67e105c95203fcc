#include "chartfiles.h"

#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <QWidget>

#include <algorithm>

namespace edgetrain::ui {

QImage ChartFiles::image(QWidget *w, QSizeF target)
{
    const qreal ratio = 2 * std::max(1.0, target.width() / w->width());
    QImage image((QSizeF(w->size()) * ratio).toSize(), QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(ratio);
    image.fill(Qt::white);
    {
        QPainter p(&image);
        w->render(&p);
    }
    return image;
}

bool ChartFiles::write(QWidget *w, const QString &dir, const QString &name, QStringList *written,
                       QString *error)
{
    const QString png = dir + QLatin1Char('/') + name + QStringLiteral(".png");
    const QImage image = ChartFiles::image(w, w->size());
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

#include "chartfiles.h"

#include <QBuffer>
#include <QCoreApplication>
#include <QEvent>
#include <QFile>
#include <QImage>
#include <QPainter>
#include <QSvgGenerator>
#include <QSvgRenderer>
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

QByteArray ChartFiles::svg(QWidget *w, const QString &title)
{
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QSvgGenerator generator;
    generator.setOutputDevice(&buffer);
    generator.setSize(w->size());
    generator.setViewBox(QRect(QPoint(), w->size()));
    // The widget's fonts are sized for its screen: the same resolution keeps the text at the
    // size the chart was laid out for.
    generator.setResolution(w->logicalDpiY());
    generator.setTitle(title);
    QPainter p(&generator);
    w->render(&p);
    p.end();
    return buffer.data();
}

void ChartFiles::paint(QWidget *w, QPainter &painter, const QRectF &target, double scale)
{
    w->resize((target.size() / scale).toSize());
    QCoreApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    QSvgRenderer renderer(svg(w, QString()));
    renderer.setAspectRatioMode(Qt::KeepAspectRatio);
    painter.save();
    renderer.render(&painter, target);
    painter.restore();
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
    const QString path = dir + QLatin1Char('/') + name + QStringLiteral(".svg");
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(svg(w, name)) < 0 || !file.flush()) {
        *error = QStringLiteral("cannot write '%1'").arg(path);
        return false;
    }
    written->append(png);
    written->append(path);
    return true;
}

} // namespace edgetrain::ui

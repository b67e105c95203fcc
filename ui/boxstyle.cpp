#include "boxstyle.h"

#include <QFontMetricsF>
#include <QPainter>

namespace edgetrain::ui {

namespace {
constexpr double kSample = 20; // a legend's line sample, pixels
constexpr double kGap = 4;
constexpr double kSpacing = 10; // between two keys
} // namespace

QPen BoxStyle::pen(Source source, double width)
{
    QPen p(app::palette::onFrame(source), width, app::palette::lineStyle(source));
    p.setJoinStyle(Qt::MiterJoin);
    return p;
}

QBrush BoxStyle::ignoreBrush()
{
    QColor c = app::palette::onFrame(Source::Ignore);
    c.setAlpha(150);
    return QBrush(c, Qt::BDiagPattern);
}

double BoxStyle::legendWidth(const QFont &font, const QList<Key> &keys, const QString &trailer)
{
    const QFontMetricsF fm(font);
    double w = kGap;
    for (const Key &k : keys)
        w += kSample + kGap +
             fm.horizontalAdvance(k.text.isEmpty() ? app::palette::name(k.source) : k.text) +
             kSpacing;
    if (!trailer.isEmpty())
        w += fm.horizontalAdvance(trailer) + kGap;
    return w;
}

QRectF BoxStyle::drawLegend(QPainter &p, const QPointF &topLeft, const QList<Key> &keys,
                            const QString &trailer, const QColor &trailerColour)
{
    const QFontMetricsF fm(p.font());
    const double h = fm.height() + 6;
    QStringList texts;
    for (const Key &k : keys)
        texts.append(k.text.isEmpty() ? app::palette::name(k.source) : k.text);
    const QRectF strip(topLeft, QSizeF(legendWidth(p.font(), keys, trailer), h));
    p.save();
    p.setPen(Qt::NoPen);
    p.setBrush(QColor(0, 0, 0, 170));
    p.drawRect(strip);
    p.setBrush(Qt::NoBrush);
    double x = strip.left() + kGap;
    const double mid = strip.center().y();
    const double baseline = mid + (fm.ascent() - fm.descent()) / 2;
    for (qsizetype i = 0; i < keys.size(); ++i) {
        p.setPen(pen(keys[i].source, 2.0));
        p.drawLine(QPointF(x, mid), QPointF(x + kSample, mid));
        x += kSample + kGap;
        p.setPen(Qt::white);
        p.drawText(QPointF(x, baseline), texts[i]);
        x += fm.horizontalAdvance(texts[i]) + kSpacing;
    }
    if (!trailer.isEmpty()) {
        p.setPen(trailerColour);
        p.drawText(QPointF(x, baseline), trailer);
    }
    p.restore();
    return strip;
}

QPixmap BoxStyle::legendPixmap(const QList<Key> &keys, const QFont &font)
{
    // Measured on a scratch image first: the strip's width depends on the texts.
    QImage scratch(1, 1, QImage::Format_ARGB32_Premultiplied);
    QRectF strip;
    {
        QPainter p(&scratch);
        p.setFont(font);
        strip = drawLegend(p, QPointF(0, 0), keys);
    }
    QImage image(strip.size().toSize(), QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    p.setFont(font);
    drawLegend(p, QPointF(0, 0), keys);
    p.end();
    return QPixmap::fromImage(image);
}

} // namespace edgetrain::ui

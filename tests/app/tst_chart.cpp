// The reports' charts drawn with QPainter alone (app/report/chart.h): round axes, and what the
// picture shows where (lines, stacked bars, a log axis), read back from the pixels.
#include "app/report/chart.h"

#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace edgetrain;

namespace {

constexpr int kW = 900, kH = 480;

QImage draw(const app::Chart &chart)
{
    QImage image(kW, kH, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::white);
    QPainter p(&image);
    chart.paint(p, QRectF(0, 0, kW, kH));
    return image;
}

bool like(QColor a, QColor b)
{
    return std::abs(a.red() - b.red()) < 24 && std::abs(a.green() - b.green()) < 24 &&
           std::abs(a.blue() - b.blue()) < 24;
}

/** The pixels of `colour`: how many, and the rectangle around them. */
struct Found
{
    int count = 0;
    QRect box;
};

Found find(const QImage &img, QColor colour)
{
    Found f;
    for (int y = 0; y < img.height(); ++y)
        for (int x = 0; x < img.width(); ++x)
            if (like(img.pixelColor(x, y), colour)) {
                ++f.count;
                f.box |= QRect(x, y, 1, 1);
            }
    return f;
}

} // namespace

class TestChart : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundOut_data();
    void roundOut();
    void lineRisesLeftToRight();
    void stackedBarsByValue();
    void logAxisPlacesDecades();
    void files();
};

void TestChart::roundOut_data()
{
    QTest::addColumn<double>("top");
    QTest::addColumn<double>("max");
    QTest::addColumn<double>("step");
    QTest::newRow("seconds") << 0.077 << 0.08 << 0.02;
    QTest::newRow("percent") << 88.0 << 100.0 << 20.0;
    QTest::newRow("KiB") << 2139.0 << 2500.0 << 500.0;
}

void TestChart::roundOut()
{
    QFETCH(double, top);
    QFETCH(double, max);
    QFETCH(double, step);
    app::ChartAxis axis;
    axis.min = 0;
    axis.max = top;
    axis.roundOut();
    QCOMPARE(axis.min, 0.0);
    QVERIFY2(std::abs(axis.max - max) < 1e-9, qPrintable(QString::number(axis.max)));
    QVERIFY2(std::abs(axis.step - step) < 1e-9, qPrintable(QString::number(axis.step)));
}

void TestChart::lineRisesLeftToRight()
{
    app::Chart chart;
    chart.title = QStringLiteral("rising");
    chart.x.min = 0;
    chart.x.max = 10;
    chart.y.min = 0;
    chart.y.max = 10;
    app::ChartSeries s;
    s.colour = app::Chart::colour(1);
    s.points = {{0, 0}, {10, 10}};
    chart.series.push_back(s);
    const QImage img = draw(chart);
    const Found line = find(img, s.colour);
    QVERIFY(line.count > 500);
    // from the plot's lower left corner to its upper right one: most of the picture
    QVERIFY2(line.box.width() > kW * 0.7 && line.box.height() > kH * 0.6,
             qPrintable(QStringLiteral("%1x%2").arg(line.box.width()).arg(line.box.height())));
    // rising: the leftmost red pixel is low, the rightmost high
    int leftY = -1, rightY = -1;
    for (int y = 0; y < kH; ++y) {
        if (like(img.pixelColor(line.box.left(), y), s.colour))
            leftY = y;
        if (rightY < 0 && like(img.pixelColor(line.box.right(), y), s.colour))
            rightY = y;
    }
    QVERIFY(leftY > line.box.center().y() && rightY < line.box.center().y());
}

void TestChart::stackedBarsByValue()
{
    app::Chart chart;
    chart.x.categories = {QStringLiteral("time"), QStringLiteral("power")};
    chart.y.min = 0;
    chart.y.max = 4;
    chart.y.step = 1;
    chart.bars = {{QStringLiteral("best"), app::Chart::colour(2), {2, 2}},
                  {QStringLiteral("second"), app::Chart::colour(4), {1, 1}}};
    const QImage img = draw(chart);
    const Found best = find(img, app::Chart::colour(2));
    const Found second = find(img, app::Chart::colour(4));
    // twice the value, twice the area (the legend's boxes are alike, and small)
    const double ratio = double(best.count) / second.count;
    QVERIFY2(ratio > 1.8 && ratio < 2.2, qPrintable(QString::number(ratio)));
    QVERIFY(second.box.top() < best.box.top()); // stacked on top
}

void TestChart::logAxisPlacesDecades()
{
    app::Chart chart;
    chart.x.scale = chart.y.scale = app::ChartAxis::Scale::Log;
    chart.x.min = chart.y.min = 0.01;
    chart.x.max = chart.y.max = 1;
    const QColor colours[] = {app::Chart::colour(0), app::Chart::colour(1), app::Chart::colour(2)};
    const double at[] = {0.01, 0.1, 1};
    for (int i = 0; i < 3; ++i) {
        app::ChartSeries s;
        s.colour = colours[i];
        s.line = false;
        s.dot = 10;
        s.points = {{at[i], at[i]}};
        chart.series.push_back(s);
    }
    const QImage img = draw(chart);
    const QPoint low = find(img, colours[0]).box.center();
    const QPoint mid = find(img, colours[1]).box.center();
    const QPoint high = find(img, colours[2]).box.center();
    // 0.1 halfway between 0.01 and 1, along both axes
    QVERIFY2(std::abs(mid.x() - (low.x() + high.x()) / 2) <= 2,
             qPrintable(QString::number(mid.x())));
    QVERIFY2(std::abs(mid.y() - (low.y() + high.y()) / 2) <= 2,
             qPrintable(QString::number(mid.y())));
    QVERIFY(high.x() - low.x() > kW / 2 && low.y() - high.y() > kH / 2);
}

void TestChart::files()
{
    QTemporaryDir dir;
    app::Chart chart;
    chart.title = QStringLiteral("files");
    QStringList written;
    QString error;
    QVERIFY2(chart.writeFiles(dir.path(), QStringLiteral("c"), QSize(kW, kH), &written, &error),
             qPrintable(error));
    QVERIFY(written.contains(dir.filePath(QStringLiteral("c.png"))));
    QCOMPARE(QImage(dir.filePath(QStringLiteral("c.png"))).size(), QSize(2 * kW, 2 * kH));
    QVERIFY(!chart.writeFiles(dir.filePath(QStringLiteral("missing")), QStringLiteral("c"),
                              QSize(kW, kH), &written, &error));
    QVERIFY2(error.contains(QLatin1String("missing/c.png")), qPrintable(error));
}

QTEST_MAIN(TestChart)
#include "tst_chart.moc"

// The one palette of the window and the reports (app/report/palette.h): text readable on white,
// every source told apart by colour and by line style, names the same everywhere.
#include "app/report/palette.h"

#include <QTest>

#include <set>

using namespace edgetrain::app;

class TestPalette : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void contrastOfKnownPairs()
    {
        QCOMPARE(qRound(palette::contrast(Qt::black, Qt::white) * 100), 2100);
        QCOMPARE(palette::contrast(Qt::white, Qt::white), 1.0);
        // WCAG's worked value: #767676 is the lightest grey that passes 4.5:1 on white.
        QVERIFY(palette::contrast(QColor(0x76, 0x76, 0x76), Qt::white) >= 4.5);
        QVERIFY(palette::contrast(QColor(0x77, 0x77, 0x77), Qt::white) < 4.5);
    }

    void textPassesAaOnWhite()
    {
        for (const QColor &c : {palette::kText, palette::kMutedText, palette::kHeading,
                                palette::kError, palette::kGood, palette::kWarning})
            QVERIFY2(palette::contrast(c, Qt::white) >= 4.5, qPrintable(c.name()));
    }

    void sourcesDifferInColourAndName()
    {
        using S = palette::Source;
        const S all[] = {S::Teacher, S::Motion, S::Tracker, S::Student, S::Truth, S::Ignore};
        std::set<QRgb> light, frame;
        std::set<QString> names;
        for (S s : all) {
            light.insert(palette::onLight(s).rgb());
            frame.insert(palette::onFrame(s).rgb());
            names.insert(palette::name(s));
            QCOMPARE(palette::sourceOf(palette::name(s)), s);
        }
        QCOMPARE(light.size(), std::size(all));
        QCOMPARE(frame.size(), std::size(all));
        QCOMPARE(names.size(), std::size(all));
        QCOMPARE(palette::sourceOf(QStringLiteral("student r2")), S::Student);
        // The second cue: the three detectors a frame shows together differ in line style too.
        QVERIFY(palette::lineStyle(S::Teacher) != palette::lineStyle(S::Motion));
        QVERIFY(palette::lineStyle(S::Teacher) != palette::lineStyle(S::Student));
        QVERIFY(palette::lineStyle(S::Motion) != palette::lineStyle(S::Tracker));
    }

    void seriesRepeatWithAnotherStyle()
    {
        QCOMPARE(palette::series(0), palette::series(7));
        QVERIFY(palette::seriesStyle(0) != palette::seriesStyle(7));
        QVERIFY(palette::series(0) != palette::series(1));
        QCOMPARE(palette::series(-1), palette::series(6));
        // Dashed and dotted mean "sent" and "dropped out" in the device charts: never a device's.
        for (int i = 0; i < 30; ++i)
            QVERIFY(palette::seriesStyle(i) != Qt::DashLine &&
                    palette::seriesStyle(i) != Qt::DotLine);
    }
};

QTEST_APPLESS_MAIN(TestPalette)
#include "tst_palette.moc"

// Words a customer reads (app/report/wording.h): plurals and English ordinals.
#include "app/report/wording.h"

#include <QTest>

using namespace edgetrain::app;

class TestWording : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void plurals()
    {
        QCOMPARE(wording::counted(0, QStringLiteral("node"), QStringLiteral("nodes")),
                 QStringLiteral("0 nodes"));
        QCOMPARE(wording::counted(1, QStringLiteral("node"), QStringLiteral("nodes")),
                 QStringLiteral("1 node"));
        QCOMPARE(wording::counted(3, QStringLiteral("box"), QStringLiteral("boxes")),
                 QStringLiteral("3 boxes"));
    }

    void ordinals()
    {
        const std::pair<int, const char *> cases[] = {
            {1, "1st"},     {2, "2nd"},     {3, "3rd"},     {4, "4th"},   {11, "11th"},
            {12, "12th"},   {13, "13th"},   {21, "21st"},   {22, "22nd"}, {101, "101st"},
            {111, "111th"}, {112, "112th"}, {123, "123rd"}, {0, "0th"}};
        for (const auto &[n, text] : cases)
            QCOMPARE(wording::ordinal(n), QLatin1String(text));
    }

    void everyNth()
    {
        QCOMPARE(wording::everyNth(1, QStringLiteral("frame")), QStringLiteral("every frame"));
        QCOMPARE(wording::everyNth(2, QStringLiteral("frame")), QStringLiteral("every 2nd frame"));
        QCOMPARE(wording::everyNth(3, QStringLiteral("frame")), QStringLiteral("every 3rd frame"));
    }
};

QTEST_APPLESS_MAIN(TestWording)
#include "tst_wording.moc"

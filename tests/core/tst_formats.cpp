#include <QTest>
class TestFormats : public QObject { Q_OBJECT };
QTEST_APPLESS_MAIN(TestFormats)
#include "tst_formats.moc"

#include <QTest>
class TestFmnist : public QObject { Q_OBJECT };
QTEST_APPLESS_MAIN(TestFmnist)
#include "tst_fashionmnist.moc"

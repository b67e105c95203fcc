// Why two runs of one session can differ (app/session/repeatability.h): the shares that moved,
// the groups formed, the weights named by their SHA-256.
#include "app/session/repeatability.h"

#include <QCryptographicHash>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace edgetrain;

namespace {

net::ClusterEpoch epoch(int n, std::vector<double> shares)
{
    net::ClusterEpoch e;
    e.epoch = n;
    e.shares = std::move(shares);
    return e;
}

} // namespace

class TestRepeatability : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void countsMovesAndNamesTheWeights()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QFile weights(dir.filePath(QStringLiteral("detector.safetensors")));
        QVERIFY(weights.open(QIODevice::WriteOnly));
        weights.write("not really weights");
        weights.close();

        app::Session s;
        s.dir = dir.path();
        s.training.nodes = {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")};
        s.training.weights = QStringLiteral("detector.safetensors");
        s.training.epochs = {epoch(1, {0.3, 0.3, 0.4}), epoch(2, {0.3, 0.3, 0.4}),
                             epoch(3, {0.35, 0.3, 0.35}), epoch(4, {0.3, 0.3, 0.4})};
        net::ClusterEvent regroup;
        regroup.kind = net::ClusterEventKind::Regrouped;
        net::ClusterEvent lost;
        lost.kind = net::ClusterEventKind::Lost;
        s.training.events = {regroup, lost, regroup};

        const app::RunRepeatability r = app::runRepeatability(s);
        QCOMPARE(r.nodes, 3);
        QCOMPARE(r.shareChanges, 2);
        QCOMPARE(r.regroups, 2);
        const QByteArray expected =
            QCryptographicHash::hash("not really weights", QCryptographicHash::Sha256).toHex();
        QCOMPARE(r.weightsSha256, QString::fromLatin1(expected));

        const QString text = app::repeatabilityText(r);
        QVERIFY2(text.contains(QLatin1String("the shares moved in 2 epochs and the devices "
                                             "formed a new group 2 times")),
                 qPrintable(text));
        QVERIFY(text.contains(QString::fromLatin1(expected.left(16))));
    }

    void wordsForOneAndNone()
    {
        app::RunRepeatability r;
        r.nodes = 2;
        r.shareChanges = 1;
        r.regroups = 1;
        QVERIFY(app::repeatabilityText(r).contains(
            QLatin1String("moved in 1 epoch and the devices formed a new group once")));
        r.shareChanges = r.regroups = 0;
        QVERIFY(app::repeatabilityText(r).contains(QLatin1String("did not record them")));
        r.sharesRecorded = true;
        QVERIFY(app::repeatabilityText(r).contains(QLatin1String("they never moved")));
        QVERIFY(!app::repeatabilityText(r).contains(QLatin1String("SHA-256 match")));
        r.nodes = 1; // one device: nothing was split
        QVERIFY(app::repeatabilityText(r).isEmpty());
    }
};

QTEST_APPLESS_MAIN(TestRepeatability)
#include "tst_repeatability.moc"

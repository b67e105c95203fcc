// Keep-best and patience (net::BestWeightsKeeper): the epoch with the lowest validation loss is
// kept, its model put together from a node's chunks (or the parameter server's, at once) and put
// in place of the last epoch's; the patience's epochs without a new best end the run.

#include "net/protocol/messages/workermessages.h"
#include "net/training/coordinator/bestweightskeeper.h"

#include <QTest>

#include <cstring>

using namespace edgetrain;
using net::BestWeightsKeeper;

namespace {

QByteArray bytesOf(const std::vector<float> &values)
{
    return QByteArray(reinterpret_cast<const char *>(values.data()),
                      qsizetype(values.size() * sizeof(float)));
}

net::WeightsChunk chunk(int epoch, int index, int total, const QByteArray &data)
{
    net::WeightsChunk c;
    c.epoch = epoch;
    c.index = index;
    c.total = total;
    c.data = data;
    return c;
}

} // namespace

class TestBestWeightsKeeper : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void offKeepsNothing();
    void theLowestLossIsKept();
    void aNodesChunksMakeTheModel();
    void aLateChunkOfAnOlderBestIsDropped();
    void aModelThatDoesNotFitIsNotApplied();
    void patienceCountsEpochsWithoutANewBest();
};

void TestBestWeightsKeeper::offKeepsNothing()
{
    BestWeightsKeeper keeper;
    QVERIFY(!keeper.improves(100, 0.1));
    std::vector<float> weights{1, 2};
    QCOMPARE(keeper.apply(weights), 0);
    QCOMPARE(weights, (std::vector<float>{1, 2}));
    QVERIFY(!keeper.patienceRanOut(50));
}

void TestBestWeightsKeeper::theLowestLossIsKept()
{
    BestWeightsKeeper keeper;
    keeper.setKeep(true);
    QVERIFY(!keeper.improves(0, 0.1)); // nothing evaluated
    QVERIFY(keeper.improves(100, 0.9));
    keeper.keep(1, 0.9, bytesOf({1, 1})); // the parameter server's: here at once
    QVERIFY(!keeper.improves(100, 0.9));  // not lower
    QVERIFY(!keeper.improves(100, 1.2));
    QVERIFY(keeper.improves(100, 0.5));
    keeper.keep(3, 0.5, bytesOf({3, 3}));
    QCOMPARE(keeper.bestEpoch(), 3);
    QCOMPARE(keeper.bestLoss(), 0.5);
    std::vector<float> last{7, 7};
    QCOMPARE(keeper.apply(last), 3);
    QCOMPARE(last, (std::vector<float>{3, 3}));
}

void TestBestWeightsKeeper::aNodesChunksMakeTheModel()
{
    BestWeightsKeeper keeper;
    keeper.setKeep(true);
    keeper.keep(2, 0.4); // a node holds it: ask one
    net::TrainingReply answer;
    keeper.askForWeights(answer);
    QVERIFY(answer.send_weights == std::int64_t(2));
    const QByteArray model = bytesOf({0.5f, 1.5f, 2.5f, 3.5f});
    std::vector<float> last(4, 9.0f);
    keeper.received(chunk(2, 0, 2, model.left(8)));
    QCOMPARE(keeper.apply(last), 0); // not whole yet: the last epoch's stay
    QCOMPARE(last, std::vector<float>(4, 9.0f));
    keeper.received(chunk(2, 1, 2, model.mid(8)));
    QCOMPARE(keeper.apply(last), 2);
    QCOMPARE(last, (std::vector<float>{0.5f, 1.5f, 2.5f, 3.5f}));
    // Sent again (a new request): the first chunk starts over.
    keeper.received(chunk(2, 0, 1, bytesOf({6, 6, 6, 6})));
    QCOMPARE(keeper.apply(last), 2);
    QCOMPARE(last, (std::vector<float>{6, 6, 6, 6}));
}

void TestBestWeightsKeeper::aLateChunkOfAnOlderBestIsDropped()
{
    BestWeightsKeeper keeper;
    keeper.setKeep(true);
    keeper.keep(1, 0.9);
    keeper.keep(2, 0.8); // a better one before epoch 1's model came
    keeper.received(chunk(1, 0, 1, bytesOf({1, 1})));
    std::vector<float> last{5, 5};
    QCOMPARE(keeper.apply(last), 0);
    keeper.received(chunk(2, 0, 1, bytesOf({2, 2})));
    QCOMPARE(keeper.apply(last), 2);
    QCOMPARE(last, (std::vector<float>{2, 2}));
}

void TestBestWeightsKeeper::aModelThatDoesNotFitIsNotApplied()
{
    BestWeightsKeeper keeper;
    keeper.setKeep(true);
    keeper.keep(1, 0.3, bytesOf({1, 2, 3}));
    std::vector<float> last{5, 5};
    QCOMPARE(keeper.apply(last), 0);
    QCOMPARE(last, (std::vector<float>{5, 5}));
    std::vector<float> none;
    QCOMPARE(keeper.apply(none), 0); // no final weights: nothing to replace
}

void TestBestWeightsKeeper::patienceCountsEpochsWithoutANewBest()
{
    BestWeightsKeeper keeper;
    keeper.setKeep(true);
    keeper.setPatience(2);
    QVERIFY(!keeper.patienceRanOut(5)); // no best yet
    keeper.keep(1, 0.9, bytesOf({1}));
    QVERIFY(!keeper.patienceRanOut(1));
    QVERIFY(!keeper.patienceRanOut(2));
    QVERIFY(keeper.patienceRanOut(3));
    keeper.keep(3, 0.7, bytesOf({3}));
    QVERIFY(!keeper.patienceRanOut(4));
    QVERIFY(keeper.patienceRanOut(5));
    keeper.setPatience(0);
    QVERIFY(!keeper.patienceRanOut(50));
}

QTEST_GUILESS_MAIN(TestBestWeightsKeeper)
#include "tst_bestweightskeeper.moc"

// The epoch's sums a sync or local-SGD step carries behind its gradients: the trailer's round
// trip, and what the group reads after the ranks' trailers are summed (over a real ring
// allreduce too, the ranks as threads).
#include "net/training/collectives.h"
#include "net/training/worker/epochtally.h"

#include <QTest>
#include <gloo/rendezvous/hash_store.h>

#include <string>
#include <thread>
#include <vector>

using edgetrain::net::worker::EpochTally;
namespace core = edgetrain::core;
namespace net = edgetrain::net;

Q_DECLARE_METATYPE(std::vector<bool>)

class TestEpochTally : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void trailerRoundTrip_data();
    void trailerRoundTrip();
    void packLeavesTheGradientsAlone();
    void summedTrailersAreTheGroupsTally_data();
    void summedTrailersAreTheGroupsTally();
    void ringAllreduceCarriesTheTrailer();
    void stepResultCountsItsSamples();
    void emptyTallyHasNoMeans();
};

void TestEpochTally::trailerRoundTrip_data()
{
    QTest::addColumn<double>("lossSum");
    QTest::addColumn<double>("correct");
    QTest::addColumn<double>("seen");
    QTest::addColumn<double>("targets");
    QTest::addColumn<bool>("stop");
    QTest::newRow("zero, going on") << 0.0 << 0.0 << 0.0 << 0.0 << false;
    QTest::newRow("a batch, stopping") << 37.25 << 51.0 << 64.0 << 64.0 << true;
    // A detector: more targets (objects) than samples.
    QTest::newRow("detector") << 812.5 << 310.0 << 96.0 << 402.0 << false;
}

void TestEpochTally::trailerRoundTrip()
{
    QFETCH(double, lossSum);
    QFETCH(double, correct);
    QFETCH(double, seen);
    QFETCH(double, targets);
    QFETCH(bool, stop);
    const EpochTally tally{lossSum, correct, seen, targets};
    float trailer[EpochTally::kTrailerFloats];
    tally.packTrailer(trailer, stop);
    const EpochTally::Trailer read = EpochTally::unpackTrailer(trailer);
    QCOMPARE(read.tally, tally); // values exact in float
    QCOMPARE(read.stop, stop);

    float sums[EpochTally::kFloats];
    tally.pack(sums);
    QCOMPARE(EpochTally::unpack(sums), tally);
}

void TestEpochTally::packLeavesTheGradientsAlone()
{
    // The trailer goes behind g gradients in one buffer: writing it touches nothing before it
    // and nothing after its kTrailerFloats floats.
    constexpr std::size_t g = 7;
    std::vector<float> buffer(g + EpochTally::kTrailerFloats + 1, -3.0f);
    EpochTally{1.0, 2.0, 3.0, 4.0}.packTrailer(buffer.data() + g, true);
    for (std::size_t i = 0; i < g; ++i)
        QCOMPARE(buffer[i], -3.0f);
    QCOMPARE(buffer.back(), -3.0f);
    QCOMPARE(buffer[g], 1.0f);
    QCOMPARE(buffer[g + EpochTally::kFloats], 1.0f);
}

void TestEpochTally::summedTrailersAreTheGroupsTally_data()
{
    QTest::addColumn<std::vector<bool>>("votes");
    QTest::newRow("one rank, going on") << std::vector<bool>{false};
    QTest::newRow("one rank, stopping") << std::vector<bool>{true};
    QTest::newRow("three ranks, none stops") << std::vector<bool>{false, false, false};
    QTest::newRow("three ranks, the last stops") << std::vector<bool>{false, false, true};
    QTest::newRow("four ranks, two stop") << std::vector<bool>{true, false, true, false};
}

void TestEpochTally::summedTrailersAreTheGroupsTally()
{
    // allreduceSum adds the ranks' buffers element by element: the group reads the sum of the
    // tallies, and stops if any rank voted to (a rank with no samples votes too).
    QFETCH(std::vector<bool>, votes);
    float summed[EpochTally::kTrailerFloats] = {};
    EpochTally expected;
    bool anyStop = false;
    for (std::size_t rank = 0; rank < votes.size(); ++rank) {
        const EpochTally own = rank == 1
                                   ? EpochTally{} // a rank whose part was empty
                                   : EpochTally{2.5 * double(rank + 1), double(rank + 3),
                                                double(8 * (rank + 1)), double(8 * (rank + 1))};
        float trailer[EpochTally::kTrailerFloats];
        own.packTrailer(trailer, votes[rank]);
        for (std::size_t i = 0; i < EpochTally::kTrailerFloats; ++i)
            summed[i] += trailer[i];
        expected += own;
        anyStop = anyStop || votes[rank];
    }
    const EpochTally::Trailer group = EpochTally::unpackTrailer(summed);
    QCOMPARE(group.tally, expected);
    QCOMPARE(group.stop, anyStop);
}

void TestEpochTally::ringAllreduceCarriesTheTrailer()
{
    // As SyncMode::step does it: gradients then the trailer in one buffer, one ring allreduce.
    constexpr int size = 3;
    constexpr std::size_t g = 1000;
    gloo::rendezvous::HashStore store;
    std::vector<std::vector<float>> buffers(size);
    std::vector<std::string> errors(size);
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < size; ++rank)
        ranks.emplace_back([&, rank] {
            try {
                net::GroupOptions o;
                o.rank = rank;
                o.size = size;
                net::CollectiveGroup group(store, o);
                auto &buffer = buffers[std::size_t(rank)];
                buffer.assign(g + EpochTally::kTrailerFloats, float(rank));
                EpochTally{1.5 * rank, double(rank), 10.0, 12.0}.packTrailer(buffer.data() + g,
                                                                             rank == 2);
                group.allreduceSum(buffer.data(), buffer.size());
            } catch (const std::exception &e) {
                errors[std::size_t(rank)] = e.what();
            }
        });
    for (auto &t : ranks)
        t.join();
    for (const auto &e : errors)
        QVERIFY2(e.empty(), e.c_str());
    for (const auto &buffer : buffers) {
        QCOMPARE(buffer[0], 3.0f); // 0 + 1 + 2
        QCOMPARE(buffer[g - 1], 3.0f);
        const EpochTally::Trailer group = EpochTally::unpackTrailer(buffer.data() + g);
        QCOMPARE(group.tally, (EpochTally{4.5, 3.0, 30.0, 36.0}));
        QVERIFY(group.stop);
    }
}

void TestEpochTally::stepResultCountsItsSamples()
{
    // A step's loss is the mean over its samples; the tally sums it back.
    core::StepResult r;
    r.loss = 0.5;
    r.correct = 9;
    r.count = 14; // a detector's objects
    EpochTally tally = EpochTally::of(r, 12);
    QCOMPARE(tally, (EpochTally{6.0, 9.0, 12.0, 14.0}));
    tally += EpochTally::of(r, 4);
    QCOMPARE(tally, (EpochTally{8.0, 18.0, 16.0, 28.0}));
    QCOMPARE(tally.meanLoss(), 0.5);
    QCOMPARE(tally.accuracy(), 18.0 / 28.0);
}

void TestEpochTally::emptyTallyHasNoMeans()
{
    const EpochTally none;
    QCOMPARE(none.meanLoss(), 0.0);
    QCOMPARE(none.accuracy(), 0.0);
}

QTEST_GUILESS_MAIN(TestEpochTally)
#include "tst_epochtally.moc"

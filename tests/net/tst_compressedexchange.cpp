// The async mode's bfloat16 exchange: rounding, error feedback, and the parameter server's
// mirror of each node's weights staying bit-identical to what the node holds.
#include "core/sgd.h"
#include "core/zoo.h"
#include "net/training/compressedexchange.h"
#include "net/training/parameterserver.h"

#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using edgetrain::net::CompressedExchange;
namespace core = edgetrain::core;
namespace net = edgetrain::net;

class TestCompressedExchange : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundsToNearestEven_data();
    void roundsToNearestEven();
    void relativeErrorIsBounded();
    void wrongSizesAreRefused();
    void feedbackLosesNothingOverManyPushes();
    void mirrorStaysBitIdenticalToTheNode();
};

namespace {
std::uint32_t bitsOf(float f)
{
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

float floatOf(std::uint32_t b)
{
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}
} // namespace

void TestCompressedExchange::roundsToNearestEven_data()
{
    QTest::addColumn<float>("value");
    QTest::addColumn<float>("expected");
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1).
    QTest::newRow("exact") << 1.5f << 1.5f;
    QTest::newRow("tie down to even") << floatOf(0x3f808000u) << 1.0f;
    QTest::newRow("tie up to even") << floatOf(0x3f818000u) << floatOf(0x3f820000u);
    QTest::newRow("above half") << floatOf(0x3f808001u) << floatOf(0x3f810000u);
    QTest::newRow("below half") << floatOf(0x3f807fffu) << 1.0f;
    QTest::newRow("negative") << -floatOf(0x3f808001u) << -floatOf(0x3f810000u);
    QTest::newRow("zero") << 0.0f << 0.0f;
    QTest::newRow("subnormal kept") << floatOf(0x00010000u) << floatOf(0x00010000u);
    QTest::newRow("infinity") << std::numeric_limits<float>::infinity()
                              << std::numeric_limits<float>::infinity();
    QTest::newRow("largest float overflows")
        << std::numeric_limits<float>::max() << std::numeric_limits<float>::infinity();
}

void TestCompressedExchange::roundsToNearestEven()
{
    QFETCH(float, value);
    QFETCH(float, expected);
    QCOMPARE(bitsOf(CompressedExchange::fromBf16(CompressedExchange::toBf16(value))),
             bitsOf(expected));
    const float nan = std::numeric_limits<float>::quiet_NaN();
    QVERIFY(std::isnan(CompressedExchange::fromBf16(CompressedExchange::toBf16(nan))));
    // a NaN whose payload sits only in the dropped bits stays a NaN, never becomes infinity
    QVERIFY(
        std::isnan(CompressedExchange::fromBf16(CompressedExchange::toBf16(floatOf(0x7f800001u)))));
}

void TestCompressedExchange::relativeErrorIsBounded()
{
    std::mt19937 rng(3);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(10000);
    for (float &v : values)
        v = normal(rng) * std::pow(10.0f, float(int(rng() % 12) - 8));
    const QByteArray bytes = CompressedExchange::encode(values.data(), values.size());
    QCOMPARE(bytes.size(), qsizetype(values.size() * 2));
    std::vector<float> back(values.size());
    QVERIFY(CompressedExchange::decode(bytes, back.data(), back.size()));
    for (std::size_t i = 0; i < values.size(); ++i)
        QVERIFY2(std::abs(back[i] - values[i]) <= std::abs(values[i]) * (1.0f / 256.0f),
                 qPrintable(QStringLiteral("%1 came back as %2").arg(values[i]).arg(back[i])));
    // little-endian on the wire: 1.0f is 0x3f80
    const float one = 1.0f;
    QCOMPARE(CompressedExchange::encode(&one, 1), QByteArray("\x80\x3f", 2));
}

void TestCompressedExchange::wrongSizesAreRefused()
{
    std::vector<float> values{1.0f, 2.0f, 3.0f};
    const QByteArray bytes = CompressedExchange::encode(values.data(), 3);
    std::vector<float> out{7.0f, 7.0f};
    QVERIFY(!CompressedExchange::decode(bytes, out.data(), 2));
    QVERIFY(!CompressedExchange::addDecoded(bytes.left(5), out.data(), 2));
    QCOMPARE(out, (std::vector<float>{7.0f, 7.0f})); // untouched
}

void TestCompressedExchange::feedbackLosesNothingOverManyPushes()
{
    // 2,000 pushes of a gradient whose entries bfloat16 cannot hold (1 + 2^-10 rounds to 1 every
    // time without feedback): with feedback the decoded sum equals the sent sum to within one
    // rounding of one push; without, it drifts by 2,000 of them.
    std::vector<float> g{1.0f + 1.0f / 1024.0f, 3e-5f * (1.0f + 1.0f / 512.0f), -0.1234567f};
    CompressedExchange feedback;
    std::vector<double> exact(g.size(), 0.0), withFeedback(g.size(), 0.0), without(g.size(), 0.0);
    std::vector<float> decoded(g.size());
    for (int push = 0; push < 2000; ++push) {
        QVERIFY(CompressedExchange::decode(feedback.encodeWithFeedback(g.data(), g.size()),
                                           decoded.data(), g.size()));
        for (std::size_t i = 0; i < g.size(); ++i) {
            exact[i] += g[i];
            withFeedback[i] += decoded[i];
            without[i] += CompressedExchange::fromBf16(CompressedExchange::toBf16(g[i]));
        }
    }
    for (std::size_t i = 0; i < g.size(); ++i) {
        const double oneRounding = std::abs(g[i]) / 256.0;
        QVERIFY2(std::abs(withFeedback[i] - exact[i]) <= oneRounding,
                 qPrintable(QStringLiteral("entry %1: %2 sent, %3 arrived")
                                .arg(i)
                                .arg(exact[i])
                                .arg(withFeedback[i])));
    }
    QVERIFY(std::abs(without[0] - exact[0]) > 1.0); // what the feedback is for
    // a non-finite value is sent but not carried into the next push
    std::vector<float> bad{std::numeric_limits<float>::infinity(), 1.0f};
    CompressedExchange once;
    once.encodeWithFeedback(bad.data(), 2);
    std::vector<float> fine{1.0f, 1.0f};
    QVERIFY(CompressedExchange::decode(once.encodeWithFeedback(fine.data(), 2), decoded.data(), 2));
    QCOMPARE(decoded[0], 1.0f);
}

void TestCompressedExchange::mirrorStaysBitIdenticalToTheNode()
{
    // Two workers push real-sized gradients to a parameter server; one node follows by deltas
    // only, as the training worker does. After each reply its copy equals the server's mirror
    // bit for bit (checked through the next delta: a node in step gets deltas that move it to
    // the server's weights to within bfloat16's rounding of one delta).
    core::SgdOptions sgd;
    net::ParameterServer ps(core::Zoo::resolve("mlp"), 1, sgd, /*staleness*/ 4, /*batch*/ 64);
    ps.addWorker(0);
    ps.addWorker(1);
    std::vector<float> node = ps.pull(0);
    QCOMPARE(node, ps.weights());
    QVERIFY(ps.delta(1).isEmpty()); // worker 1 never pulled: it must get full weights
    ps.pull(1);
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> grad(ps.pushSize());
    std::uint64_t version = ps.version();
    for (int push = 0; push < 200; ++push) {
        for (float &v : grad)
            v = normal(rng) * 0.05f;
        QVERIFY(ps.push(push % 2, version, grad.data(), grad.size(), 0.05, 32).applied);
        if (push % 2 == 0) {
            QVERIFY(CompressedExchange::addDecoded(ps.delta(0), node.data(), node.size()));
            version = ps.version();
        }
    }
    // The node has followed 100 deltas; one more brings it to the server's weights within one
    // rounding of the remaining difference, not of the sum of everything sent.
    QVERIFY(CompressedExchange::addDecoded(ps.delta(0), node.data(), node.size()));
    const std::vector<float> server = ps.weights();
    double worst = 0.0, scale = 0.0;
    for (std::size_t i = 0; i < node.size(); ++i) {
        worst = std::max(worst, double(std::abs(node[i] - server[i])));
        scale = std::max(scale, double(std::abs(server[i])));
    }
    QVERIFY2(worst <= scale * 1e-4, qPrintable(QStringLiteral("off by %1").arg(worst)));
    // With nothing new on the server, each delta carries what the last one's rounding left, so
    // a few more bring the node to the server's weights exactly (each takes 8 of the remaining
    // significant bits) and then come as zeros. That can only happen if the mirror is, bit for
    // bit, what the node holds.
    int deltas = 0;
    for (QByteArray d = ps.delta(0); d != QByteArray(d.size(), '\0'); d = ps.delta(0)) {
        QVERIFY2(++deltas <= 6, "the deltas do not settle: the mirror is not the node's copy");
        QVERIFY(CompressedExchange::addDecoded(d, node.data(), node.size()));
    }
    QCOMPARE(node, ps.weights());
}

QTEST_GUILESS_MAIN(TestCompressedExchange)
#include "tst_compressedexchange.moc"

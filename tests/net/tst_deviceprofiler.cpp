// What the device profiler reports (job_ready's "profile", net::ProfileReport): its CBOR round
// trip in each of the forms the profiler writes the link and the exchange in, the wire form the
// planner reads, and the speed the first epoch is split by.
#include "net/protocol/messages/profilereport.h"
#include "net/training/worker/deviceprofiler.h"

#include <QCborArray>
#include <QTest>

using edgetrain::net::ExchangeFigures;
using edgetrain::net::LinkFigures;
using edgetrain::net::ProfileReport;
using edgetrain::net::worker::DeviceProfiler;

Q_DECLARE_METATYPE(ProfileReport)

namespace {

/** The report a profile's CBOR reads back to (none if refused, with why in the log). */
std::optional<ProfileReport> read(const QCborMap &map)
{
    QString error;
    std::optional<ProfileReport> report = ProfileReport::fromCbor(map, &error);
    if (!report)
        qWarning().noquote() << error;
    return report;
}

ProfileReport measured()
{
    ProfileReport p;
    p.small_batch = 2;
    p.large_batch = 32;
    p.small_step_seconds = 0.01;
    p.large_step_seconds = 0.1;
    p.update_seconds = 0.002;
    p.eval_seconds_per_sample = 0.0004;
    p.max_local_batch = 65;
    p.steps = 3;
    p.seconds = 1.75;
    p.idle_watts = 2.1;
    p.busy_watts = 6.4;
    p.power_source = QStringLiteral("the pi4 profile");
    p.addPhase(QStringLiteral("link"), 0.25);
    p.addPhase(QStringLiteral("memory"), 0.5);
    p.addPhase(QStringLiteral("steps"), 0.75);
    return p;
}

} // namespace

class TestDeviceProfiler : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void roundTrip_data();
    void roundTrip();
    void wireFormIsThePlanners();
    void phasesSumInTheirFirstOrder();
    void typicalSpeed_data();
    void typicalSpeed();
};

void TestDeviceProfiler::roundTrip_data()
{
    QTest::addColumn<ProfileReport>("profile");
    QTest::newRow("not planned: no link, no exchange") << measured();

    ProfileReport overLink = measured();
    LinkFigures link;
    link.rtt_seconds = 0.0012;
    link.seconds = 0.4;
    link.rates_timed = true;
    link.up_bytes_per_second = 11.5e6;
    link.down_bytes_per_second = 11.75e6;
    link.up_busy_seconds_per_byte = 2e-9;
    link.down_busy_seconds_per_byte = 3e-9;
    overLink.link = link;
    overLink.exchange.timed = true;
    overLink.exchange.over = ExchangeFigures::Over::Link;
    overLink.exchange.seconds_per_byte = 9e-9;
    overLink.exchange.bytes = 1 << 20;
    overLink.exchange.repeats = 12;
    overLink.exchange.seconds = 0.6;
    overLink.exchange.setup_seconds = 0.1;
    overLink.exchange.windows_seconds = 0.45;
    overLink.exchange.busy_seconds_per_byte = 4e-9;
    QTest::newRow("exchange over the link, rates timed") << overLink;

    ProfileReport fellBack = measured();
    LinkFigures noRates;
    noRates.rtt_seconds = 0.003;
    noRates.seconds = 0.2;
    fellBack.link = noRates;
    fellBack.exchange.timed = true;
    fellBack.exchange.over = ExchangeFigures::Over::Loopback;
    fellBack.exchange.seconds_per_byte = 2e-9;
    fellBack.exchange.bytes = 246824;
    fellBack.exchange.repeats = 40;
    fellBack.exchange.link_error = QStringLiteral("the coordinator's rank did not come");
    QTest::newRow("on the device after the pair failed") << fellBack;

    ProfileReport failed = measured();
    LinkFigures linkError;
    linkError.error = QStringLiteral("connection refused");
    failed.link = linkError;
    failed.exchange.error = QStringLiteral("no thread to be had");
    failed.max_local_batch = -1;
    failed.idle_watts = failed.busy_watts = -1.0;
    QTest::newRow("link and exchange failed") << failed;
}

void TestDeviceProfiler::roundTrip()
{
    QFETCH(ProfileReport, profile);
    const QCborMap wire = profile.toCbor();
    const std::optional<ProfileReport> read1 = read(wire);
    QVERIFY(read1);
    QVERIFY(*read1 == profile);
    // And through bytes, as a frame carries it.
    const std::optional<ProfileReport> read2 =
        read(QCborValue::fromCbor(QCborValue(wire).toCbor()).toMap());
    QVERIFY(read2);
    QVERIFY(*read2 == profile);
}

void TestDeviceProfiler::wireFormIsThePlanners()
{
    // The field names and shapes the coordinator's planner reads (measurementFromReady).
    ProfileReport p = measured();
    p.exchange.timed = true;
    p.exchange.over = ExchangeFigures::Over::Loopback;
    p.exchange.seconds_per_byte = 2e-9;
    const QCborMap wire = p.toCbor();
    QCOMPARE(wire.value(QStringLiteral("batches")).toArray(), (QCborArray{2, 32}));
    QCOMPARE(wire.value(QStringLiteral("step_seconds")).toArray(), (QCborArray{0.01, 0.1}));
    QCOMPARE(wire.value(QStringLiteral("max_local_batch")).toInteger(), 65);
    QCOMPARE(wire.value(QStringLiteral("eval_seconds_per_sample")).toDouble(), 0.0004);
    QVERIFY(!wire.contains(QStringLiteral("link"))); // no probe: the planner says so
    const QCborMap exchange = wire.value(QStringLiteral("exchange")).toMap();
    QCOMPARE(exchange.value(QStringLiteral("over")).toString(), QStringLiteral("loopback"));
    QVERIFY(!exchange.contains(QStringLiteral("busy_seconds_per_byte"))); // not over the link
    QVERIFY(!exchange.contains(QStringLiteral("error")));
    // Not planned: an empty exchange, not an error.
    QVERIFY(measured().toCbor().value(QStringLiteral("exchange")).toMap().isEmpty());
}

void TestDeviceProfiler::phasesSumInTheirFirstOrder()
{
    ProfileReport p;
    p.addPhase(QStringLiteral("turn"), 0.5);
    p.addPhase(QStringLiteral("exchange"), 0.25);
    p.addPhase(QStringLiteral("turn"), 1.0);
    QCOMPARE(p.phases_seconds.size(), std::size_t(2));
    QCOMPARE(p.phases_seconds[0].first, QStringLiteral("turn"));
    QCOMPARE(p.phases_seconds[0].second, 1.5);
    const QCborMap phases = p.toCbor().value(QStringLiteral("phases_seconds")).toMap();
    QCOMPARE(phases.keys().first().toString(), QStringLiteral("turn"));
    const std::optional<ProfileReport> back = read(p.toCbor());
    QVERIFY(back);
    QCOMPARE(back->phases_seconds, p.phases_seconds);
}

void TestDeviceProfiler::typicalSpeed_data()
{
    QTest::addColumn<qint64>("small");
    QTest::addColumn<qint64>("large");
    QTest::addColumn<double>("smallSeconds");
    QTest::addColumn<double>("largeSeconds");
    QTest::addColumn<double>("imagesPerSecond");
    // Read off the line at 16: 0.01 + (0.09 / 30) x 14 = 0.052 s.
    QTest::newRow("line through 2 and 32") << qint64(2) << qint64(32) << 0.01 << 0.1 << 16 / 0.052;
    // A batch under 16: the large point itself.
    QTest::newRow("batch of 8") << qint64(2) << qint64(8) << 0.01 << 0.04 << 8 / 0.04;
    // One point (the batch is 2): per sample from it.
    QTest::newRow("one point") << qint64(2) << qint64(2) << 0.01 << 0.01 << 2 / 0.01;
    // A larger batch timed faster (noise): no line, proportional to the large point.
    QTest::newRow("noisy points") << qint64(2) << qint64(32) << 0.05 << 0.04 << 16 / 0.02;
}

void TestDeviceProfiler::typicalSpeed()
{
    QFETCH(qint64, small);
    QFETCH(qint64, large);
    QFETCH(double, smallSeconds);
    QFETCH(double, largeSeconds);
    QFETCH(double, imagesPerSecond);
    ProfileReport p;
    p.small_batch = small;
    p.large_batch = large;
    p.small_step_seconds = smallSeconds;
    p.large_step_seconds = largeSeconds;
    QVERIFY(qAbs(DeviceProfiler::typicalImagesPerSecond(p) - imagesPerSecond) <
            1e-9 * imagesPerSecond);
}

QTEST_GUILESS_MAIN(TestDeviceProfiler)
#include "tst_deviceprofiler.moc"

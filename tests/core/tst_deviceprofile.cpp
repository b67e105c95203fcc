// Device profiles (core/deviceprofile.h): the built-in files parse and name a source for every
// figure; a bad file is refused with its name and the field; power follows the profile.

#include "core/deviceprofile.h"
#include "core/error.h"

#include <QDir>
#include <QTest>

using namespace edgetrain::core;

namespace {

const char *kGood = R"({"format": "edgetrain-device/1", "id": "board", "name": "A board",
  "aliases": ["b"], "arch": "aarch64", "cpu_model": "Cortex-A53", "cores": 4,
  "clock_mhz": 1200, "core_gflops": 2.5, "ram_bytes": 1073741824,
  "os_reserved_bytes": 201326592, "link_bits_per_second": 100000000,
  "power": {"idle_watts": 1.5, "full_watts": 4.0},
  "sources": {"core_gflops": "measured", "ram_bytes": "datasheet",
              "link_bits_per_second": "iperf", "power": "meter"}})";

/** kGood with `from` replaced by `to` (the text must occur). */
std::string edited(const std::string &from, const std::string &to)
{
    std::string text = kGood;
    const auto at = text.find(from);
    if (at == std::string::npos)
        qFatal("'%s' is not in the good profile", from.c_str());
    return text.replace(at, from.size(), to);
}

} // namespace

class TestDeviceProfile : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void builtInProfilesParse();
    void goodProfileRoundTrips();
    void badProfileNamesFileAndField_data();
    void badProfileNamesFileAndField();
    void powerIsLinearOrFollowsTheCurve();
    void powerFollowsTheClock();
};

void TestDeviceProfile::builtInProfilesParse()
{
    const QDir dir(QStringLiteral(EDGETRAIN_SOURCE_DIR "/resources/devices"));
    const QStringList files = dir.entryList({QStringLiteral("*.json")}, QDir::Files);
    // the issue's list: Pi 3B, 3B+, 4B (2/4/8 GB), 5, Jetson Nano, a 4-core laptop
    QVERIFY2(files.size() >= 9, qPrintable(files.join(QLatin1Char(' '))));
    QStringList ids;
    for (const QString &f : files) {
        const DeviceProfile p = DeviceProfile::load(dir.filePath(f).toStdString());
        QCOMPARE(QString::fromStdString(p.id) + QStringLiteral(".json"), f);
        ids << QString::fromStdString(p.id);
        QVERIFY(p.usableBytes() > 0 && p.usableBytes() < p.ram_bytes);
        QVERIFY(p.full_watts > p.idle_watts);
        for (const char *figure : {"core_gflops", "ram_bytes", "link_bits_per_second", "power"})
            QVERIFY2(p.sources.at(figure).size() > 10, figure);
    }
    for (const char *id : {"pi3b", "pi3bplus", "pi4b-2gb", "pi4b-4gb", "pi4b-8gb", "pi5-8gb",
                           "jetson-nano", "laptop-i5-8250u"})
        QVERIFY2(ids.contains(QLatin1String(id)), id);
}

void TestDeviceProfile::goodProfileRoundTrips()
{
    const DeviceProfile p = DeviceProfile::fromJson(Json::parse(kGood), "good.json");
    QCOMPARE(p.cores, 4);
    QCOMPARE(p.usableBytes(), std::int64_t(1073741824 - 201326592));
    QCOMPARE(p.deviceGflops(), 10.0);
    QVERIFY(p.answersTo("board") && p.answersTo("b") && !p.answersTo("c"));
    const DeviceProfile again = DeviceProfile::fromJson(p.toJson(), "again.json");
    QCOMPARE(again.toJson().dump(), p.toJson().dump());
}

void TestDeviceProfile::badProfileNamesFileAndField_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("no cores") << QString::fromStdString(edited("\"cores\": 4,", ""))
                              << "bad.json: missing field \"cores\"";
    QTest::newRow("zero cores")
        << QString::fromStdString(edited("\"cores\": 4", "\"cores\": 0"))
        << "bad.json: field \"cores\" must be an integer from 1 to 1024, got 0";
    QTest::newRow("fractional cores")
        << QString::fromStdString(edited("\"cores\": 4", "\"cores\": 2.5"))
        << "field \"cores\" must be an integer";
    QTest::newRow("speed as text")
        << QString::fromStdString(edited("\"core_gflops\": 2.5", "\"core_gflops\": \"fast\""))
        << "field \"core_gflops\" must be a number";
    QTest::newRow("typo") << QString::fromStdString(edited("\"cores\"", "\"corse\""))
                          << "bad.json: unknown field \"corse\"";
    QTest::newRow("full below idle")
        << QString::fromStdString(edited("\"full_watts\": 4.0", "\"full_watts\": 1.0"))
        << "field \"power.full_watts\" must be a number from 1.5";
    QTest::newRow("curve backwards")
        << QString::fromStdString(edited("\"full_watts\": 4.0",
                                         "\"full_watts\": 4.0, \"curve\": [[0, 1.5], [0.6, "
                                         "3], [0.5, 3.5], [1, 4]]"))
        << "field \"power.curve[2][0]\" must be a utilisation from 0 to 1, above the previous one";
    QTest::newRow("no source for power")
        << QString::fromStdString(edited(", \"power\": \"meter\"", ""))
        << "bad.json: missing field \"sources.power\"";
    QTest::newRow("other format")
        << QString::fromStdString(edited("edgetrain-device/1", "edgetrain-device/9"))
        << "field \"format\" must be \"edgetrain-device/1\", got \"edgetrain-device/9\"";
    QTest::newRow("id with a colon")
        << QString::fromStdString(edited("\"id\": \"board\"", "\"id\": \"pi:3\""))
        << "field \"id\" must be a name without spaces, commas, colons or slashes";
    QTest::newRow("OS takes all the RAM")
        << QString::fromStdString(
               edited("\"os_reserved_bytes\": 201326592", "\"os_reserved_bytes\": 1073741824"))
        << "field \"os_reserved_bytes\" must be an integer from 0 to";
}

void TestDeviceProfile::badProfileNamesFileAndField()
{
    QFETCH(QString, text);
    QFETCH(QString, message);
    try {
        DeviceProfile::fromJson(Json::parse(text.toStdString(), "bad.json"), "bad.json");
        QFAIL("accepted");
    } catch (const SpecError &e) {
        QVERIFY2(QString::fromUtf8(e.what()).startsWith(QLatin1String("bad.json: ")), e.what());
        QVERIFY2(QString::fromUtf8(e.what()).contains(message), e.what());
    }
}

void TestDeviceProfile::powerIsLinearOrFollowsTheCurve()
{
    DeviceProfile p = DeviceProfile::fromJson(Json::parse(kGood), "good.json");
    QCOMPARE(p.watts(0.0), 1.5);
    QCOMPARE(p.watts(0.5), 2.75);
    QCOMPARE(p.watts(1.0), 4.0);
    QCOMPARE(p.watts(2.0), 4.0); // clamped
    p = DeviceProfile::fromJson(
        Json::parse(edited("\"full_watts\": 4.0",
                           "\"full_watts\": 4.0, \"curve\": [[0, 1.5], [0.25, 3.0], [1, 4.0]]")),
        "curve.json");
    QCOMPARE(p.watts(0.125), 2.25); // halfway to the first knee
    QCOMPARE(p.watts(0.625), 3.5);  // halfway between the knees
    QCOMPARE(p.watts(-1.0), 1.5);
}

void TestDeviceProfile::powerFollowsTheClock()
{
    // kGood: 1.5 W idle, 4.0 W at full load, at 1200 MHz.
    DeviceProfile p = DeviceProfile::fromJson(Json::parse(kGood), "good.json");
    QCOMPARE(p.frequency_exponent, 1.0);
    QCOMPARE(p.watts(1.0, 600.0), 2.75);   // the part above idle at half the clock: halved
    QCOMPARE(p.watts(0.5, 900.0), 2.4375); // 1.5 + 1.25 x 0.75
    QCOMPARE(p.watts(0.0, 600.0), 1.5);    // idle is idle
    QCOMPARE(p.watts(1.0, 0.0), 4.0);      // no clock known: the profile's
    QCOMPARE(p.watts(1.0, 3000.0), 4.0);   // above the profile's clock (a boost): its full load
    p = DeviceProfile::fromJson(
        Json::parse(edited("\"full_watts\": 4.0", "\"full_watts\": 4.0, "
                                                  "\"frequency_exponent\": 2")),
        "squared.json");
    QCOMPARE(p.watts(1.0, 600.0), 2.125); // 1.5 + 2.5 x 0.25
    const DeviceProfile again = DeviceProfile::fromJson(p.toJson(), "again.json");
    QCOMPARE(again.frequency_exponent, 2.0);
    try {
        DeviceProfile::fromJson(
            Json::parse(edited("\"full_watts\": 4.0", "\"full_watts\": 4.0, "
                                                      "\"frequency_exponent\": 7")),
            "bad.json");
        QFAIL("an exponent of 7 was accepted");
    } catch (const SpecError &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(
                     QLatin1String("bad.json: field \"power.frequency_exponent\" must be")),
                 e.what());
    }
}

QTEST_APPLESS_MAIN(TestDeviceProfile)
#include "tst_deviceprofile.moc"

// Energy from power readings (core/energytrace.h): hand-computed cases, and a trace recorded
// from an edge lab whose nodes' running energy totals must agree with their power readings.

#include "core/energytrace.h"

#include <QDateTime>
#include <QFile>
#include <QTest>

#include <map>

using namespace edgetrain::core;

class TestEnergyTrace : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void handComputed();
    void recordedLabTrace();
};

void TestEnergyTrace::handComputed()
{
    EnergyTrace t;
    QCOMPARE(t.at(5.0), 0.0);
    t.add(0.0, 10.0);
    t.add(1.0, 13.0); // 3 W
    t.add(3.0, 17.0); // 2 W
    t.add(2.0, 99.0); // older than the last reading: ignored
    QCOMPARE(t.at(-1.0), 10.0);
    QCOMPARE(t.at(0.5), 11.5);
    QCOMPARE(t.at(2.0), 15.0);
    QCOMPARE(t.between(0.0, 3.0), 7.0);
    QCOMPARE(t.between(0.5, 2.0), 3.5);
    QCOMPARE(t.at(4.0), 19.0); // past the last reading, at its interval's 2 W
    QCOMPARE(EnergyTrace::integrate({{0.0, 2.0}, {1.0, 4.0}, {3.0, 4.0}}), 11.0);
    QCOMPARE(EnergyTrace::integrate({{0.0, 2.0}}), 0.0);
}

void TestEnergyTrace::recordedLabTrace()
{
    QFile f(QStringLiteral(EDGETRAIN_SOURCE_DIR "/tests/data/power/lab-pi3-pi4-trace.csv"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QList<QByteArray> lines = f.readAll().trimmed().split('\n');
    const QList<QByteArray> header = lines.first().split(',');
    const int time = int(header.indexOf("time")), node = int(header.indexOf("node"));
    const int watts = int(header.indexOf("power_watts")),
              joules = int(header.indexOf("energy_joules"));
    QVERIFY(time >= 0 && node >= 0 && watts >= 0 && joules >= 0);
    struct Series
    {
        EnergyTrace trace;
        std::vector<std::pair<double, double>> power;
        double first = -1, last = -1, firstJ = 0, lastJ = 0;
    };
    std::map<QByteArray, Series> nodes;
    const QDateTime start =
        QDateTime::fromString(QString::fromUtf8(lines[1].split(',')[time]), Qt::ISODateWithMs);
    for (qsizetype i = 1; i < lines.size(); ++i) {
        const QList<QByteArray> c = lines[i].split(',');
        const double t = double(start.msecsTo(QDateTime::fromString(QString::fromUtf8(c[time]),
                                                                    Qt::ISODateWithMs))) /
                         1000.0;
        Series &s = nodes[c[node]];
        s.trace.add(t, c[joules].toDouble());
        s.power.emplace_back(t, c[watts].toDouble());
        if (s.first < 0) {
            s.first = t;
            s.firstJ = c[joules].toDouble();
        }
        s.last = t;
        s.lastJ = c[joules].toDouble();
    }
    QCOMPARE(int(nodes.size()), 2);
    const std::map<QByteArray, std::pair<double, double>> range{{"pi3b-1", {1.4, 3.7}},
                                                                {"pi4b-4gb-1", {1.6, 7.2}}};
    for (const auto &[name, s] : nodes) {
        QVERIFY2(s.last - s.first > 20.0, name.constData());
        // the trace reproduces the node's own total between its readings
        QCOMPARE(s.trace.between(s.first, s.last), s.lastJ - s.firstJ);
        // and the node's total agrees with its power readings integrated over the time they
        // arrived (each reading is the power since the previous one: within a few percent)
        double rectangles = 0.0;
        for (std::size_t i = 1; i < s.power.size(); ++i)
            rectangles += s.power[i].second * (s.power[i].first - s.power[i - 1].first);
        QVERIFY2(std::abs(rectangles / (s.lastJ - s.firstJ) - 1.0) < 0.05,
                 qPrintable(QStringLiteral("%1: %2 J from the readings, %3 J reported")
                                .arg(QString::fromUtf8(name))
                                .arg(rectangles)
                                .arg(s.lastJ - s.firstJ)));
        // the profile's model stays between idle and full load, and the node was at both
        double lo = 1e9, hi = 0;
        for (const auto &[t, w] : s.power) {
            lo = std::min(lo, w);
            hi = std::max(hi, w);
        }
        QVERIFY2(lo >= range.at(name).first - 1e-9 && hi <= range.at(name).second + 1e-9,
                 name.constData());
        QVERIFY2(hi - lo > 0.5 * (range.at(name).second - range.at(name).first), name.constData());
        QVERIFY(EnergyTrace::integrate(s.power) > 0.0);
    }
}

QTEST_APPLESS_MAIN(TestEnergyTrace)
#include "tst_energytrace.moc"

// The data plane with real gloo over TCP on 127.0.0.1, ranks as threads in one process: sums
// are exact, broadcasts reach everybody, and a rank that stops answering makes the others fail
// with CollectiveError within the timeout instead of hanging.

#include "core/cputime.h"
#include "net/training/collectives.h"
#include "net/training/exchangeprobe.h"
#include "net/training/exchangeprobehost.h"

#include <QTest>
#include <gloo/common/error.h>
#include <gloo/rendezvous/hash_store.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

using namespace edgetrain::net;

namespace {

/** Runs fn(rank) on `size` threads; returns the messages of ranks that threw. */
std::vector<std::string> onRanks(int size, const std::function<void(int)> &fn)
{
    std::vector<std::string> errors(static_cast<std::size_t>(size));
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
        threads.emplace_back([&, r] {
            try {
                fn(r);
            } catch (const std::exception &e) {
                errors[std::size_t(r)] = e.what();
            }
        });
    for (auto &t : threads)
        t.join();
    return errors;
}

} // namespace

class TestCollectives : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void allreduceSums_data();
    void allreduceSums();
    void broadcastFromRoot();
    void silentPeerFailsInsteadOfHanging();
    void missingPeerFailsToConnect();
    void badRankIsRefused();
    void exchangeIsTimedOnThisDevice();
    void ringMemberScaledByHand();
    void exchangeIsTimedWithTheCoordinator();
    void exchangeProbeHostRefusesAndCloses();
};

void TestCollectives::allreduceSums_data()
{
    QTest::addColumn<int>("size");
    QTest::addColumn<int>("count");
    // Gradient sizes of the zoo: LeNet-5, ResNet-20.
    for (int size : {2, 3, 4})
        for (int count : {1, 1000, 61706, 269722})
            QTest::addRow("%d ranks, %d floats", size, count) << size << count;
}

void TestCollectives::allreduceSums()
{
    QFETCH(int, size);
    QFETCH(int, count);
    gloo::rendezvous::HashStore store;
    std::vector<std::vector<float>> data(static_cast<std::size_t>(size));
    const auto errors = onRanks(size, [&](int rank) {
        GroupOptions o;
        o.rank = rank;
        o.size = size;
        CollectiveGroup group(store, o);
        auto &v = data[std::size_t(rank)];
        v.resize(std::size_t(count));
        for (int i = 0; i < count; ++i)
            v[std::size_t(i)] = float((rank + 1) * (i % 7)); // small integers: exact in float
        group.allreduceSum(v.data(), v.size());
    });
    for (const auto &e : errors)
        QVERIFY2(e.empty(), e.c_str());
    const float ranksSum = float(size * (size + 1) / 2);
    for (const auto &v : data)
        for (int i = 0; i < count; i += 97)
            QCOMPARE(v[std::size_t(i)], ranksSum * float(i % 7));
}

void TestCollectives::broadcastFromRoot()
{
    gloo::rendezvous::HashStore store;
    std::vector<std::vector<float>> data(3, std::vector<float>(500));
    const auto errors = onRanks(3, [&](int rank) {
        GroupOptions o;
        o.rank = rank;
        o.size = 3;
        CollectiveGroup group(store, o);
        auto &v = data[std::size_t(rank)];
        std::fill(v.begin(), v.end(), float(rank == 1 ? 42 : -1));
        group.broadcast(v.data(), v.size(), 1);
        group.barrier();
    });
    for (const auto &e : errors)
        QVERIFY2(e.empty(), e.c_str());
    for (const auto &v : data)
        QCOMPARE(v.back(), 42.0f);
}

void TestCollectives::silentPeerFailsInsteadOfHanging()
{
    gloo::rendezvous::HashStore store;
    std::atomic<int> connected{0};
    QElapsedTimer clock;
    clock.start();
    const auto errors = onRanks(3, [&](int rank) {
        GroupOptions o;
        o.rank = rank;
        o.size = 3;
        // Also the rendezvous' timeout: long enough for three ranks to connect on a loaded
        // 2-core machine (1.5 s was not, once in CI), short enough to show nobody hangs.
        o.timeout = std::chrono::milliseconds(4000);
        CollectiveGroup group(store, o);
        ++connected;
        if (rank == 2)
            return; // this rank "dies": it leaves the group without reducing
        std::vector<float> v(10000, 1.0f);
        group.allreduceSum(v.data(), v.size());
    });
    QCOMPARE(connected.load(), 3);
    QVERIFY(errors[0].find("allreduce failed") != std::string::npos ||
            errors[1].find("allreduce failed") != std::string::npos);
    QVERIFY(errors[2].empty());
    QVERIFY2(clock.elapsed() < 15000, "the survivors must not hang");
}

void TestCollectives::missingPeerFailsToConnect()
{
    gloo::rendezvous::HashStore store;
    QElapsedTimer clock;
    clock.start();
    const auto errors = onRanks(2, [&](int rank) {
        GroupOptions o;
        o.rank = rank;
        o.size = 3; // rank 2 never comes
        o.timeout = std::chrono::milliseconds(1000);
        CollectiveGroup group(store, o);
    });
    QVERIFY2(errors[0].find("connecting the group") != std::string::npos, errors[0].c_str());
    QVERIFY(clock.elapsed() < 10000);
}

void TestCollectives::badRankIsRefused()
{
    gloo::rendezvous::HashStore store;
    GroupOptions o;
    o.rank = 3;
    o.size = 2;
    QVERIFY_THROWS_EXCEPTION(CollectiveError, CollectiveGroup(store, o));
}

void TestCollectives::exchangeIsTimedOnThisDevice()
{
    // A node's profile: gloo's ring between two ranks of this process, 61,711 floats (LeNet-5's
    // gradients and the step's five figures), three windows of 17 ms.
    const ExchangeMeasurement m = measureExchange(61711, 2.0, 0.05);
    QCOMPARE(m.bytes, std::size_t(61711 * 4));
    // Three windows of at least two allreduces each, after the warm-up; each window runs until
    // its 17 ms have passed.
    QVERIFY2(m.repeats >= 6, qPrintable(QString::number(m.repeats)));
    QVERIFY2(m.windows_seconds >= 0.05, qPrintable(QString::number(m.windows_seconds)));
    // The windows are what follows the setup; the sum is the whole to rounding (one ulp of
    // `seconds - setup` can put it a hair above).
    QVERIFY(m.setup_seconds > 0.0 && m.setup_seconds < m.seconds);
    QVERIFY(std::abs(m.setup_seconds + m.windows_seconds - m.seconds) <= 1e-9 * m.seconds);
    // Loopback on any machine this runs on moves and adds a chunk faster than 1 MB/s, and no
    // machine does it in under 10 ps a byte.
    QVERIFY2(m.seconds_per_byte > 1e-11 && m.seconds_per_byte < 1e-6,
             qPrintable(QString::number(m.seconds_per_byte)));
    // Nothing to reduce: nothing timed.
    const ExchangeMeasurement none = measureExchange(0, 2.0, 0.05);
    QCOMPARE(none.repeats, 0);
    QCOMPARE(none.seconds_per_byte, 0.0);
}

void TestCollectives::ringMemberScaledByHand()
{
    // 2 ms for a 1,000-byte allreduce between two ranks.
    // A quota of half a core: the pair shared 0.5, one member has 0.5 -> half the pair's time.
    QCOMPARE(ringMemberSecondsPerByte(0.002, 1000, 0.5), 1e-6);
    // One core: the pair shared it, a member has it too -> half.
    QCOMPARE(ringMemberSecondsPerByte(0.002, 1000, 1.0), 1e-6);
    // 1.5 cores: the pair had 1.5, a member 1 -> three quarters.
    QCOMPARE(ringMemberSecondsPerByte(0.002, 1000, 1.5), 1.5e-6);
    // Four processors: each rank had its own core, as a member has -> the whole time.
    QCOMPARE(ringMemberSecondsPerByte(0.002, 1000, 4.0), 2e-6);
    // Not known: one core.
    QCOMPARE(ringMemberSecondsPerByte(0.002, 1000, 0.0), 1e-6);
    QCOMPARE(ringMemberSecondsPerByte(0.002, 0, 4.0), 0.0);
}

namespace {

/** The coordinator's store as a node's rank sees it (RemoteStore's part, without the wire):
 *  what the node sets goes to the host too, what the host's rank publishes lands here. */
class CoordinatorStore : public gloo::rendezvous::Store
{
public:
    ExchangeProbeHost *host = nullptr;

    void publish(const QString &key, const QByteArray &value)
    {
        {
            std::lock_guard lock(m_mutex);
            m_keys[key.toStdString()] = std::vector<char>(value.begin(), value.end());
            ++published;
        }
        m_changed.notify_all();
    }
    void set(const std::string &key, const std::vector<char> &data) override
    {
        {
            std::lock_guard lock(m_mutex);
            m_keys[key] = data;
        }
        host->keySet(QString::fromStdString(key), QByteArray(data.data(), qsizetype(data.size())));
    }
    std::vector<char> get(const std::string &key) override
    {
        wait({key});
        std::lock_guard lock(m_mutex);
        return m_keys.at(key);
    }
    void wait(const std::vector<std::string> &keys) override
    {
        wait(keys, std::chrono::milliseconds(10000));
    }
    void wait(const std::vector<std::string> &keys,
              const std::chrono::milliseconds &timeout) override
    {
        std::unique_lock lock(m_mutex);
        if (!m_changed.wait_for(lock, timeout, [&] {
                for (const auto &k : keys)
                    if (!m_keys.count(k))
                        return false;
                return true;
            }))
            throw gloo::IoException("keys not set in time");
    }
    int published = 0;

private:
    std::mutex m_mutex;
    std::condition_variable m_changed;
    std::map<std::string, std::vector<char>> m_keys;
};

} // namespace

void TestCollectives::exchangeIsTimedWithTheCoordinator()
{
    CoordinatorStore store;
    std::mutex doneMutex;
    std::condition_variable doneChanged;
    QStringList done; // what the host's rank said, each time one ended
    ExchangeProbeHost host([&](const QString &k, const QByteArray &v) { store.publish(k, v); },
                           std::chrono::milliseconds(10000));
    store.host = &host;
    const QString prefix = QStringLiteral("pair-exchange-test-1");
    QCOMPARE(host.serve(7, prefix, QStringLiteral("127.0.0.1"), 61711,
                        [&](const QString &error) {
                            std::lock_guard lock(doneMutex);
                            done << error;
                            doneChanged.notify_all();
                        }),
             QString());
    GroupOptions o;
    o.rank = 0;
    o.prefix = prefix.toStdString();
    o.timeout = std::chrono::milliseconds(10000);
    const double cpuBefore = edgetrain::core::processCpuSeconds();
    const ExchangeMeasurement m = measurePairExchange(store, o, 61711, 0.05);
    const double callCpu = edgetrain::core::processCpuSeconds() - cpuBefore;
    {
        std::unique_lock lock(doneMutex);
        QVERIFY(
            doneChanged.wait_for(lock, std::chrono::seconds(10), [&] { return !done.isEmpty(); }));
    }
    QCOMPARE(done, QStringList{QString()}); // the host's rank ended well, once
    QVERIFY(store.published >= 1);          // its address reached the node through the store
    QCOMPARE(m.bytes, std::size_t(61711 * 4));
    // The node's rank decided the windows: three of at least two allreduces, 17 ms each.
    QVERIFY2(m.repeats >= 6, qPrintable(QString::number(m.repeats)));
    QVERIFY2(m.windows_seconds >= 0.05, qPrintable(QString::number(m.windows_seconds)));
    // Over loopback (the two ranks threads here): faster than 1 MB/s, slower than 10 ps a byte.
    QVERIFY2(m.seconds_per_byte > 1e-11 && m.seconds_per_byte < 1e-6,
             qPrintable(QString::number(m.seconds_per_byte)));
    // Per byte of the whole allreduce (a two-rank ring's two rounds of half the data), from the
    // best window: at most the mean over everything timed, the warm-up included.
    QVERIFY2(m.seconds_per_byte * double(m.bytes) <= m.windows_seconds / m.repeats,
             qPrintable(QStringLiteral("%1 s an allreduce, %2 s for %3")
                            .arg(m.seconds_per_byte * double(m.bytes))
                            .arg(m.windows_seconds)
                            .arg(m.repeats)));
    // and not far below it: the windows are most of that time (three windows of at least
    // 17 ms; the warm-up and barriers add an allreduce and three round trips; a window stalled
    // by a busy machine makes the mean larger than the best, so a fiftieth).
    QVERIFY2(m.seconds_per_byte * double(m.bytes) >= m.windows_seconds / m.repeats / 50,
             qPrintable(QString::number(m.seconds_per_byte * double(m.bytes))));
    // The CPU the windows took (this process's: both ranks here): part of what the whole call
    // took, and most of it (the windows are most of the call: a connection and a warm-up
    // allreduce before them).
    const double cpu = m.cpu_seconds_per_byte * double(m.bytes) * m.repeats;
    QVERIFY2(
        cpu <= callCpu + 1e-3 && cpu >= 0.25 * callCpu,
        qPrintable(
            QStringLiteral("%1 s of CPU in the windows, %2 s in the call").arg(cpu).arg(callCpu)));
    // Over loopback (measureExchange, both ranks this process) there is no such figure.
    QCOMPARE(measureExchange(1000, 1.0, 0.03).cpu_seconds_per_byte, 0.0);
}

void TestCollectives::exchangeProbeHostRefusesAndCloses()
{
    std::atomic<int> published{0};
    std::mutex doneMutex;
    QStringList done;
    auto host = std::make_unique<ExchangeProbeHost>(
        [&](const QString &, const QByteArray &) { ++published; }, std::chrono::seconds(60));
    auto record = [&](const QString &error) {
        std::lock_guard lock(doneMutex);
        done << error;
    };
    const QString where = QStringLiteral("127.0.0.1");
    auto refusal = [&](const QString &prefix, const QString &at, std::size_t floats) {
        return host->serve(1, prefix, at, floats, record);
    };
    QVERIFY(refusal(QStringLiteral("group-0"), where, 100).contains("a name"));
    QVERIFY(refusal(QStringLiteral("pair-exchange-"), where, 100).contains("a name")); // no name
    QVERIFY(refusal(QStringLiteral("pair-exchange-a/b"), where, 100).contains("no '/'"));
    QVERIFY(refusal(QStringLiteral("pair-exchange-x"), where, 0).contains("2 to"));
    QVERIFY(refusal(QStringLiteral("pair-exchange-x"), where, ExchangeProbeHost::kMaxFloats + 1)
                .contains("2 to"));
    QVERIFY(refusal(QStringLiteral("pair-exchange-x"), QString(), 100).contains("no address"));
    // A probe whose node never comes; the same node's second ask is refused while it runs,
    // another node's waits in line; forgetting that node drops its probe unstarted.
    QCOMPARE(host->serve(1, QStringLiteral("pair-exchange-gone"), where, 100, record), QString());
    for (int i = 0; i < 500 && published.load() < 1; ++i) // it listens and waits for the node
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    QCOMPARE(published.load(), 1);
    QVERIFY(host->serve(1, QStringLiteral("pair-exchange-again"), where, 100, record)
                .contains("not done"));
    QCOMPARE(host->serve(2, QStringLiteral("pair-exchange-other"), where, 100, record), QString());
    host->forget(2); // dropped from the line: the node may ask again
    QCOMPARE(host->serve(2, QStringLiteral("pair-exchange-other2"), where, 100, record), QString());
    // The first node is lost: its rank stops waiting for it at once, and the next one starts.
    host->forget(1);
    for (int i = 0; i < 500 && published.load() < 2; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    QCOMPARE(published.load(), 2);
    // Closing the host fails the waiting rank at once, not after the 60 s timeout.
    const auto t = std::chrono::steady_clock::now();
    host.reset();
    QVERIFY(std::chrono::steady_clock::now() - t < std::chrono::seconds(5));
    std::lock_guard lock(doneMutex);
    QCOMPARE(done.size(), 2); // the first node's and the second's; the one forgotten in line not
    QVERIFY2(done.front().contains("the node is gone"), qPrintable(done.front()));
    QVERIFY2(done.back().contains("closing"), qPrintable(done.back()));
}

QTEST_APPLESS_MAIN(TestCollectives)
#include "tst_collectives.moc"

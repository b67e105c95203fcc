// The memory limit a node holds its job to (net::JobMemoryLimit), measured from outside the
// engine: what the kernel says the process holds and where it sits. In the cgroup an overrun is
// seen at the limit while the process goes on into its headroom; past the headroom the thread
// waits, the limit is lifted, and the process is never killed; the watchdog sees an overrun
// within its sampling; both leave the process as they found it.

#include "core/cgroupmembership.h"
#include "core/processmemory.h"
#include "net/agent/jobmemorylimit.h"

#include <QDir>
#include <QFile>
#include <QSet>
#include <QTest>

#include <cstring>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace edgetrain;
using net::JobMemoryLimit;

namespace {

constexpr std::int64_t MiB = 1 << 20;

/** `bytes` of fresh memory (its own mapping, whatever the C heap holds), every page written
 *  so the kernel charges it; unmapped when it goes. */
class Touched
{
public:
    explicit Touched(std::int64_t bytes) : m_bytes(std::size_t(bytes))
    {
        m_data =
            ::mmap(nullptr, m_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m_data == MAP_FAILED)
            qFatal("mmap of %zu bytes failed", m_bytes);
        std::memset(m_data, 1, m_bytes);
    }
    ~Touched() { ::munmap(m_data, m_bytes); }
    Touched(const Touched &) = delete;
    Touched &operator=(const Touched &) = delete;

private:
    std::size_t m_bytes;
    void *m_data;
};

/** The process's cgroup v1 memory path. */
QString memoryCgroup()
{
    return QString::fromStdString(core::CgroupMembership::ofProcess().v1Path("memory"));
}

/**
 * Returns once the watchdog has judged the process's memory as it is now, holding the memory it
 * touched to find out (two more MiB, twice; the caller keeps them): its samples are taken one
 * after another, each judged before the next is taken, so a sample that sees the first extra
 * memory was taken after now, and one that sees the second came after it, its judgement done.
 * Empty if the watchdog did not sample within its timeout.
 */
std::vector<std::unique_ptr<Touched>> judgedByTheWatchdog(const JobMemoryLimit &limit)
{
    std::vector<std::unique_ptr<Touched>> extra;
    for (int i = 0; i < 2; ++i) {
        const std::int64_t seen = limit.peakGrowthBytes();
        extra.push_back(std::make_unique<Touched>(2 * MiB));
        if (!QTest::qWaitFor([&] { return limit.peakGrowthBytes() >= seen + MiB; }, 5000))
            return {};
    }
    return extra;
}

/** This process's threads. */
QSet<QString> threads()
{
    const QStringList list =
        QDir(QStringLiteral("/proc/self/task")).entryList(QDir::Dirs | QDir::NoDotAndDotDot);
    return QSet<QString>(list.begin(), list.end());
}

/** Whether thread `tid` of this process sleeps in poll() (the cgroup watcher between events). */
bool asleepInPoll(const QString &tid)
{
    QFile stat(QStringLiteral("/proc/self/task/%1/stat").arg(tid));
    QFile syscall(QStringLiteral("/proc/self/task/%1/syscall").arg(tid));
    if (!stat.open(QIODevice::ReadOnly) || !syscall.open(QIODevice::ReadOnly))
        return false;
    const QByteArray s = stat.readAll();
    const qsizetype afterName = s.lastIndexOf(')'); // the name may hold spaces
    const bool sleeping = afterName >= 0 && s.mid(afterName + 2, 1) == "S";
    bool number = false;
    const long call = syscall.readAll().split(' ').value(0).trimmed().toLong(&number);
    bool polls = false;
#ifdef SYS_poll
    polls = polls || call == SYS_poll;
#endif
#ifdef SYS_ppoll
    polls = polls || call == SYS_ppoll;
#endif
    return sleeping && number && polls; // "running" while it runs: not a number
}

} // namespace

class TestJobMemoryLimit : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void membershipIsReadFromProcText();
    void watchdogSeesGrowthPastTheLimit();
    void watchdogIgnoresGrowthWithin();
    void cgroupSeesTheOverrunAndLetsTheJobGoOn();
    void cgroupLiftsItsLimitRatherThanKill();
    void cgroupGrowthWithinTheLimitIsNoOverrun();
    void cgroupOfAKilledAgentIsRemoved();
};

void TestJobMemoryLimit::membershipIsReadFromProcText()
{
    // A hybrid host (v1 controllers and the v2 hierarchy), as Debian 10 and this machine list it:
    // combined controllers, a named hierarchy, a path with a colon, lines that are not a cgroup.
    const core::CgroupMembership hybrid =
        core::CgroupMembership::parse("12:memory:/edgetrain-lab-1/node-2\n"
                                      "4:cpu,cpuacct:/lab:a\n"
                                      "1:name=systemd:/init.scope\n"
                                      "0::/init.scope\n"
                                      "garbage\n"
                                      "5:blkio\n"
                                      "7:pids:relative\n");
    QCOMPARE(hybrid.v1Path("memory"), std::string("/edgetrain-lab-1/node-2"));
    QCOMPARE(hybrid.v1Path("cpu"), std::string("/lab:a"));
    QCOMPARE(hybrid.v1Path("cpuacct"), std::string("/lab:a"));
    QCOMPARE(hybrid.v1Path("name=systemd"), std::string("/init.scope"));
    QCOMPARE(hybrid.v1Path("blkio"), std::string());
    QCOMPARE(hybrid.v1Path("pids"), std::string());
    QVERIFY(hybrid.has_v2);
    QCOMPARE(hybrid.v2, std::string("/init.scope"));
    QCOMPARE(hybrid.v1.size(), std::size_t(4));

    // A v2-only host (the packaged service under systemd): no v1 path, the unified one.
    const core::CgroupMembership unified =
        core::CgroupMembership::parse("0::/system.slice/edgetrain-node.service");
    QVERIFY(unified.v1.empty());
    QVERIFY(unified.has_v2);
    QCOMPARE(unified.v2, std::string("/system.slice/edgetrain-node.service"));

    QVERIFY(!core::CgroupMembership::parse("").has_v2);
    QVERIFY(core::CgroupMembership::ofProcess(-5).v1.empty()); // no /proc/-5: empty, no throw

    // This process: whatever the host, /proc/self/cgroup names at least one hierarchy, and
    // /proc/PID/cgroup of this process says the same.
    const core::CgroupMembership self = core::CgroupMembership::ofProcess();
    QVERIFY(!self.v1.empty() || self.has_v2);
    const core::CgroupMembership byPid = core::CgroupMembership::ofProcess(long(::getpid()));
    QCOMPARE(byPid.v1, self.v1);
    QCOMPARE(byPid.v2, self.v2);
}

void TestJobMemoryLimit::watchdogSeesGrowthPastTheLimit()
{
    JobMemoryLimit limit(24 * MiB, JobMemoryLimit::Enforcement::Watchdog);
    QCOMPARE(limit.enforcement(), JobMemoryLimit::Enforcement::Watchdog);
    const Touched within(12 * MiB);
    const auto judged = judgedByTheWatchdog(limit); // 16 MiB in all
    QVERIFY(!judged.empty());
    QVERIFY(!limit.exceeded());
    const Touched past(24 * MiB);
    QTRY_VERIFY_WITH_TIMEOUT(limit.exceeded(), 2000);
    QVERIFY2(limit.peakGrowthBytes() > 24 * MiB,
             qPrintable(QString::number(limit.peakGrowthBytes())));
    const QString message = QString::fromStdString(limit.overrunMessage());
    QVERIFY2(message.contains(QLatin1String("memory limit of 24.0 MiB")), qPrintable(message));
    QVERIFY2(message.contains(QLatin1String("watchdog")), qPrintable(message));
}

void TestJobMemoryLimit::watchdogIgnoresGrowthWithin()
{
    JobMemoryLimit limit(48 * MiB, JobMemoryLimit::Enforcement::Watchdog);
    {
        const Touched a(30 * MiB);
        QTRY_VERIFY_WITH_TIMEOUT(limit.peakGrowthBytes() >= 28 * MiB, 2000); // sampled
    }
    // Freed and taken again: the growth (34 MiB with the watchdog's check) is not the sum (60).
    const Touched b(30 * MiB);
    const auto judged = judgedByTheWatchdog(limit);
    QVERIFY(!judged.empty());
    QVERIFY(!limit.exceeded());
    QVERIFY2(limit.peakGrowthBytes() < 48 * MiB,
             qPrintable(QString::number(limit.peakGrowthBytes())));
}

void TestJobMemoryLimit::cgroupSeesTheOverrunAndLetsTheJobGoOn()
{
    const QString home = memoryCgroup();
    QString during;
    {
        JobMemoryLimit limit(32 * MiB);
        if (limit.enforcement() != JobMemoryLimit::Enforcement::Cgroup)
            QSKIP(qPrintable(QStringLiteral("no writable cgroup v1 memory controller here: ") +
                             QString::fromStdString(limit.description())));
        QCOMPARE(limit.hardLimitBytes(), 64 * MiB); // the headroom: max(32 MiB, a quarter)
        during = memoryCgroup();
        QVERIFY2(during.startsWith(home) &&
                     during.contains(QStringLiteral("edgetrain-job-%1").arg(::getpid())),
                 qPrintable(during));
        // 48 MiB against a limit of 32: seen at 32, and the process goes on into its headroom
        // (nothing waits below 64).
        const Touched past(48 * MiB);
        QTRY_VERIFY_WITH_TIMEOUT(limit.exceeded(), 2000);
        QVERIFY(limit.peakGrowthBytes() > 48 * MiB);
        QVERIFY(limit.peakGrowthBytes() <= 64 * MiB);
        const QString message = QString::fromStdString(limit.overrunMessage());
        QVERIFY2(message.contains(QLatin1String("memory limit of 32.0 MiB")) &&
                     message.contains(QLatin1String("a cgroup memory limit)")),
                 qPrintable(message));
    }
    // Back where it was, the job's cgroup gone, no limit.
    QCOMPARE(memoryCgroup(), home);
    QVERIFY(!QFile::exists(QStringLiteral("/sys/fs/cgroup/memory") + during));
    const Touched free(96 * MiB);
}

void TestJobMemoryLimit::cgroupLiftsItsLimitRatherThanKill()
{
    // Past the headroom the thread that faults a page in waits (the OOM killer is off in the
    // job's cgroup); the watcher lifts the limit and the allocation completes.
    JobMemoryLimit limit(32 * MiB);
    if (limit.enforcement() != JobMemoryLimit::Enforcement::Cgroup)
        QSKIP("no writable cgroup v1 memory controller here");
    const Touched past(96 * MiB);
    QVERIFY(limit.exceeded());
    QVERIFY(limit.peakGrowthBytes() > 96 * MiB);
    const QString message = QString::fromStdString(limit.overrunMessage());
    QVERIFY2(message.contains(QLatin1String("lifted past its headroom")), qPrintable(message));
}

void TestJobMemoryLimit::cgroupGrowthWithinTheLimitIsNoOverrun()
{
    const QSet<QString> before = threads();
    JobMemoryLimit limit(64 * MiB);
    if (limit.enforcement() != JobMemoryLimit::Enforcement::Cgroup)
        QSKIP("no writable cgroup v1 memory controller here");
    const QSet<QString> watcher = threads() - before;
    QCOMPARE(watcher.size(), qsizetype(1));
    const Touched a(40 * MiB);
    // The kernel signals a usage threshold while it charges the pages, so any notification
    // these 40 MiB caused is pending now; once the watcher sleeps in poll() again it has
    // handled it.
    QTRY_VERIFY_WITH_TIMEOUT(asleepInPoll(*watcher.begin()), 5000);
    QVERIFY(!limit.exceeded());
    QVERIFY2(limit.peakGrowthBytes() >= 40 * MiB,
             qPrintable(QString::number(limit.peakGrowthBytes())));
}

void TestJobMemoryLimit::cgroupOfAKilledAgentIsRemoved()
{
    // An agent killed mid-job leaves its (empty) job cgroup behind; the next job removes it.
    const QString home = QStringLiteral("/sys/fs/cgroup/memory") + memoryCgroup();
    const pid_t child = ::fork();
    if (child == 0)
        ::_exit(0);
    ::waitpid(child, nullptr, 0); // a pid nobody has now
    const QString stale = home + QStringLiteral("/edgetrain-job-%1").arg(child);
    if (::mkdir(stale.toLocal8Bit().constData(), 0755) != 0)
        QSKIP("cannot create a memory cgroup here");
    {
        JobMemoryLimit limit(16 * MiB);
        QCOMPARE(limit.enforcement(), JobMemoryLimit::Enforcement::Cgroup);
        QVERIFY(!QFile::exists(stale));
    }
    QVERIFY(!QFile::exists(stale));
}

QTEST_GUILESS_MAIN(TestJobMemoryLimit)
#include "tst_jobmemorylimit.moc"

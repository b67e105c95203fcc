// The edge lab (net/lab/edgelab.h) for real: emulated devices with the real edgetrain-node, in
// network namespaces with shaped links and cgroup limits (as root, which CI is), or as plain
// local nodes; and lab down leaving nothing behind. The speed of the emulation (step time and
// link rate against the profile) is measured in tests/benchmarks/lab_check.sh, not here.

#include "core/conv2d.h"
#include "core/error.h"
#include "core/gemm.h"
#include "net/lab/edgelab.h"
#include "net/lab/labsystem.h"
#include "net/planner/deviceprofiles.h"
#include "net/protocol/controlclient.h"
#include "net/protocol/keyfile.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <unistd.h>

using namespace edgetrain;
using namespace edgetrain::net;

namespace {

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll().trimmed() : QByteArray();
}

QString run(const QString &program, const QStringList &args)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(program, args);
    p.waitForFinished(10000);
    return QString::fromLocal8Bit(p.readAll());
}

bool alive(qint64 pid)
{
    const QByteArray stat = readAll(QStringLiteral("/proc/%1/stat").arg(pid));
    const int close = stat.lastIndexOf(')');
    return !stat.isEmpty() && !(close > 0 && stat.at(close + 2) == 'Z');
}

/** The environment a process was started with (NAME=value entries). */
QList<QByteArray> environmentOf(qint64 pid)
{
    QFile f(QStringLiteral("/proc/%1/environ").arg(pid));
    return f.open(QIODevice::ReadOnly) ? f.readAll().split('\0') : QList<QByteArray>();
}

/** Whether a node trains on the board's portable kernels: the lab says so and its process was
 *  started with them. */
bool onPortableKernels(const LabNode &n)
{
    const QList<QByteArray> env = environmentOf(n.pid);
    return n.kernels == QLatin1String("eigen, im2col") &&
           env.contains(QByteArrayLiteral("EDGETRAIN_GEMM=eigen")) &&
           env.contains(QByteArrayLiteral("EDGETRAIN_CONV=im2col"));
}

/** Everything on this machine whose name carries the lab's id. */
QStringList leftovers(const QString &id)
{
    QStringList found;
    for (const QString &ns : QDir(QStringLiteral("/run/netns")).entryList(QDir::Files))
        if (ns.contains(id))
            found << QStringLiteral("netns ") + ns;
    for (const QString &link :
         QDir(QStringLiteral("/sys/class/net")).entryList(QDir::AllEntries | QDir::NoDotAndDotDot))
        if (link.contains(id))
            found << QStringLiteral("link ") + link;
    for (const QString &root :
         {QStringLiteral("/sys/fs/cgroup/cpu"), QStringLiteral("/sys/fs/cgroup/memory"),
          QStringLiteral("/sys/fs/cgroup")})
        if (QFileInfo::exists(root + QStringLiteral("/edgetrain-lab-") + id))
            found << QStringLiteral("cgroup ") + root + QStringLiteral("/edgetrain-lab-") + id;
    return found;
}

} // namespace

class TestEdgeLab : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void profilesByIdAliasAndFile();
    void devicesListParsed();
    void boardKernelsByArch();
    void spawnSetsTheEnvironment();
    void emulatedDevicesUpAndDown();
    void timeScaleFitsTheLabIntoThisMachine();
    void secondLabInTheSameFolderRefused();
    void failedStartRemovesWhatItMade();
    void labStateRefusesForeignNames();
    void withoutEmulationPlainLocalNodes();

private:
    static void requireRoot();
    LabOptions options(const QString &dir, const QString &devices) const;
    QTemporaryDir m_dir;
};

void TestEdgeLab::requireRoot()
{
    const QStringList missing = EdgeLab::missingCapabilities();
    if (::geteuid() != 0)
        QSKIP("the edge lab needs root (CI runs as root)");
    if (!missing.isEmpty())
        QFAIL(qPrintable(missing.join(QStringLiteral("; "))));
}

LabOptions TestEdgeLab::options(const QString &dir, const QString &devices) const
{
    LabOptions o;
    o.devices = EdgeLab::parseDevices(devices);
    o.dir = dir;
    o.node_program = QStringLiteral(EDGETRAIN_BIN_DIR "/edgetrain-node");
    o.host_core_gflops = 100.0; // fixed, so the quotas are known here
    o.link_bits_per_second = 50'000'000;
    return o;
}

void TestEdgeLab::profilesByIdAliasAndFile()
{
    QCOMPARE(DeviceProfiles::find(QStringLiteral("pi3")).id, std::string("pi3b"));
    QCOMPARE(DeviceProfiles::find(QStringLiteral("pi4")).id, std::string("pi4b-4gb"));
    QCOMPARE(DeviceProfiles::find(QStringLiteral("pi5-4gb")).ram_bytes, std::int64_t(4) << 30);
    try {
        DeviceProfiles::find(QStringLiteral("pi9"));
        QFAIL("an unknown profile was accepted");
    } catch (const core::SpecError &e) {
        QVERIFY2(
            QString::fromUtf8(e.what()).contains(QLatin1String("unknown device profile 'pi9'")) &&
                QString::fromUtf8(e.what()).contains(QLatin1String("pi3b (pi3)")),
            e.what());
    }
    // The user's own folder: a new device, and one built-in replaced.
    const QString mine = m_dir.filePath(QStringLiteral("mine"));
    QDir().mkpath(mine);
    core::DeviceProfile custom = DeviceProfiles::find(QStringLiteral("pi3b"));
    custom.core_gflops = 3.3;
    custom.sources["core_gflops"] = "edgetrain-cli bench on our own Pi 3";
    QFile f(mine + QStringLiteral("/pi3b.json"));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(QByteArray::fromStdString(custom.toJson().dump(2)));
    f.close();
    qputenv("EDGETRAIN_DEVICE_DIR", mine.toUtf8());
    QCOMPARE(DeviceProfiles::find(QStringLiteral("pi3")).core_gflops, 3.3);
    // A bad file there is named, with its field.
    QFile bad(mine + QStringLiteral("/broken.json"));
    QVERIFY(bad.open(QIODevice::WriteOnly));
    bad.write(
        QByteArray::fromStdString(custom.toJson().set("id", "broken").set("cores", 0).dump()));
    bad.close();
    try {
        DeviceProfiles::all();
        QFAIL("a bad user profile was accepted");
    } catch (const core::SpecError &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(mine + QStringLiteral("/broken.json: ")) &&
                     QString::fromUtf8(e.what()).contains(QLatin1String("field \"cores\"")),
                 e.what());
    }
    qunsetenv("EDGETRAIN_DEVICE_DIR");
    // a path is read as a file
    QCOMPARE(DeviceProfiles::find(mine + QStringLiteral("/pi3b.json")).core_gflops, 3.3);
}

void TestEdgeLab::devicesListParsed()
{
    const auto d = EdgeLab::parseDevices(QStringLiteral("pi3:3, pi4:1,jetson-nano"));
    QCOMPARE(int(d.size()), 3);
    QCOMPARE(d[0].count, 3);
    QCOMPARE(d[1].profile.id, std::string("pi4b-4gb"));
    QCOMPARE(d[2].count, 1);
    for (const char *bad : {"pi3:0", "pi3:x", "", "pi3:65"})
        QVERIFY_THROWS_EXCEPTION(core::SpecError, EdgeLab::parseDevices(QLatin1String(bad)));
}

void TestEdgeLab::boardKernelsByArch()
{
    // An arm64 board has no oneDNN (Debian builds it for amd64 alone): its node is told to
    // train on the portable kernels, in words core reads as Eigen's GEMM and im2col.
    const QStringList arm = EdgeLab::boardKernels(DeviceProfiles::find(QStringLiteral("pi4")));
    QCOMPARE(arm, (QStringList{QStringLiteral("EDGETRAIN_GEMM=eigen"),
                               QStringLiteral("EDGETRAIN_CONV=im2col")}));
    QCOMPARE(core::parseGemmBackend(arm[0].section(QLatin1Char('='), 1).toStdString()),
             core::GemmBackend::Eigen);
    QCOMPARE(core::parseConvBackend(arm[1].section(QLatin1Char('='), 1).toStdString()),
             core::ConvBackend::Im2col);
    for (const char *id : {"pi3b", "pi5-8gb", "jetson-nano"})
        QCOMPARE(EdgeLab::boardKernels(DeviceProfiles::find(QLatin1String(id))), arm);
    // An x86-64 device keeps this machine's default (oneDNN where it is built in).
    QCOMPARE(EdgeLab::boardKernels(DeviceProfiles::find(QStringLiteral("laptop"))), QStringList());
}

void TestEdgeLab::spawnSetsTheEnvironment()
{
    // What the lab asks for wins over what this process has (a user's EDGETRAIN_GEMM=dnnl
    // would otherwise reach an arm64 node), and each name is there once.
    qputenv("EDGETRAIN_GEMM", "dnnl");
    const QString out = m_dir.filePath(QStringLiteral("env.out"));
    const qint64 pid = LabSystem::spawn(
        QStringLiteral("/usr/bin/env"), {}, QString(), {},
        m_dir.filePath(QStringLiteral("env.log")), out,
        {QStringLiteral("EDGETRAIN_GEMM=eigen"), QStringLiteral("EDGETRAIN_CONV=im2col")});
    qunsetenv("EDGETRAIN_GEMM");
    QTRY_VERIFY_WITH_TIMEOUT(LabSystem::startTime(pid) == 0, 5000);
    const QList<QByteArray> lines = readAll(out).split('\n');
    QCOMPARE(lines.count(QByteArrayLiteral("EDGETRAIN_GEMM=eigen")), 1);
    QCOMPARE(lines.count(QByteArrayLiteral("EDGETRAIN_CONV=im2col")), 1);
    QVERIFY(!lines.contains(QByteArrayLiteral("EDGETRAIN_GEMM=dnnl")));
    QCOMPARE(lines.count(QByteArrayLiteral("OMP_WAIT_POLICY=PASSIVE")), 1);
    QVERIFY(lines.contains(QByteArray("PATH=") + qgetenv("PATH"))); // the rest is inherited
}

void TestEdgeLab::emulatedDevicesUpAndDown()
{
    requireRoot();
    const QString dir = m_dir.filePath(QStringLiteral("lab"));
    const LabState lab = EdgeLab::up(options(dir, QStringLiteral("pi3:1,pi4:1")));
    QVERIFY(lab.not_emulated.isEmpty() ||
            lab.not_emulated.join(QLatin1Char(' ')).contains(QLatin1String("netem")));
    QCOMPARE(int(lab.nodes.size()), 2);
    QCOMPARE(lab.time_scale, 1.0);
    QVERIFY(!leftovers(lab.id).isEmpty());

    // The files every other command is pointed at.
    QCOMPARE(readAll(dir + QStringLiteral("/nodes")),
             QByteArray((lab.nodes[0].address + QStringLiteral(":47700\n") + lab.nodes[1].address +
                         QStringLiteral(":47700"))
                            .toUtf8()));
    QByteArray key;
    QString error;
    QVERIFY2(readKeyFile(lab.key_file, &key, &error), qPrintable(error));
    QCOMPARE(QFile::permissions(lab.key_file) & (QFile::ReadOther | QFile::ReadGroup),
             QFile::Permissions());

    const core::DeviceProfile pi3 = DeviceProfiles::find(QStringLiteral("pi3"));
    const LabNode &n = lab.nodes[0];
    QCOMPARE(n.name, QStringLiteral("pi3b-1"));
    QVERIFY(QFileInfo::exists(QStringLiteral("/run/netns/") + n.netns));
    // CPU: 4 cores x 2.7 GFLOP/s against 100 here = 0.108 of a core, the quota corrected once by
    // the engine's measured share (within a factor of 2), and the share then measured near it;
    // memory: RAM less the OS.
    QCOMPARE(n.cpu_cores, 4 * pi3.core_gflops / 100.0);
    QVERIFY2(n.cpu_quota_cores >= 0.5 * n.cpu_cores && n.cpu_quota_cores <= 2 * n.cpu_cores,
             qPrintable(QString::number(n.cpu_quota_cores)));
    QVERIFY2(std::abs(n.measured_cores / n.cpu_cores - 1) < 0.25,
             qPrintable(QString::number(n.measured_cores)));
    // The quota's period: the shortest that gives the device 2 ms of CPU a period, 10-100 ms
    // (this one: 2 ms / 0.108 = 18.5 ms).
    const qint64 period = std::clamp<qint64>(std::llround(2000.0 / n.cpu_cores), 10000, 100000);
    QVERIFY(period > 10000 && period < 100000);
    const QByteArray quota =
        QByteArray::number(qint64(std::llround(n.cpu_quota_cores * double(period))));
    QCOMPARE(n.memory_limit_bytes, pi3.usableBytes());
    if (QFileInfo::exists(n.cpu_cgroup + QStringLiteral("/cpu.cfs_quota_us"))) {
        QCOMPARE(readAll(n.cpu_cgroup + QStringLiteral("/cpu.cfs_period_us")),
                 QByteArray::number(period));
        QCOMPARE(readAll(n.cpu_cgroup + QStringLiteral("/cpu.cfs_quota_us")), quota);
        QCOMPARE(readAll(n.memory_cgroup + QStringLiteral("/memory.limit_in_bytes")).toLongLong(),
                 pi3.usableBytes());
    } else {
        QCOMPARE(readAll(n.cpu_cgroup + QStringLiteral("/cpu.max")),
                 quota + ' ' + QByteArray::number(period));
        QCOMPARE(readAll(n.memory_cgroup + QStringLiteral("/memory.max")).toLongLong(),
                 pi3.usableBytes());
    }
    QVERIFY(readAll(n.cpu_cgroup + QStringLiteral("/cgroup.procs"))
                .split('\n')
                .contains(QByteArray::number(n.pid)));
    // The link, both ends, at 50 Mbit/s.
    QVERIFY2(run(QStringLiteral("tc"), {QStringLiteral("qdisc"), QStringLiteral("show"),
                                        QStringLiteral("dev"), n.host_link})
                 .contains(QLatin1String("rate 50Mbit")),
             qPrintable(n.host_link));
    QVERIFY(run(QStringLiteral("tc"),
                {QStringLiteral("-n"), n.netns, QStringLiteral("qdisc"), QStringLiteral("show"),
                 QStringLiteral("dev"), QStringLiteral("eth0")})
                .contains(QLatin1String("rate 50Mbit")));

    // The node says it is the device, and its metrics are the device's: memory is the limit.
    ControlClient client(n.address, n.port, key);
    QSignalSpy ready(&client, &ControlClient::ready);
    QList<SystemSample> samples;
    connect(&client, &ControlClient::metrics, this, [&](const SystemSample &s) { samples << s; });
    client.connectToNode();
    QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 10000);
    QCOMPARE(client.node().name, QStringLiteral("pi3b-1"));
    QCOMPARE(client.node().cores, 4);
    QCOMPARE(client.node().ram_bytes, pi3.ram_bytes);
    QCOMPARE(client.node().cpu_model, QString::fromStdString(pi3.cpu_model));
    QCOMPARE(client.node().device_profile, QStringLiteral("pi3b"));
    client.subscribeMetrics();
    QTRY_VERIFY_WITH_TIMEOUT(samples.size() >= 2, 8000);
    QCOMPARE(samples.last().memory_total_bytes, pi3.usableBytes());
    QVERIFY(samples.last().memory_available_bytes > pi3.usableBytes() / 2);
    client.close();

    for (const LabNode &node : lab.nodes) {
        const LabNodeStatus s = EdgeLab::status(node);
        QVERIFY(s.running && s.answering);
        QVERIFY2(onPortableKernels(node), qPrintable(node.name));
    }
    const QStringList removed = EdgeLab::down(dir);
    QVERIFY2(removed.size() >= 5, qPrintable(removed.join(QLatin1Char('\n'))));
    QCOMPARE(leftovers(lab.id), QStringList());
    for (const LabNode &node : lab.nodes)
        QTRY_VERIFY_WITH_TIMEOUT(!alive(node.pid), 5000);
    QVERIFY(!QFileInfo::exists(dir + QStringLiteral("/lab.json")));
    QVERIFY(!QFileInfo::exists(dir + QStringLiteral("/cluster.key")));
    QVERIFY(QFileInfo::exists(n.log)); // the logs stay
}

void TestEdgeLab::timeScaleFitsTheLabIntoThisMachine()
{
    requireRoot();
    const QString dir = m_dir.filePath(QStringLiteral("scaled"));
    LabOptions o = options(dir, QStringLiteral("pi5:2"));
    // A machine whose 90 % hold exactly half of two Pi 5s: every device and link 2x slower
    // (or more, where a Pi 5 would need more of its cores than it has threads).
    const int cores = QThread::idealThreadCount();
    const double device = 4 * 15.1;
    o.host_core_gflops = 2 * device / (2 * 0.9 * cores);
    const LabState lab = EdgeLab::up(o);
    const double expected = std::max(2.0, device / o.host_core_gflops / std::min(4, cores));
    QVERIFY2(std::abs(lab.time_scale - expected) < 1e-9,
             qPrintable(QString::number(lab.time_scale)));
    for (const LabNode &n : lab.nodes) {
        QVERIFY(std::abs(n.cpu_cores - device / o.host_core_gflops / expected) < 1e-9);
        // the link slows with the devices: 50 Mbit/s / time_scale
        QCOMPARE(n.link_bits_per_second, std::int64_t(50e6 / expected));
    }
    EdgeLab::down(dir);
    QCOMPARE(leftovers(lab.id), QStringList());
}

void TestEdgeLab::secondLabInTheSameFolderRefused()
{
    requireRoot();
    const QString dir = m_dir.filePath(QStringLiteral("twice"));
    const LabState lab = EdgeLab::up(options(dir, QStringLiteral("pi3:1")));
    try {
        EdgeLab::up(options(dir, QStringLiteral("pi3:1")));
        QFAIL("a second lab in the same folder was started");
    } catch (const core::Error &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("already up")), e.what());
    }
    QVERIFY(EdgeLab::status(lab.nodes[0]).answering); // the first is untouched
    EdgeLab::down(dir);
    QCOMPARE(leftovers(lab.id), QStringList());
}

void TestEdgeLab::failedStartRemovesWhatItMade()
{
    requireRoot();
    // The second node dies at start, after the first is up and the second's namespace, link
    // and cgroups were made: up throws, and nothing of the lab is left.
    const QString fake = m_dir.filePath(QStringLiteral("bin/edgetrain-node"));
    QDir().mkpath(QFileInfo(fake).path());
    QFile script(fake);
    QVERIFY(script.open(QIODevice::WriteOnly));
    script.write(
        "#!/bin/sh\ncase \"$*\" in *pi3b-2*) echo 'cannot bind control port' >&2; exit 1;; "
        "esac\nexec '" EDGETRAIN_BIN_DIR "/edgetrain-node' \"$@\"\n");
    script.close();
    script.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    const QString dir = m_dir.filePath(QStringLiteral("failed"));
    LabOptions o = options(dir, QStringLiteral("pi3:2"));
    o.node_program = fake;
    QString id;
    qint64 firstPid = 0;
    const EdgeLab::Progress progress = [&](const QString &line) {
        const QRegularExpressionMatch m =
            QRegularExpression(QStringLiteral("namespace etlab([0-9a-f]{4})-")).match(line);
        if (m.hasMatch())
            id = m.captured(1);
        // "pi3b-1 up: ..." : its pid is in lab.json by then
        if (line.startsWith(QLatin1String("pi3b-1 up:")))
            firstPid = EdgeLab::read(dir).nodes.at(0).pid;
    };
    try {
        EdgeLab::up(o, progress);
        QFAIL("a lab whose node died was reported up");
    } catch (const core::Error &e) {
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("pi3b-2 stopped at start")) &&
                     QString::fromUtf8(e.what()).contains(QLatin1String("cannot bind control")),
                 e.what());
    }
    QVERIFY(!id.isEmpty());
    QCOMPARE(leftovers(id), QStringList());
    QVERIFY(!QFileInfo::exists(dir + QStringLiteral("/lab.json")));
    // the first node (a real one) was stopped
    QVERIFY(firstPid > 0);
    QTRY_VERIFY_WITH_TIMEOUT(!alive(firstPid), 5000);
}

void TestEdgeLab::labStateRefusesForeignNames()
{
    // lab down acts as root on the names in lab.json: none outside the lab's own is taken.
    const LabState good = [] {
        LabState s;
        s.id = QStringLiteral("1a2b");
        s.bridge = QStringLiteral("etlab1a2b");
        LabNode n;
        n.name = QStringLiteral("pi3b-1");
        n.netns = QStringLiteral("etlab1a2b-1");
        n.host_link = QStringLiteral("etl1a2bh1");
        n.cpu_cgroup = QStringLiteral("/sys/fs/cgroup/cpu/edgetrain-lab-1a2b/pi3b-1");
        s.nodes.push_back(n);
        return s;
    }();
    QCOMPARE(LabState::fromJson(good.toJson(), "lab.json").nodes.size(), std::size_t(1));
    for (const auto &[field, value] :
         {std::pair{"netns", "eth0"}, std::pair{"host_link", "eth0"},
          std::pair{"cpu_cgroup", "/sys/fs/cgroup/cpu"}, std::pair{"bridge", "docker0"}}) {
        LabState bad = good;
        const QString v = QLatin1String(value);
        const std::string f = field;
        (f == "bridge"      ? bad.bridge
         : f == "netns"     ? bad.nodes[0].netns
         : f == "host_link" ? bad.nodes[0].host_link
                            : bad.nodes[0].cpu_cgroup) = v;
        try {
            LabState::fromJson(bad.toJson(), "lab.json");
            QFAIL(field);
        } catch (const core::FormatError &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String(field)), e.what());
        }
    }
}

void TestEdgeLab::withoutEmulationPlainLocalNodes()
{
    const QString dir = m_dir.filePath(QStringLiteral("plain"));
    LabOptions o = options(dir, QStringLiteral("pi3:2,laptop:1"));
    o.emulate = false;
    QStringList said;
    const LabState lab = EdgeLab::up(o, [&](const QString &line) { said << line; });
    QVERIFY(lab.not_emulated.join(QLatin1Char(' ')).contains(QLatin1String("plain local nodes")));
    QCOMPARE(int(lab.nodes.size()), 3);
    QVERIFY(lab.bridge.isEmpty());
    QVERIFY(lab.nodes[0].port != lab.nodes[1].port);
    // The Pis train on the board's kernels, and lab up says so; the laptop on this machine's.
    for (const char *pi : {"pi3b-1", "pi3b-2"})
        QVERIFY2(said.contains(QLatin1String(pi) +
                               QStringLiteral(": arm64 profile — trains on the portable kernels "
                                              "(Eigen GEMM, im2col) as the board would")),
                 qPrintable(said.join(QLatin1Char('\n'))));
    QVERIFY(onPortableKernels(lab.nodes[0]) && onPortableKernels(lab.nodes[1]));
    QCOMPARE(lab.nodes[2].name, QStringLiteral("laptop-i5-8250u-1"));
    QVERIFY(lab.nodes[2].kernels.isEmpty());
    QVERIFY(!environmentOf(lab.nodes[2].pid).contains(QByteArrayLiteral("EDGETRAIN_GEMM=eigen")));
    QCOMPARE(EdgeLab::read(dir).nodes[1].kernels, lab.nodes[1].kernels); // kept in lab.json
    QByteArray key;
    QString error;
    QVERIFY(readKeyFile(lab.key_file, &key, &error));
    for (const LabNode &n : lab.nodes) {
        QCOMPARE(n.address, QStringLiteral("127.0.0.1"));
        QVERIFY(n.netns.isEmpty() && n.cpu_cgroup.isEmpty() && n.cpu_cores == 0.0);
        ControlClient client(n.address, n.port, key);
        QSignalSpy ready(&client, &ControlClient::ready);
        client.connectToNode();
        QTRY_COMPARE_WITH_TIMEOUT(ready.count(), 1, 10000);
        QCOMPARE(client.node().name, n.name);
        QCOMPARE(client.node().device_profile, n.profile_id);
        client.close();
    }
    EdgeLab::down(dir);
    for (const LabNode &n : lab.nodes)
        QTRY_VERIFY_WITH_TIMEOUT(!alive(n.pid), 5000);
}

QTEST_GUILESS_MAIN(TestEdgeLab)
#include "tst_edgelab.moc"

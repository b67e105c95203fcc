// EdgeLab::up: making a lab, step by step, recording every name in lab.json before the thing
// it names exists, so that whatever stops it halfway (an error, Ctrl-C, a kill) leaves a lab
// that `lab down` removes.

#include "core/error.h"
#include "core/gemm.h"
#include "core/parallel.h"
#include "net/lab/edgelab.h"
#include "net/lab/labsystem.h"
#include "net/protocol/discovery.h"
#include "net/protocol/keyfile.h"

#include <QDir>
#include <QFileInfo>
#include <QRandomGenerator>
#include <QSaveFile>
#include <QThread>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

namespace edgetrain::net {

using namespace LabSystem;

namespace {

constexpr int kControlPort = 47700;
constexpr std::int64_t kMinQuotaUs = 1000; // the kernel's floor
// A device limited to a share q of a core runs at this machine's speed for q x the quota's period
// and then waits out the rest of it. With the kernel's default period of 100 ms a Pi 3 (q ~ 0.04)
// computes 4 ms and stalls 96 ms, longer than one of its training steps: in a synchronous group
// a node waiting at the allreduce for a stalled partner loses its own period's quota (unused
// quota does not carry over), so groups trained slower than the devices would (issue #12's
// planner check: up to 17-19 ms a step). The period is the shortest that still gives each
// device this much CPU time per period, 10-100 ms.
constexpr std::int64_t kQuotaSliceUs = 2000;

std::int64_t cpuPeriodUs(double cores)
{
    return std::clamp<std::int64_t>(std::llround(double(kQuotaSliceUs) / std::max(cores, 1e-3)),
                                    10000, 100000);
}
// What edgetrain-node itself takes (Qt, the sockets, the sampler): kept out of the job's budget.
constexpr std::int64_t kAgentBytes = std::int64_t(96) << 20;
// A profile's link figure is TCP goodput (iperf); tc shapes whole Ethernet frames, of which
// 1448 of every 1514 bytes are TCP payload (IPv4, TCP with timestamps).
constexpr double kFrameOverhead = 1514.0 / 1448.0;

class LabBuilder
{
public:
    LabBuilder(const LabOptions &o, const EdgeLab::Progress &progress)
        : m_o(o), m_progress(progress)
    {}

    LabState build();
    /** What this builder has made so far (empty id: nothing yet). */
    const LabState &made() const { return m_lab; }

private:
    void say(const QString &line) const
    {
        if (m_progress)
            m_progress(line);
    }
    void checkStop() const
    {
        if (m_o.stop && m_o.stop->load())
            throw core::Error("lab up was stopped; what it had made is removed");
    }
    void plan();
    void makeBridge();
    void makeNode(const core::DeviceProfile &profile, int number);
    void makeNetwork(LabNode &n);
    void makeCgroups(LabNode &n, const core::DeviceProfile &profile, QStringList &procs);
    void checkQuota(LabNode &n, int threads, const QStringList &procs);
    void startNode(LabNode &n, const QStringList &args, const QStringList &procs,
                   const QStringList &environment);
    void writeQuota(const LabNode &n, double cores) const;

    const LabOptions &m_o;
    const EdgeLab::Progress &m_progress;
    LabState m_lab;
    bool m_emulate = false;
    Cgroups m_cgroups = Cgroups::None;
    QString m_prefix; // "10.213.N."
    bool m_netem = true;
    double m_freeGemm = 0.0; // this machine's GEMM throughput, one thread, no quota
};

void LabBuilder::plan()
{
    const QStringList missing = m_o.emulate ? EdgeLab::missingCapabilities() : QStringList();
    m_emulate = m_o.emulate && missing.isEmpty();
    if (!m_o.emulate)
        m_lab.not_emulated << QStringLiteral("emulation switched off: plain local nodes");
    for (const QString &m : missing)
        m_lab.not_emulated << m;
    if (!m_emulate && m_o.emulate)
        m_lab.not_emulated << QStringLiteral(
            "falling back to plain local nodes on 127.0.0.1: the profiles' names and figures, "
            "but this machine's speed, memory and loopback");

    // CPU quotas: each device's GEMM rate in cores of this machine. All devices slow down
    // together (time_scale) when the lab needs more than 90 % of this machine, or when a device
    // would need more cores than it has threads (a device faster per core than this machine).
    m_lab.host_core_gflops = m_o.host_core_gflops > 0 ? m_o.host_core_gflops : EdgeLab::calibrate();
    say(QStringLiteral("this machine: %1 GFLOP/s per core (engine GEMM, one thread)")
            .arg(m_lab.host_core_gflops, 0, 'f', 1));
    const int hostCores = std::max(1, QThread::idealThreadCount());
    double needed = 0.0, perThread = 0.0;
    for (const LabOptions::Devices &d : m_o.devices) {
        const double cores = d.profile.deviceGflops() / m_lab.host_core_gflops;
        needed += d.count * cores;
        perThread = std::max(perThread, cores / std::min(d.profile.cores, hostCores));
    }
    m_lab.time_scale = m_o.time_scale > 0 ? m_o.time_scale
                                          : std::max({1.0, needed / (0.9 * hostCores), perThread});
    if (m_emulate && m_lab.time_scale > 1.0 + 1e-9)
        say(QStringLiteral("the lab needs %1 cores of this machine's %2: every device and link "
                           "runs %3x slower than its profile")
                .arg(needed, 0, 'f', 2)
                .arg(hostCores)
                .arg(m_lab.time_scale, 0, 'f', 2));
    m_cgroups = m_emulate ? cgroups() : Cgroups::None;
}

void LabBuilder::makeBridge()
{
    m_prefix = freeSubnetPrefix();
    m_lab.subnet = m_prefix + QStringLiteral("0/24");
    m_lab.bridge = QStringLiteral("etlab%1").arg(m_lab.id);
    m_lab.save();
    run(QStringLiteral("ip"), {QStringLiteral("link"), QStringLiteral("add"), m_lab.bridge,
                               QStringLiteral("type"), QStringLiteral("bridge")});
    run(QStringLiteral("ip"),
        {QStringLiteral("addr"), QStringLiteral("add"), m_prefix + QStringLiteral("1/24"),
         QStringLiteral("dev"), m_lab.bridge});
    run(QStringLiteral("ip"),
        {QStringLiteral("link"), QStringLiteral("set"), m_lab.bridge, QStringLiteral("up")});
}

void LabBuilder::makeNetwork(LabNode &n)
{
    const int index = int(m_lab.nodes.size());
    n.netns = m_lab.bridge + QLatin1Char('-') + QString::number(index);
    n.host_link = QStringLiteral("etl%1h%2").arg(m_lab.id).arg(index);
    const QString inner = QStringLiteral("etl%1n%2").arg(m_lab.id).arg(index);
    n.address = m_prefix + QString::number(10 + index);
    n.port = quint16(kControlPort);
    n.discovery_port = kDiscoveryPort;
    m_lab.nodes.back() = n;
    m_lab.save(); // recorded before it exists: whatever stops us, down removes it
    say(QStringLiteral("%1: namespace %2, %3").arg(n.name, n.netns, n.address));
    run(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("add"), n.netns});
    run(QStringLiteral("ip"),
        {QStringLiteral("link"), QStringLiteral("add"), n.host_link, QStringLiteral("type"),
         QStringLiteral("veth"), QStringLiteral("peer"), QStringLiteral("name"), inner});
    run(QStringLiteral("ip"),
        {QStringLiteral("link"), QStringLiteral("set"), inner, QStringLiteral("netns"), n.netns});
    run(QStringLiteral("ip"), {QStringLiteral("link"), QStringLiteral("set"), n.host_link,
                               QStringLiteral("master"), m_lab.bridge, QStringLiteral("up")});
    const QStringList inNs{QStringLiteral("-n"), n.netns};
    run(QStringLiteral("ip"), inNs + QStringList{QStringLiteral("link"), QStringLiteral("set"),
                                                 QStringLiteral("lo"), QStringLiteral("up")});
    run(QStringLiteral("ip"),
        inNs + QStringList{QStringLiteral("link"), QStringLiteral("set"), inner,
                           QStringLiteral("name"), QStringLiteral("eth0")});
    run(QStringLiteral("ip"), inNs + QStringList{QStringLiteral("addr"), QStringLiteral("add"),
                                                 n.address + QStringLiteral("/24"),
                                                 QStringLiteral("dev"), QStringLiteral("eth0")});
    run(QStringLiteral("ip"), inNs + QStringList{QStringLiteral("link"), QStringLiteral("set"),
                                                 QStringLiteral("eth0"), QStringLiteral("up")});
    run(QStringLiteral("ip"), inNs + QStringList{QStringLiteral("route"), QStringLiteral("add"),
                                                 QStringLiteral("default"), QStringLiteral("via"),
                                                 m_prefix + QStringLiteral("1")});

    // The link, both ways: the host end's egress is what the node receives.
    const double delay = m_o.delay_ms * m_lab.time_scale;
    const QStringList hostEnd{QStringLiteral("qdisc"), QStringLiteral("add"), QStringLiteral("dev"),
                              n.host_link};
    const QStringList nodeEnd = inNs + QStringList{QStringLiteral("qdisc"), QStringLiteral("add"),
                                                   QStringLiteral("dev"), QStringLiteral("eth0")};
    if (m_netem) {
        try {
            run(QStringLiteral("tc"),
                hostEnd + netemArgs(n.link_bits_per_second, delay, m_o.loss_percent));
        } catch (const core::Error &e) {
            if (!QString::fromUtf8(e.what()).contains(QLatin1String("unknown")))
                throw;
            m_netem = false; // this kernel has no sch_netem
            if (m_o.delay_ms > 0 || m_o.loss_percent > 0)
                m_lab.not_emulated << QStringLiteral(
                    "link delay and loss: this kernel has no netem qdisc (sch_netem); links are "
                    "shaped to their rate only (tbf)");
        }
    }
    if (m_netem) {
        run(QStringLiteral("tc"),
            nodeEnd + netemArgs(n.link_bits_per_second, delay, m_o.loss_percent));
    } else if (n.link_bits_per_second > 0) {
        run(QStringLiteral("tc"), hostEnd + tbfArgs(n.link_bits_per_second));
        run(QStringLiteral("tc"), nodeEnd + tbfArgs(n.link_bits_per_second));
    }
}

void LabBuilder::writeQuota(const LabNode &n, double cores) const
{
    const std::int64_t period = cpuPeriodUs(n.cpu_cores); // the profile's, not the correction's
    const QByteArray us = QByteArray::number(
        qint64(std::max(kMinQuotaUs, std::int64_t(std::llround(cores * double(period))))));
    if (m_cgroups == Cgroups::V1) {
        writeFile(n.cpu_cgroup + QStringLiteral("/cpu.cfs_period_us"),
                  QByteArray::number(qint64(period)));
        writeFile(n.cpu_cgroup + QStringLiteral("/cpu.cfs_quota_us"), us);
    } else {
        writeFile(n.cpu_cgroup + QStringLiteral("/cpu.max"),
                  us + ' ' + QByteArray::number(qint64(period)));
    }
}

void LabBuilder::makeCgroups(LabNode &n, const core::DeviceProfile &profile, QStringList &procs)
{
    n.cpu_cores = profile.deviceGflops() / m_lab.host_core_gflops / m_lab.time_scale;
    n.cpu_quota_cores = n.cpu_cores;
    n.memory_limit_bytes = profile.usableBytes();
    n.cpu_cgroup =
        cgroupParent(m_cgroups, QStringLiteral("cpu"), m_lab.id) + QLatin1Char('/') + n.name;
    n.memory_cgroup =
        cgroupParent(m_cgroups, QStringLiteral("memory"), m_lab.id) + QLatin1Char('/') + n.name;
    m_lab.nodes.back() = n;
    m_lab.save();
    makeCgroup(m_cgroups, n.cpu_cgroup);
    if (n.memory_cgroup != n.cpu_cgroup)
        makeCgroup(m_cgroups, n.memory_cgroup);
    writeQuota(n, n.cpu_cores);
    const QByteArray limit = QByteArray::number(qint64(n.memory_limit_bytes));
    if (m_cgroups == Cgroups::V1) {
        writeFile(n.memory_cgroup + QStringLiteral("/memory.limit_in_bytes"), limit);
        // No swapping past the limit either, where swap is accounted.
        const QString memsw = n.memory_cgroup + QStringLiteral("/memory.memsw.limit_in_bytes");
        if (QFileInfo::exists(memsw))
            writeFile(memsw, limit);
        procs << n.cpu_cgroup + QStringLiteral("/cgroup.procs")
              << n.memory_cgroup + QStringLiteral("/cgroup.procs");
    } else {
        writeFile(n.memory_cgroup + QStringLiteral("/memory.max"), limit);
        const QString swap = n.memory_cgroup + QStringLiteral("/memory.swap.max");
        if (QFileInfo::exists(swap))
            writeFile(swap, "0");
        procs << n.cpu_cgroup + QStringLiteral("/cgroup.procs");
    }
}

void LabBuilder::checkQuota(LabNode &n, int threads, const QStringList &procs)
{
    // From outside: the engine's GEMM throughput inside the cgroup against this machine's
    // unlimited, as a share of a core. A small quota yields less than its share (every burst
    // starts cold), so it is corrected once by what was measured, and measured again. The
    // window holds ~40 quota periods (one that starts mid-period is off by at most one
    // period's quota), 1-5 s.
    if (m_freeGemm == 0.0) {
        const int kept = core::threadCount();
        core::setThreadCount(1);
        m_freeGemm = core::measureGemmThroughput(256, std::chrono::milliseconds(500));
        core::setThreadCount(kept);
    }
    const double window = std::clamp(
        4.0 * double(cpuPeriodUs(n.cpu_cores)) / 1e6 / std::max(n.cpu_cores, 1e-3), 1.0, 5.0);
    const QString out = m_lab.dir + QStringLiteral("/logs/") + n.name + QStringLiteral(".gemm");
    auto share = [&] {
        checkStop();
        const qint64 pid = spawn(m_o.node_program,
                                 {QStringLiteral("--measure-gemm"), QString::number(window, 'f', 2),
                                  QStringLiteral("--threads"), QString::number(threads)},
                                 QString(), procs, n.log, out);
        const qint64 start = startTime(pid);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (isOurNode(pid, start) && std::chrono::steady_clock::now() < until)
            QThread::msleep(20);
        const double gflops = readFile(out).toDouble();
        if (!(gflops > 0))
            throw core::Error("the CPU check of " + n.name.toStdString() +
                              " printed no GEMM rate (log: " + n.log.toStdString() + ")");
        return gflops / m_freeGemm;
    };
    n.measured_cores = share();
    n.cpu_quota_cores = std::clamp(n.cpu_cores * n.cpu_cores / n.measured_cores, 0.5 * n.cpu_cores,
                                   2.0 * n.cpu_cores);
    writeQuota(n, n.cpu_quota_cores);
    n.measured_cores = share();
    m_lab.nodes.back() = n;
    say(QStringLiteral("%1: CPU quota %2 cores for the profile's %3, measured %4")
            .arg(n.name)
            .arg(n.cpu_quota_cores, 0, 'f', 4)
            .arg(n.cpu_cores, 0, 'f', 4)
            .arg(n.measured_cores, 0, 'f', 4));
}

void LabBuilder::startNode(LabNode &n, const QStringList &args, const QStringList &procs,
                           const QStringList &environment)
{
    checkStop();
    const QString portFile =
        m_lab.dir + QStringLiteral("/logs/") + n.name + QStringLiteral(".port");
    n.pid = spawn(m_o.node_program, args, n.netns, procs, n.log, portFile, environment);
    n.start_time = startTime(n.pid);
    m_lab.nodes.back() = n;
    m_lab.save();
    // It prints its control port once listening.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (true) {
        const QByteArray port = readFile(portFile);
        if (!port.isEmpty()) {
            n.port = quint16(port.toUInt());
            break;
        }
        if (!isOurNode(n.pid, n.start_time)) {
            const QByteArray log = readFile(n.log).trimmed().right(400);
            throw core::Error(
                "edgetrain-node " + n.name.toStdString() + " stopped at start: " +
                (log.isEmpty() ? "it wrote nothing to " + n.log.toStdString() : log.toStdString()));
        }
        if (std::chrono::steady_clock::now() > deadline)
            throw core::Error("edgetrain-node " + n.name.toStdString() +
                              " did not start listening within 15 s (log: " + n.log.toStdString() +
                              ")");
        checkStop();
        QThread::msleep(50);
    }
    m_lab.nodes.back() = n;
    m_lab.save();
    if (!answers(n.address, n.port, 5000))
        throw core::Error("edgetrain-node " + n.name.toStdString() + " at " +
                          n.address.toStdString() + ":" + std::to_string(n.port) +
                          " does not answer (log: " + n.log.toStdString() + ")");
    say(QStringLiteral("%1 up: %2:%3, %4 cores of this machine, %5 MiB, %6 Mbit/s")
            .arg(n.name, n.address)
            .arg(n.port)
            .arg(n.cpu_cores, 0, 'f', 3)
            .arg(n.memory_limit_bytes >> 20)
            .arg(double(n.link_bits_per_second) / 1e6, 0, 'f', 1));
}

void LabBuilder::makeNode(const core::DeviceProfile &profile, int number)
{
    checkStop();
    LabNode n;
    n.name = QString::fromStdString(profile.id) + QLatin1Char('-') + QString::number(number);
    n.profile_id = QString::fromStdString(profile.id);
    n.log = m_lab.dir + QStringLiteral("/logs/") + n.name + QStringLiteral(".log");
    const QString profilePath =
        m_lab.dir + QStringLiteral("/profiles/") + n.profile_id + QStringLiteral(".json");
    const std::int64_t usable = profile.usableBytes();
    QStringList args{QStringLiteral("--name"),
                     n.name,
                     QStringLiteral("--key-file"),
                     m_lab.key_file,
                     QStringLiteral("--device-profile"),
                     profilePath,
                     QStringLiteral("--emulated"),
                     QStringLiteral("--memory-limit"),
                     QString::number(std::max<std::int64_t>(usable - kAgentBytes, usable / 2)),
                     QStringLiteral("--print-port")};
    if (!m_o.cameras.isEmpty()) {
        args << QStringLiteral("--camera")
             << m_o.cameras.at(qsizetype(m_lab.nodes.size()) % m_o.cameras.size());
        if (!m_o.camera_rate.isEmpty())
            args << QStringLiteral("--camera-rate") << m_o.camera_rate;
    }
    QStringList procs;
    m_lab.nodes.push_back(n);
    if (m_emulate) {
        // The profile's link is TCP goodput; the wire carries the frames around it.
        n.link_bits_per_second =
            m_o.link_bits_per_second > 0
                ? std::int64_t(double(m_o.link_bits_per_second) / m_lab.time_scale)
                : std::int64_t(double(profile.link_bits_per_second) * kFrameOverhead /
                               m_lab.time_scale);
        makeNetwork(n);
        makeCgroups(n, profile, procs);
        // As many engine threads as the quota has cores: the profile's per-core figure is
        // already the all-cores-busy rate, and more threads than the quota holds only
        // time-slice against each other inside it.
        const int threads = std::clamp(int(std::ceil(n.cpu_cores - 1e-9)), 1, profile.cores);
        checkQuota(n, threads, procs);
        args << QStringLiteral("--port") << QString::number(kControlPort)
             << QStringLiteral("--threads") << QString::number(threads);
    } else {
        // Plain local nodes share this machine's ports: each its own.
        n.address = QStringLiteral("127.0.0.1");
        n.discovery_port = freeUdpPort();
        args << QStringLiteral("--port") << QStringLiteral("0") << QStringLiteral("--threads")
             << QString::number(std::min(profile.cores, std::max(1, QThread::idealThreadCount())))
             << QStringLiteral("--discovery-port") << QString::number(n.discovery_port)
             << QStringLiteral("--no-multicast");
        m_lab.nodes.back() = n;
    }
    // The quota check above ran on this machine's default kernels, as its unlimited reference
    // did; the node trains on the board's.
    const QStringList kernels = EdgeLab::boardKernels(profile);
    if (!kernels.isEmpty()) {
        n.kernels = QStringLiteral("eigen, im2col");
        say(QStringLiteral("%1: %2 profile — trains on the portable kernels (Eigen GEMM, im2col) "
                           "as the board would")
                .arg(n.name, profile.arch == "aarch64" ? QStringLiteral("arm64")
                                                       : QString::fromStdString(profile.arch)));
    }
    startNode(n, args, procs, kernels);
}

LabState LabBuilder::build()
{
    if (m_o.devices.empty())
        throw core::SpecError("a lab needs at least one device");
    const QString dir = QFileInfo(m_o.dir).absoluteFilePath();
    checkLabFolder(dir);
    if (QFileInfo::exists(dir + QStringLiteral("/lab.json"))) {
        const LabState old = EdgeLab::read(dir);
        if (std::any_of(old.nodes.begin(), old.nodes.end(),
                        [](const LabNode &n) { return isOurNode(n.pid, n.start_time); }))
            throw core::Error("a lab is already up in '" + dir.toStdString() +
                              "' (edgetrain-cli lab down --out " + dir.toStdString() + ")");
        EdgeLab::down(dir, m_progress); // what a lab that was stopped left behind
    }
    if (!QFileInfo(m_o.node_program).isExecutable())
        throw core::IoError("edgetrain-node not found at '" + m_o.node_program.toStdString() + "'");
    m_lab.dir = dir;
    m_lab.delay_ms = m_o.delay_ms;
    m_lab.loss_percent = m_o.loss_percent;
    m_lab.key_file = dir + QStringLiteral("/cluster.key");
    for (const char *sub : {"/logs", "/profiles"}) {
        const QString folder = dir + QLatin1String(sub);
        if (QFileInfo(folder).isSymLink() || !QDir().mkpath(folder))
            throw core::IoError("cannot make '" + folder.toStdString() + "'");
    }
    QString error;
    QFile::remove(m_lab.key_file);
    if (!writeNewKeyFile(m_lab.key_file, &error))
        throw core::IoError(error.toStdString());
    giveToSudoUser(m_lab.key_file);
    plan();
    // From here on this lab's names are recorded (lab.json) before what they name exists.
    m_lab.id = QStringLiteral("%1").arg(QRandomGenerator::system()->bounded(0x10000), 4, 16,
                                        QLatin1Char('0'));
    m_lab.save();
    for (const LabOptions::Devices &d : m_o.devices) {
        const QString path = dir + QStringLiteral("/profiles/") +
                             QString::fromStdString(d.profile.id) + QStringLiteral(".json");
        QSaveFile f(path);
        if (!f.open(QIODevice::WriteOnly) ||
            f.write(QByteArray::fromStdString(d.profile.toJson().dump(2))) < 0 || !f.commit())
            throw core::IoError("cannot write '" + path.toStdString() + "'");
    }
    if (m_emulate)
        makeBridge();
    for (const LabOptions::Devices &d : m_o.devices)
        for (int k = 1; k <= d.count; ++k)
            makeNode(d.profile, k);
    QSaveFile nodes(dir + QStringLiteral("/nodes"));
    QByteArray list;
    for (const LabNode &n : m_lab.nodes)
        list += (n.address + QLatin1Char(':') + QString::number(n.port)).toUtf8() + '\n';
    if (!nodes.open(QIODevice::WriteOnly) || nodes.write(list) < 0 || !nodes.commit())
        throw core::IoError("cannot write '" + dir.toStdString() + "/nodes'");
    giveToSudoUser(dir + QStringLiteral("/nodes"));
    m_lab.save();
    return m_lab;
}

} // namespace

LabState EdgeLab::up(const LabOptions &options, const Progress &progress)
{
    LabBuilder builder(options, progress);
    try {
        return builder.build();
    } catch (const core::Error &e) {
        // Remove what this builder made (never another lab in the folder) and say what could
        // not be removed.
        const LabState &made = builder.made();
        if (made.id.isEmpty())
            throw;
        QStringList failed;
        removeAll(made, &failed, {});
        if (failed.isEmpty())
            for (const char *file : {"/lab.json", "/nodes", "/cluster.key"})
                QFile::remove(made.dir + QLatin1String(file));
        if (!failed.isEmpty())
            throw core::Error(std::string(e.what()) + "; and lab up could not remove: " +
                              failed.join(QStringLiteral("; ")).toStdString() + " (run lab down)");
        throw;
    }
}

} // namespace edgetrain::net

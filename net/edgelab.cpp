#include "edgelab.h"

#include "core/error.h"
#include "core/gemm.h"
#include "core/numbertext.h"
#include "core/parallel.h"
#include "deviceprofiles.h"
#include "discovery.h"
#include "keyfile.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRandomGenerator>
#include <QSaveFile>
#include <QStandardPaths>
#include <QTcpSocket>
#include <QThread>
#include <QUdpSocket>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace edgetrain::net {

namespace {

constexpr int kControlPort = 47700;
constexpr std::int64_t kCpuPeriodUs = 100000;
constexpr std::int64_t kMinQuotaUs = 1000; // the kernel's floor for cfs_quota_us
// What edgetrain-node itself takes (Qt, the sockets, the sampler): kept out of the job's budget.
constexpr std::int64_t kAgentBytes = std::int64_t(96) << 20;

const QString kCgroupRoot = QStringLiteral("/sys/fs/cgroup");

QString tool(const QString &name)
{
    const QString found =
        QStandardPaths::findExecutable(name, {QStringLiteral("/usr/sbin"), QStringLiteral("/sbin"),
                                              QStringLiteral("/usr/bin"), QStringLiteral("/bin")});
    return found.isEmpty() ? name : found;
}

/** Runs a system tool; throws core::Error with the command and what it printed. */
QString run(const QString &program, const QStringList &args)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(tool(program), args);
    const QString command = program + QLatin1Char(' ') + args.join(QLatin1Char(' '));
    if (!p.waitForStarted(5000))
        throw core::Error("cannot run '" + command.toStdString() +
                          "': " + p.errorString().toStdString());
    if (!p.waitForFinished(15000)) {
        p.kill();
        p.waitForFinished(1000);
        throw core::Error("'" + command.toStdString() + "' did not finish in 15 s");
    }
    const QString out = QString::fromLocal8Bit(p.readAll()).trimmed();
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
        throw core::Error("'" + command.toStdString() + "' failed: " + out.toStdString());
    return out;
}

bool tryRun(const QString &program, const QStringList &args)
{
    try {
        run(program, args);
        return true;
    } catch (const core::Error &) {
        return false;
    }
}

enum class Cgroups { None, V1, V2 };

Cgroups cgroupKind()
{
    if (QFileInfo::exists(kCgroupRoot + QStringLiteral("/cpu/cpu.cfs_quota_us")) &&
        QFileInfo::exists(kCgroupRoot + QStringLiteral("/memory/memory.limit_in_bytes")))
        return Cgroups::V1;
    QFile controllers(kCgroupRoot + QStringLiteral("/cgroup.controllers"));
    if (controllers.open(QIODevice::ReadOnly)) {
        const QByteArray c = controllers.readAll();
        if (c.contains("cpu") && c.contains("memory"))
            return Cgroups::V2;
    }
    return Cgroups::None;
}

void writeFile(const QString &path, const QByteArray &text)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(text) != text.size() || !f.flush())
        throw core::Error("cannot write '" + text.trimmed().toStdString() + "' to '" +
                          path.toStdString() + "': " + f.errorString().toStdString());
}

QByteArray readFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll().trimmed() : QByteArray();
}

/** Whether `pid` is alive and is an edgetrain-node (a pid the kernel reused is not ours). */
bool isOurNode(qint64 pid)
{
    if (pid <= 0 || ::kill(pid_t(pid), 0) != 0)
        return false;
    const QByteArray cmdline = readFile(QStringLiteral("/proc/%1/cmdline").arg(pid));
    const QByteArray stat = readFile(QStringLiteral("/proc/%1/stat").arg(pid));
    const int close = stat.lastIndexOf(')');
    const bool zombie = close > 0 && stat.size() > close + 2 && stat.at(close + 2) == 'Z';
    return !zombie && cmdline.contains("edgetrain-node");
}

QString subnetPrefix()
{
    // The first 10.213.N.0/24 no interface of this machine is on.
    const QString addresses = run(
        QStringLiteral("ip"), {QStringLiteral("-o"), QStringLiteral("-4"), QStringLiteral("addr")});
    for (int n = 1; n < 255; ++n) {
        const QString prefix = QStringLiteral("10.213.%1.").arg(n);
        if (!addresses.contains(QStringLiteral(" ") + prefix))
            return prefix;
    }
    throw core::Error("no free 10.213.N.0/24 subnet for the lab's bridge");
}

QString rate(std::int64_t bitsPerSecond)
{
    return QStringLiteral("%1bit").arg(bitsPerSecond);
}

/** A token bucket at the link's rate: for kernels without netem (no delay, no loss). */
QStringList tbf(std::int64_t bitsPerSecond)
{
    // The bucket holds 10 ms at the rate (at least 32 KiB, so one burst of full frames passes),
    // the queue 50 ms.
    const std::int64_t burst = std::max<std::int64_t>(32 * 1024, bitsPerSecond / 8 / 100);
    return {QStringLiteral("root"),    QStringLiteral("tbf"),   QStringLiteral("rate"),
            rate(bitsPerSecond),       QStringLiteral("burst"), QString::number(burst),
            QStringLiteral("latency"), QStringLiteral("50ms")};
}

QStringList netem(std::int64_t bitsPerSecond, double delayMs, double lossPercent)
{
    QStringList args{QStringLiteral("root"), QStringLiteral("netem")};
    if (bitsPerSecond > 0)
        args << QStringLiteral("rate") << rate(bitsPerSecond);
    if (delayMs > 0)
        args << QStringLiteral("delay")
             << QString::fromStdString(core::NumberText::format(delayMs)) + QStringLiteral("ms");
    if (lossPercent > 0)
        args << QStringLiteral("loss")
             << QString::fromStdString(core::NumberText::format(lossPercent)) + QLatin1Char('%');
    // A queue of about 100 ms at the link's rate (netem's default of 1000 packets would let a
    // slow link buffer seconds of traffic).
    const std::int64_t packets =
        bitsPerSecond > 0 ? std::clamp<std::int64_t>(bitsPerSecond / 8 / 1500 / 10, 64, 10000)
                          : 1000;
    args << QStringLiteral("limit") << QString::number(packets);
    return args;
}

/**
 * Starts edgetrain-node in `netns` (empty: this one) and the cgroups' `procs` files, detached
 * (its own session, so it outlives `lab up`). Everything the child does between fork and exec
 * is async-signal-safe: the strings are made before the fork.
 */
qint64 spawnNode(const QString &program, const QStringList &args, const QString &netns,
                 const QStringList &procsFiles, const QString &logPath, const QString &portPath)
{
    std::vector<QByteArray> argBytes{QFile::encodeName(program)};
    for (const QString &a : args)
        argBytes.push_back(a.toLocal8Bit());
    std::vector<char *> argv;
    for (QByteArray &a : argBytes)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<QByteArray> envBytes;
    for (const QString &e : QProcess::systemEnvironment())
        if (!e.startsWith(QLatin1String("OMP_WAIT_POLICY=")) &&
            !e.startsWith(QLatin1String("GOMP_SPINCOUNT=")))
            envBytes.push_back(e.toLocal8Bit());
    // OpenMP threads that spin while they wait would burn the quota doing nothing.
    envBytes.emplace_back("OMP_WAIT_POLICY=PASSIVE");
    envBytes.emplace_back("GOMP_SPINCOUNT=0");
    std::vector<char *> envp;
    for (QByteArray &e : envBytes)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    const QByteArray nsPath =
        netns.isEmpty() ? QByteArray() : QFile::encodeName(QStringLiteral("/run/netns/") + netns);
    std::vector<QByteArray> procs;
    for (const QString &p : procsFiles)
        procs.push_back(QFile::encodeName(p));
    const QByteArray log = QFile::encodeName(logPath);
    const QByteArray port = QFile::encodeName(portPath);

    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0)
        throw core::Error("pipe() failed");
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(ready[0]);
        ::close(ready[1]);
        throw core::Error("fork() failed");
    }
    if (pid == 0) {
        // The child: report the step that failed through the pipe (one byte), then exit.
        auto fail = [&](char step) {
            [[maybe_unused]] const auto n = ::write(ready[1], &step, 1);
            ::_exit(127);
        };
        ::setsid();
        char digits[24];
        int len = 0;
        for (pid_t v = ::getpid(); v > 0; v /= 10)
            digits[len++] = char('0' + v % 10);
        char text[24];
        for (int i = 0; i < len; ++i)
            text[i] = digits[len - 1 - i];
        for (const QByteArray &p : procs) {
            const int fd = ::open(p.constData(), O_WRONLY | O_CLOEXEC);
            if (fd < 0 || ::write(fd, text, std::size_t(len)) != len)
                fail('c');
            ::close(fd);
        }
        if (!nsPath.isEmpty()) {
            const int fd = ::open(nsPath.constData(), O_RDONLY | O_CLOEXEC);
            if (fd < 0 || ::setns(fd, CLONE_NEWNET) != 0)
                fail('n');
            ::close(fd);
        }
        const int in = ::open("/dev/null", O_RDONLY);
        const int out = ::open(port.constData(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int err = ::open(log.constData(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (in < 0 || out < 0 || err < 0 || ::dup2(in, 0) < 0 || ::dup2(out, 1) < 0 ||
            ::dup2(err, 2) < 0)
            fail('o');
        ::execve(argv[0], argv.data(), envp.data());
        fail('e');
    }
    ::close(ready[1]);
    char step = 0;
    const ssize_t n = ::read(ready[0], &step, 1); // 0 bytes: exec succeeded (CLOEXEC closed it)
    ::close(ready[0]);
    if (n == 1) {
        ::waitpid(pid, nullptr, 0);
        const char *what = step == 'c'   ? "join its cgroups"
                           : step == 'n' ? "enter its network namespace"
                           : step == 'o' ? "open its log files"
                                         : "start";
        throw core::Error("edgetrain-node could not " + std::string(what) + " (" +
                          program.toStdString() + ")");
    }
    // Reap it when it ends, so a stopped node does not linger as a zombie of `lab up`'s caller.
    std::thread([pid] { ::waitpid(pid, nullptr, 0); }).detach();
    return qint64(pid);
}

quint16 freeUdpPort()
{
    QUdpSocket s;
    if (!s.bind(QHostAddress::LocalHost, 0))
        throw core::Error("no free UDP port on 127.0.0.1");
    return s.localPort();
}

bool answers(const QString &address, quint16 port, int timeoutMs)
{
    QTcpSocket s;
    s.connectToHost(address, port);
    const bool ok = s.waitForConnected(timeoutMs);
    s.abort();
    return ok;
}

core::Json nodeJson(const LabNode &n)
{
    core::Json j;
    j.set("name", n.name.toStdString()).set("profile", n.profile_id.toStdString());
    j.set("netns", n.netns.toStdString()).set("host_link", n.host_link.toStdString());
    j.set("address", n.address.toStdString()).set("port", int(n.port));
    j.set("discovery_port", int(n.discovery_port));
    j.set("pid", std::int64_t(n.pid)).set("cpu_cores", n.cpu_cores);
    j.set("cpu_quota_cores", n.cpu_quota_cores).set("measured_cores", n.measured_cores);
    j.set("memory_limit_bytes", n.memory_limit_bytes);
    j.set("link_bits_per_second", n.link_bits_per_second);
    j.set("cpu_cgroup", n.cpu_cgroup.toStdString());
    j.set("memory_cgroup", n.memory_cgroup.toStdString());
    j.set("log", n.log.toStdString());
    return j;
}

QString str(const core::Json &j, const char *key)
{
    const core::Json *v = j.find(key);
    return v && v->isString() ? QString::fromStdString(v->toString()) : QString();
}

double num(const core::Json &j, const char *key)
{
    const core::Json *v = j.find(key);
    return v && v->isNumber() ? v->toDouble() : 0.0;
}

} // namespace

core::Json LabState::toJson() const
{
    core::Json j;
    j.set("format", kFormat).set("id", id.toStdString()).set("dir", dir.toStdString());
    j.set("bridge", bridge.toStdString()).set("subnet", subnet.toStdString());
    j.set("key_file", key_file.toStdString()).set("host_core_gflops", host_core_gflops);
    j.set("time_scale", time_scale).set("delay_ms", delay_ms).set("loss_percent", loss_percent);
    core::Json missing = core::Json::array();
    for (const QString &m : not_emulated)
        missing.push(m.toStdString());
    j.set("not_emulated", std::move(missing));
    core::Json list = core::Json::array();
    for (const LabNode &n : nodes)
        list.push(nodeJson(n));
    j.set("nodes", std::move(list));
    return j;
}

LabState LabState::fromJson(const core::Json &j, const std::string &source)
{
    if (!j.isObject() || !j.find("format") || num(j, "format") != kFormat || !j.find("nodes") ||
        !j.find("nodes")->isArray())
        throw core::FormatError(source + ": not a lab state (format " + std::to_string(kFormat) +
                                ")");
    LabState s;
    s.id = str(j, "id");
    s.dir = str(j, "dir");
    s.bridge = str(j, "bridge");
    s.subnet = str(j, "subnet");
    s.key_file = str(j, "key_file");
    s.host_core_gflops = num(j, "host_core_gflops");
    s.time_scale = num(j, "time_scale");
    s.delay_ms = num(j, "delay_ms");
    s.loss_percent = num(j, "loss_percent");
    if (const core::Json *m = j.find("not_emulated"); m && m->isArray())
        for (const core::Json &line : m->toArray())
            if (line.isString())
                s.not_emulated << QString::fromStdString(line.toString());
    for (const core::Json &e : j.find("nodes")->toArray()) {
        LabNode n;
        n.name = str(e, "name");
        n.profile_id = str(e, "profile");
        n.netns = str(e, "netns");
        n.host_link = str(e, "host_link");
        n.address = str(e, "address");
        n.port = quint16(num(e, "port"));
        n.discovery_port = quint16(num(e, "discovery_port"));
        n.pid = qint64(num(e, "pid"));
        n.cpu_cores = num(e, "cpu_cores");
        n.cpu_quota_cores = num(e, "cpu_quota_cores");
        n.measured_cores = num(e, "measured_cores");
        n.memory_limit_bytes = std::int64_t(num(e, "memory_limit_bytes"));
        n.link_bits_per_second = std::int64_t(num(e, "link_bits_per_second"));
        n.cpu_cgroup = str(e, "cpu_cgroup");
        n.memory_cgroup = str(e, "memory_cgroup");
        n.log = str(e, "log");
        s.nodes.push_back(std::move(n));
    }
    return s;
}

double EdgeLab::calibrate()
{
    const int threads = core::threadCount();
    core::setThreadCount(1);
    // The fastest of three medians of 1024^3 products (~10 ms each): the machine is shared, and
    // a slow sample is the noise.
    double best = 0.0;
    for (int i = 0; i < 3; ++i)
        best = std::max(best, core::measureGemmGflops(1024, 5));
    core::setThreadCount(threads);
    return best;
}

QStringList EdgeLab::missingCapabilities()
{
    QStringList missing;
    if (::geteuid() != 0)
        missing << QStringLiteral("not root: network namespaces, tc and cgroups need root");
    if (QStandardPaths::findExecutable(
            QStringLiteral("ip"),
            {QStringLiteral("/usr/sbin"), QStringLiteral("/sbin"), QStringLiteral("/usr/bin")})
            .isEmpty() ||
        QStandardPaths::findExecutable(
            QStringLiteral("tc"),
            {QStringLiteral("/usr/sbin"), QStringLiteral("/sbin"), QStringLiteral("/usr/bin")})
            .isEmpty())
        missing << QStringLiteral("ip or tc not found (Debian package iproute2)");
    if (!QFileInfo::exists(QStringLiteral("/proc/self/ns/net")))
        missing << QStringLiteral("this kernel has no network namespaces");
    if (cgroupKind() == Cgroups::None)
        missing << QStringLiteral("no cpu and memory cgroup controllers under /sys/fs/cgroup");
    return missing;
}

std::vector<LabOptions::Devices> EdgeLab::parseDevices(const QString &text)
{
    std::vector<LabOptions::Devices> out;
    for (const QString &part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const int colon = part.lastIndexOf(QLatin1Char(':'));
        LabOptions::Devices d;
        QString name = part.trimmed();
        if (colon > 0) {
            bool ok = false;
            d.count = part.mid(colon + 1).toInt(&ok);
            if (!ok || d.count < 1 || d.count > 64)
                throw core::SpecError("--devices: '" + part.toStdString() +
                                      "': the count after ':' must be an integer from 1 to 64");
            name = part.left(colon).trimmed();
        }
        d.profile = DeviceProfiles::find(name);
        out.push_back(std::move(d));
    }
    if (out.empty())
        throw core::SpecError("--devices: no device given (e.g. pi3:3,pi4:1)");
    return out;
}

LabState EdgeLab::read(const QString &dir)
{
    const QString path = dir + QStringLiteral("/lab.json");
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        throw core::IoError("no lab in '" + dir.toStdString() + "' (no lab.json)");
    const QByteArray text = f.readAll();
    return LabState::fromJson(
        core::Json::parse(std::string_view(text.constData(), std::size_t(text.size())),
                          path.toStdString()),
        path.toStdString());
}

LabNodeStatus EdgeLab::status(const LabNode &node)
{
    LabNodeStatus s;
    s.running = isOurNode(node.pid);
    s.answering = s.running && answers(node.address, node.port, 1000);
    if (!node.memory_cgroup.isEmpty()) {
        for (const char *file : {"/memory.usage_in_bytes", "/memory.current"}) {
            const QByteArray v = readFile(node.memory_cgroup + QLatin1String(file));
            if (!v.isEmpty()) {
                s.memory_bytes = v.toLongLong();
                break;
            }
        }
    }
    if (!node.cpu_cgroup.isEmpty())
        for (const QByteArray &line :
             readFile(node.cpu_cgroup + QStringLiteral("/cpu.stat")).split('\n'))
            if (line.startsWith("nr_throttled "))
                s.throttled_count = line.mid(13).toLongLong();
    return s;
}

LabState EdgeLab::up(const LabOptions &o, const Progress &progress)
{
    auto say = [&](const QString &line) {
        if (progress)
            progress(line);
    };
    if (o.devices.empty())
        throw core::SpecError("a lab needs at least one device");
    QDir().mkpath(o.dir);
    const QString dir = QFileInfo(o.dir).absoluteFilePath();
    if (QFileInfo::exists(dir + QStringLiteral("/lab.json"))) {
        const LabState old = read(dir);
        if (std::any_of(old.nodes.begin(), old.nodes.end(),
                        [](const LabNode &n) { return isOurNode(n.pid); }))
            throw core::Error("a lab is already up in '" + dir.toStdString() +
                              "' (edgetrain-cli lab down --out " + dir.toStdString() + ")");
        down(dir, progress); // what a crashed lab left behind
    }
    if (!QFileInfo(o.node_program).isExecutable())
        throw core::IoError("edgetrain-node not found at '" + o.node_program.toStdString() + "'");

    LabState lab;
    lab.id = QStringLiteral("%1").arg(QRandomGenerator::system()->bounded(0x10000), 4, 16,
                                      QLatin1Char('0'));
    lab.dir = dir;
    lab.delay_ms = o.delay_ms;
    lab.loss_percent = o.loss_percent;
    lab.key_file = dir + QStringLiteral("/cluster.key");
    QDir().mkpath(dir + QStringLiteral("/logs"));
    QDir().mkpath(dir + QStringLiteral("/profiles"));
    QString error;
    if (!writeNewKeyFile(lab.key_file, &error))
        throw core::IoError(error.toStdString());

    const QStringList missing = o.emulate ? missingCapabilities() : QStringList();
    const bool emulate = o.emulate && missing.isEmpty();
    if (!o.emulate)
        lab.not_emulated << QStringLiteral("emulation switched off: plain local nodes");
    for (const QString &m : missing)
        lab.not_emulated << m;
    if (!emulate && o.emulate)
        lab.not_emulated << QStringLiteral(
            "falling back to plain local nodes on 127.0.0.1: the profiles' names and figures, "
            "but this machine's speed, memory and loopback");

    // CPU quotas: each device's GEMM rate in cores of this machine, all slowed by time_scale
    // when the lab needs more than 90 % of this machine.
    lab.host_core_gflops = o.host_core_gflops > 0 ? o.host_core_gflops : calibrate();
    say(QStringLiteral("this machine: %1 GFLOP/s per core (engine GEMM, one thread)")
            .arg(lab.host_core_gflops, 0, 'f', 1));
    double needed = 0.0;
    for (const LabOptions::Devices &d : o.devices)
        needed += d.count * d.profile.deviceGflops() / lab.host_core_gflops;
    const double available = 0.9 * std::max(1, QThread::idealThreadCount());
    lab.time_scale = o.time_scale > 0 ? o.time_scale : std::max(1.0, needed / available);
    if (emulate && lab.time_scale > 1.0 + 1e-9)
        say(QStringLiteral("the lab needs %1 cores of this machine's %2: every device and link "
                           "runs %3x slower than its profile")
                .arg(needed, 0, 'f', 2)
                .arg(QThread::idealThreadCount())
                .arg(lab.time_scale, 0, 'f', 2));

    const Cgroups cgroups = emulate ? cgroupKind() : Cgroups::None;
    bool netemWorks = true;
    double freeGemm = 0.0; // this machine's GEMM throughput, one thread, no quota
    auto cleanupOnFailure = [&] {
        try {
            QSaveFile f(dir + QStringLiteral("/lab.json"));
            if (f.open(QIODevice::WriteOnly)) {
                f.write(QByteArray::fromStdString(lab.toJson().dump(2)));
                f.commit();
            }
            down(dir);
        } catch (const core::Error &) {
        }
    };
    try {
        QString prefix;
        if (emulate) {
            prefix = subnetPrefix();
            lab.subnet = prefix + QStringLiteral("0/24");
            lab.bridge = QStringLiteral("etlab%1").arg(lab.id);
            run(QStringLiteral("ip"), {QStringLiteral("link"), QStringLiteral("add"), lab.bridge,
                                       QStringLiteral("type"), QStringLiteral("bridge")});
            run(QStringLiteral("ip"),
                {QStringLiteral("addr"), QStringLiteral("add"), prefix + QStringLiteral("1/24"),
                 QStringLiteral("dev"), lab.bridge});
            run(QStringLiteral("ip"),
                {QStringLiteral("link"), QStringLiteral("set"), lab.bridge, QStringLiteral("up")});
            if (cgroups == Cgroups::V2)
                tryRun(QStringLiteral("sh"),
                       {QStringLiteral("-c"),
                        QStringLiteral("echo +cpu +memory > %1/cgroup.subtree_control")
                            .arg(kCgroupRoot)});
        }
        int index = 0;
        for (const LabOptions::Devices &d : o.devices) {
            const QString profilePath = dir + QStringLiteral("/profiles/") +
                                        QString::fromStdString(d.profile.id) +
                                        QStringLiteral(".json");
            {
                QSaveFile f(profilePath);
                if (!f.open(QIODevice::WriteOnly) ||
                    f.write(QByteArray::fromStdString(d.profile.toJson().dump(2))) < 0 ||
                    !f.commit())
                    throw core::IoError("cannot write '" + profilePath.toStdString() + "'");
            }
            for (int k = 1; k <= d.count; ++k) {
                ++index;
                LabNode n;
                n.name =
                    QString::fromStdString(d.profile.id) + QLatin1Char('-') + QString::number(k);
                n.profile_id = QString::fromStdString(d.profile.id);
                n.log = dir + QStringLiteral("/logs/") + n.name + QStringLiteral(".log");
                const std::int64_t usable = d.profile.usableBytes();
                QStringList args{
                    QStringLiteral("--name"),
                    n.name,
                    QStringLiteral("--key-file"),
                    lab.key_file,
                    QStringLiteral("--device-profile"),
                    profilePath,
                    QStringLiteral("--memory-limit"),
                    QString::number(std::max<std::int64_t>(usable - kAgentBytes, usable / 2)),
                    QStringLiteral("--print-port")};
                QStringList procs;
                if (emulate) {
                    n.netns = lab.bridge + QLatin1Char('-') + QString::number(index);
                    n.host_link = QStringLiteral("etl%1h%2").arg(lab.id).arg(index);
                    const QString inner = QStringLiteral("etl%1n%2").arg(lab.id).arg(index);
                    n.address = prefix + QString::number(10 + index);
                    n.port = quint16(kControlPort);
                    say(QStringLiteral("%1: namespace %2, %3").arg(n.name, n.netns, n.address));
                    lab.nodes.push_back(n); // recorded before it exists: a failure removes it
                    run(QStringLiteral("ip"),
                        {QStringLiteral("netns"), QStringLiteral("add"), n.netns});
                    run(QStringLiteral("ip"),
                        {QStringLiteral("link"), QStringLiteral("add"), n.host_link,
                         QStringLiteral("type"), QStringLiteral("veth"), QStringLiteral("peer"),
                         QStringLiteral("name"), inner});
                    run(QStringLiteral("ip"), {QStringLiteral("link"), QStringLiteral("set"), inner,
                                               QStringLiteral("netns"), n.netns});
                    run(QStringLiteral("ip"),
                        {QStringLiteral("link"), QStringLiteral("set"), n.host_link,
                         QStringLiteral("master"), lab.bridge, QStringLiteral("up")});
                    const QStringList inNs{QStringLiteral("-n"), n.netns};
                    run(QStringLiteral("ip"),
                        inNs + QStringList{QStringLiteral("link"), QStringLiteral("set"),
                                           QStringLiteral("lo"), QStringLiteral("up")});
                    run(QStringLiteral("ip"),
                        inNs + QStringList{QStringLiteral("link"), QStringLiteral("set"), inner,
                                           QStringLiteral("name"), QStringLiteral("eth0")});
                    run(QStringLiteral("ip"),
                        inNs + QStringList{QStringLiteral("addr"), QStringLiteral("add"),
                                           n.address + QStringLiteral("/24"), QStringLiteral("dev"),
                                           QStringLiteral("eth0")});
                    run(QStringLiteral("ip"),
                        inNs + QStringList{QStringLiteral("link"), QStringLiteral("set"),
                                           QStringLiteral("eth0"), QStringLiteral("up")});
                    run(QStringLiteral("ip"),
                        inNs + QStringList{QStringLiteral("route"), QStringLiteral("add"),
                                           QStringLiteral("default"), QStringLiteral("via"),
                                           prefix + QStringLiteral("1")});
                    // The link, both ways: the host end's egress is what the node receives.
                    n.link_bits_per_second = std::int64_t(
                        double(o.link_bits_per_second > 0 ? o.link_bits_per_second
                                                          : d.profile.link_bits_per_second) /
                        lab.time_scale);
                    const double delay = o.delay_ms * lab.time_scale;
                    const QStringList hostEnd{QStringLiteral("qdisc"), QStringLiteral("add"),
                                              QStringLiteral("dev"), n.host_link};
                    const QStringList nodeEnd =
                        inNs + QStringList{QStringLiteral("qdisc"), QStringLiteral("add"),
                                           QStringLiteral("dev"), QStringLiteral("eth0")};
                    if (netemWorks) {
                        try {
                            run(QStringLiteral("tc"),
                                hostEnd + netem(n.link_bits_per_second, delay, o.loss_percent));
                        } catch (const core::Error &e) {
                            if (!QString::fromUtf8(e.what()).contains(QLatin1String("unknown")))
                                throw;
                            netemWorks = false; // this kernel has no sch_netem
                            if (o.delay_ms > 0 || o.loss_percent > 0)
                                lab.not_emulated << QStringLiteral(
                                    "link delay and loss: this kernel has no netem qdisc "
                                    "(sch_netem); links are shaped to their rate only (tbf)");
                        }
                    }
                    if (netemWorks) {
                        run(QStringLiteral("tc"),
                            nodeEnd + netem(n.link_bits_per_second, delay, o.loss_percent));
                    } else if (n.link_bits_per_second > 0) {
                        run(QStringLiteral("tc"), hostEnd + tbf(n.link_bits_per_second));
                        run(QStringLiteral("tc"), nodeEnd + tbf(n.link_bits_per_second));
                    }

                    // CPU and memory.
                    n.cpu_cores = d.profile.deviceGflops() / lab.host_core_gflops / lab.time_scale;
                    const std::int64_t quota =
                        std::max(kMinQuotaUs,
                                 std::int64_t(std::llround(n.cpu_cores * double(kCpuPeriodUs))));
                    n.memory_limit_bytes = usable;
                    const QString group = QStringLiteral("edgetrain-lab-%1/%2").arg(lab.id, n.name);
                    if (cgroups == Cgroups::V1) {
                        n.cpu_cgroup = kCgroupRoot + QStringLiteral("/cpu/") + group;
                        n.memory_cgroup = kCgroupRoot + QStringLiteral("/memory/") + group;
                    } else {
                        n.cpu_cgroup = n.memory_cgroup = kCgroupRoot + QLatin1Char('/') + group;
                    }
                    lab.nodes.back() = n;
                    if (!QDir().mkpath(n.cpu_cgroup) || !QDir().mkpath(n.memory_cgroup))
                        throw core::Error("cannot create the cgroup '" + group.toStdString() + "'");
                    if (cgroups == Cgroups::V1) {
                        writeFile(n.cpu_cgroup + QStringLiteral("/cpu.cfs_period_us"),
                                  QByteArray::number(qint64(kCpuPeriodUs)));
                        writeFile(n.cpu_cgroup + QStringLiteral("/cpu.cfs_quota_us"),
                                  QByteArray::number(qint64(quota)));
                        writeFile(n.memory_cgroup + QStringLiteral("/memory.limit_in_bytes"),
                                  QByteArray::number(qint64(usable)));
                        // No swapping past the limit either, where swap is accounted.
                        const QString memsw =
                            n.memory_cgroup + QStringLiteral("/memory.memsw.limit_in_bytes");
                        if (QFileInfo::exists(memsw))
                            writeFile(memsw, QByteArray::number(qint64(usable)));
                        procs << n.cpu_cgroup + QStringLiteral("/cgroup.procs")
                              << n.memory_cgroup + QStringLiteral("/cgroup.procs");
                    } else {
                        writeFile(n.cpu_cgroup + QStringLiteral("/cpu.max"),
                                  QByteArray::number(qint64(quota)) + ' ' +
                                      QByteArray::number(qint64(kCpuPeriodUs)));
                        writeFile(n.memory_cgroup + QStringLiteral("/memory.max"),
                                  QByteArray::number(qint64(usable)));
                        const QString swap = n.memory_cgroup + QStringLiteral("/memory.swap.max");
                        if (QFileInfo::exists(swap))
                            writeFile(swap, "0");
                        procs << n.cpu_cgroup + QStringLiteral("/cgroup.procs");
                    }
                    n.discovery_port = kDiscoveryPort;
                    // As many engine threads as the quota has cores: the profile's per-core
                    // figure is already the all-cores-busy rate, and more threads than the quota
                    // holds only time-slice against each other inside it.
                    const int threads =
                        std::clamp(int(std::ceil(n.cpu_cores - 1e-9)), 1, d.profile.cores);
                    args << QStringLiteral("--port") << QString::number(kControlPort)
                         << QStringLiteral("--threads") << QString::number(threads);

                    // Check the quota from outside: the engine's GEMM throughput inside the
                    // cgroup against this machine's unlimited, as a share of a core. A small
                    // quota yields less than its share (each burst starts cold), so it is
                    // corrected once by what was measured, and measured again.
                    const QString gemmOut =
                        dir + QStringLiteral("/logs/") + n.name + QStringLiteral(".gemm");
                    // Long enough for ~40 quota periods at this share (a window that starts
                    // mid-period is off by at most one period's quota), 1-5 s.
                    const double window = std::clamp(
                        4.0 * double(kCpuPeriodUs) / 1e6 / std::max(n.cpu_cores, 1e-3), 1.0, 5.0);
                    auto measureShare = [&] {
                        const qint64 pid = spawnNode(
                            o.node_program,
                            {QStringLiteral("--measure-gemm"), QString::number(window, 'f', 2),
                             QStringLiteral("--threads"), QString::number(threads)},
                            QString(), procs, n.log, gemmOut);
                        const auto until =
                            std::chrono::steady_clock::now() + std::chrono::seconds(30);
                        while (isOurNode(pid) && std::chrono::steady_clock::now() < until)
                            QThread::msleep(20);
                        const double gflops = readFile(gemmOut).toDouble();
                        return freeGemm > 0 ? gflops / freeGemm : 0.0;
                    };
                    auto setQuota = [&](double cores) {
                        const QByteArray us = QByteArray::number(qint64(
                            std::max(kMinQuotaUs,
                                     std::int64_t(std::llround(cores * double(kCpuPeriodUs))))));
                        if (cgroups == Cgroups::V1)
                            writeFile(n.cpu_cgroup + QStringLiteral("/cpu.cfs_quota_us"), us);
                        else
                            writeFile(n.cpu_cgroup + QStringLiteral("/cpu.max"),
                                      us + ' ' + QByteArray::number(qint64(kCpuPeriodUs)));
                    };
                    if (freeGemm == 0.0) {
                        const int kept = core::threadCount();
                        core::setThreadCount(1);
                        freeGemm = core::measureGemmThroughput(256, std::chrono::milliseconds(500));
                        core::setThreadCount(kept);
                    }
                    n.cpu_quota_cores = n.cpu_cores;
                    n.measured_cores = measureShare();
                    if (n.measured_cores > 0) {
                        n.cpu_quota_cores = std::clamp(n.cpu_cores * n.cpu_cores / n.measured_cores,
                                                       0.5 * n.cpu_cores, 2.0 * n.cpu_cores);
                        setQuota(n.cpu_quota_cores);
                        n.measured_cores = measureShare();
                    }
                    say(QStringLiteral("%1: CPU quota %2 cores for the profile's %3, measured %4")
                            .arg(n.name)
                            .arg(n.cpu_quota_cores, 0, 'f', 4)
                            .arg(n.cpu_cores, 0, 'f', 4)
                            .arg(n.measured_cores, 0, 'f', 4));
                } else {
                    // Plain local nodes share this machine's ports: each its own.
                    n.address = QStringLiteral("127.0.0.1");
                    n.discovery_port = freeUdpPort();
                    args << QStringLiteral("--port") << QStringLiteral("0")
                         << QStringLiteral("--threads")
                         << QString::number(
                                std::min(d.profile.cores, std::max(1, QThread::idealThreadCount())))
                         << QStringLiteral("--discovery-port") << QString::number(n.discovery_port)
                         << QStringLiteral("--no-multicast");
                    lab.nodes.push_back(n);
                }
                const QString portFile =
                    dir + QStringLiteral("/logs/") + n.name + QStringLiteral(".port");
                n.pid = spawnNode(o.node_program, args, n.netns, procs, n.log, portFile);
                lab.nodes.back() = n;
                // It prints its control port once listening.
                const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
                while (true) {
                    const QByteArray port = readFile(portFile);
                    if (!port.isEmpty()) {
                        n.port = quint16(port.toUInt());
                        break;
                    }
                    if (!isOurNode(n.pid))
                        throw core::Error(
                            "edgetrain-node " + n.name.toStdString() +
                            " stopped at start: " + readFile(n.log).right(400).toStdString());
                    if (std::chrono::steady_clock::now() > deadline)
                        throw core::Error("edgetrain-node " + n.name.toStdString() +
                                          " did not start listening within 15 s");
                    QThread::msleep(50);
                }
                lab.nodes.back() = n;
                if (!answers(n.address, n.port, 5000))
                    throw core::Error("edgetrain-node " + n.name.toStdString() + " at " +
                                      n.address.toStdString() + ":" + std::to_string(n.port) +
                                      " does not answer");
                say(QStringLiteral("%1 up: %2:%3, %4 cores of this machine, %5 MiB, %6 Mbit/s")
                        .arg(n.name, n.address)
                        .arg(n.port)
                        .arg(n.cpu_cores, 0, 'f', 3)
                        .arg(n.memory_limit_bytes >> 20)
                        .arg(double(n.link_bits_per_second) / 1e6, 0, 'f', 1));
            }
        }
        QSaveFile nodes(dir + QStringLiteral("/nodes"));
        QSaveFile state(dir + QStringLiteral("/lab.json"));
        QByteArray list;
        for (const LabNode &n : lab.nodes)
            list += (n.address + QLatin1Char(':') + QString::number(n.port)).toUtf8() + '\n';
        if (!nodes.open(QIODevice::WriteOnly) || nodes.write(list) < 0 || !nodes.commit() ||
            !state.open(QIODevice::WriteOnly) ||
            state.write(QByteArray::fromStdString(lab.toJson().dump(2) + "\n")) < 0 ||
            !state.commit())
            throw core::IoError("cannot write the lab's files in '" + dir.toStdString() + "'");
    } catch (...) {
        cleanupOnFailure();
        throw;
    }
    return lab;
}

QStringList EdgeLab::down(const QString &dirArg, const Progress &progress)
{
    const QString dir = QFileInfo(dirArg).absoluteFilePath();
    const LabState lab = read(dir);
    QStringList removed, failed;
    auto say = [&](const QString &line) {
        removed << line;
        if (progress)
            progress(line);
    };
    // The processes first: SIGTERM (they close their sessions), SIGKILL after 5 s.
    std::vector<qint64> pids;
    for (const LabNode &n : lab.nodes) {
        if (isOurNode(n.pid))
            pids.push_back(n.pid);
        for (const QString &group : {n.cpu_cgroup, n.memory_cgroup})
            if (!group.isEmpty())
                for (const QByteArray &p :
                     readFile(group + QStringLiteral("/cgroup.procs")).split('\n'))
                    if (!p.isEmpty() &&
                        std::find(pids.begin(), pids.end(), p.toLongLong()) == pids.end())
                        pids.push_back(p.toLongLong());
    }
    for (const qint64 pid : pids)
        ::kill(pid_t(pid), SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    auto alive = [](qint64 pid) {
        const QByteArray stat = readFile(QStringLiteral("/proc/%1/stat").arg(pid));
        const int close = stat.lastIndexOf(')');
        return !stat.isEmpty() &&
               !(close > 0 && stat.size() > close + 2 && stat.at(close + 2) == 'Z');
    };
    for (const qint64 pid : pids) {
        while (alive(pid) && std::chrono::steady_clock::now() < deadline)
            QThread::msleep(50);
        if (alive(pid)) {
            ::kill(pid_t(pid), SIGKILL);
            QThread::msleep(100);
        }
        say(QStringLiteral("process %1").arg(pid));
    }
    for (const LabNode &n : lab.nodes) {
        if (!n.netns.isEmpty() && QFileInfo::exists(QStringLiteral("/run/netns/") + n.netns)) {
            // Deleting the namespace deletes the veth pair with it.
            if (tryRun(QStringLiteral("ip"),
                       {QStringLiteral("netns"), QStringLiteral("del"), n.netns}))
                say(QStringLiteral("network namespace %1").arg(n.netns));
            else
                failed << QStringLiteral("network namespace %1").arg(n.netns);
        }
        if (!n.host_link.isEmpty()) {
            // The pair goes with the namespace, a moment later.
            const QString sys = QStringLiteral("/sys/class/net/") + n.host_link;
            for (int i = 0; i < 20 && QFileInfo::exists(sys); ++i)
                QThread::msleep(50);
            if (QFileInfo::exists(sys) &&
                !tryRun(QStringLiteral("ip"),
                        {QStringLiteral("link"), QStringLiteral("del"), n.host_link}) &&
                QFileInfo::exists(sys))
                failed << QStringLiteral("link %1").arg(n.host_link);
        }
        for (const QString &group : {n.cpu_cgroup, n.memory_cgroup}) {
            if (group.isEmpty() || !QFileInfo::exists(group))
                continue;
            // A cgroup goes once its processes are gone (they may take a moment to be reaped).
            bool gone = false;
            for (int i = 0; i < 50 && !gone; ++i) {
                gone = ::rmdir(QFile::encodeName(group).constData()) == 0;
                if (!gone)
                    QThread::msleep(100);
            }
            if (gone)
                say(QStringLiteral("cgroup %1").arg(group));
            else
                failed << QStringLiteral("cgroup %1").arg(group);
        }
    }
    for (const QString &controller :
         {QStringLiteral("/cpu/"), QStringLiteral("/memory/"), QStringLiteral("/")}) {
        const QString parent = kCgroupRoot + controller + QStringLiteral("edgetrain-lab-") + lab.id;
        if (!lab.id.isEmpty() && QFileInfo::exists(parent)) {
            if (::rmdir(QFile::encodeName(parent).constData()) == 0)
                say(QStringLiteral("cgroup %1").arg(parent));
            else
                failed << QStringLiteral("cgroup %1").arg(parent);
        }
    }
    if (!lab.bridge.isEmpty() &&
        QFileInfo::exists(QStringLiteral("/sys/class/net/") + lab.bridge)) {
        if (tryRun(QStringLiteral("ip"),
                   {QStringLiteral("link"), QStringLiteral("del"), lab.bridge}))
            say(QStringLiteral("bridge %1").arg(lab.bridge));
        else
            failed << QStringLiteral("bridge %1").arg(lab.bridge);
    }
    if (!failed.isEmpty())
        throw core::Error(
            "lab down could not remove: " + failed.join(QStringLiteral(", ")).toStdString() +
            " (lab.json is kept; run lab down again)");
    for (const QString &file :
         {QStringLiteral("/lab.json"), QStringLiteral("/nodes"), QStringLiteral("/cluster.key")})
        QFile::remove(dir + file);
    QDir(dir + QStringLiteral("/profiles")).removeRecursively();
    return removed;
}

} // namespace edgetrain::net

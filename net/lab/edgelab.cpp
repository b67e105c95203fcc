#include "net/lab/edgelab.h"

#include "core/error.h"
#include "core/gemm.h"
#include "core/numbertext.h"
#include "core/parallel.h"
#include "net/lab/labsystem.h"
#include "net/planner/deviceprofiles.h"
#include "net/protocol/discovery.h"
#include "net/protocol/keyfile.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStandardPaths>
#include <QThread>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace edgetrain::net {

using namespace LabSystem;

namespace {

constexpr int kMaxDevices = 200; // addresses .11 to .210 of the lab's /24

core::Json nodeJson(const LabNode &n)
{
    core::Json j;
    j.set("name", n.name.toStdString()).set("profile", n.profile_id.toStdString());
    j.set("netns", n.netns.toStdString()).set("host_link", n.host_link.toStdString());
    j.set("address", n.address.toStdString()).set("port", int(n.port));
    j.set("discovery_port", int(n.discovery_port));
    j.set("pid", std::int64_t(n.pid)).set("start_time", std::int64_t(n.start_time));
    j.set("cpu_cores", n.cpu_cores);
    j.set("cpu_quota_cores", n.cpu_quota_cores).set("measured_cores", n.measured_cores);
    j.set("memory_limit_bytes", n.memory_limit_bytes);
    j.set("link_bits_per_second", n.link_bits_per_second);
    j.set("cpu_cgroup", n.cpu_cgroup.toStdString());
    j.set("memory_cgroup", n.memory_cgroup.toStdString());
    j.set("log", n.log.toStdString());
    j.set("kernels", n.kernels.toStdString());
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

QStringList EdgeLab::removeAll(const LabState &lab, QStringList *failed, const Progress &progress)
{
    QStringList removed;
    auto say = [&](const QString &line) {
        removed << line;
        if (progress)
            progress(line);
    };
    // The processes: ours by pid and start time, and whatever is in the lab's cgroups.
    std::vector<std::pair<qint64, qint64>> procs; // pid, start time
    auto add = [&](qint64 pid, qint64 start) {
        if (std::none_of(procs.begin(), procs.end(), [&](const auto &p) { return p.first == pid; }))
            procs.emplace_back(pid, start);
    };
    auto inCgroups = [&] {
        for (const LabNode &n : lab.nodes)
            for (const QString &group : {n.cpu_cgroup, n.memory_cgroup})
                if (!group.isEmpty())
                    for (const QByteArray &p :
                         readFile(group + QStringLiteral("/cgroup.procs")).split('\n'))
                        if (!p.isEmpty())
                            add(p.toLongLong(), startTime(p.toLongLong()));
    };
    for (const LabNode &n : lab.nodes)
        if (isOurNode(n.pid, n.start_time))
            add(n.pid, n.start_time);
    inCgroups();
    auto alive = [](const std::pair<qint64, qint64> &p) {
        return startTime(p.first) == p.second && p.second != 0 &&
               !readFile(QStringLiteral("/proc/%1/stat").arg(p.first)).contains(") Z ");
    };
    for (const auto &p : procs)
        if (alive(p))
            ::kill(pid_t(p.first), SIGTERM); // they close their sessions
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::any_of(procs.begin(), procs.end(), alive) &&
           std::chrono::steady_clock::now() < deadline)
        QThread::msleep(50);
    for (const auto &p : procs)
        if (alive(p))
            ::kill(pid_t(p.first), SIGKILL);
    QThread::msleep(procs.empty() ? 0 : 100);
    for (const auto &p : procs) {
        if (alive(p))
            *failed << QStringLiteral("process %1 (still running after SIGKILL)").arg(p.first);
        else
            say(QStringLiteral("process %1").arg(p.first));
    }
    for (const LabNode &n : lab.nodes) {
        if (!n.netns.isEmpty() && QFileInfo::exists(QStringLiteral("/run/netns/") + n.netns)) {
            // Deleting the namespace deletes the veth pair with it.
            const QString why = tryRun(QStringLiteral("ip"),
                                       {QStringLiteral("netns"), QStringLiteral("del"), n.netns});
            if (why.isEmpty())
                say(QStringLiteral("network namespace %1").arg(n.netns));
            else
                *failed << QStringLiteral("network namespace %1 (%2)").arg(n.netns, why);
        }
        if (!n.host_link.isEmpty()) {
            // The pair goes with the namespace, a moment later.
            const QString sys = QStringLiteral("/sys/class/net/") + n.host_link;
            for (int i = 0; i < 20 && QFileInfo::exists(sys); ++i)
                QThread::msleep(50);
            if (QFileInfo::exists(sys)) {
                const QString why =
                    tryRun(QStringLiteral("ip"),
                           {QStringLiteral("link"), QStringLiteral("del"), n.host_link});
                if (!why.isEmpty() && QFileInfo::exists(sys))
                    *failed << QStringLiteral("link %1 (%2)").arg(n.host_link, why);
            }
        }
    }
    auto removeCgroup = [&](const QString &group) {
        if (group.isEmpty() || !QFileInfo::exists(group))
            return;
        // The job cgroups a node made below its own (net::JobMemoryLimit) go first: a node
        // killed mid-job leaves its (empty) one behind.
        const QStringList jobs = QDir(group).entryList(
            QStringList{QStringLiteral("edgetrain-job-*")}, QDir::Dirs | QDir::NoDotAndDotDot);
        for (const QString &job : jobs)
            ::rmdir(QFile::encodeName(group + QLatin1Char('/') + job).constData());
        // A cgroup goes once its processes are gone (they may take a moment to be reaped).
        int error = 0;
        for (int i = 0; i < 50; ++i) {
            if (::rmdir(QFile::encodeName(group).constData()) == 0) {
                say(QStringLiteral("cgroup %1").arg(group));
                return;
            }
            error = errno;
            QThread::msleep(100);
        }
        *failed
            << QStringLiteral("cgroup %1 (%2)").arg(group, QString::fromUtf8(std::strerror(error)));
    };
    QStringList parents;
    for (const LabNode &n : lab.nodes)
        for (const QString &group : {n.cpu_cgroup, n.memory_cgroup}) {
            removeCgroup(group);
            if (!group.isEmpty() && !parents.contains(QFileInfo(group).path()))
                parents << QFileInfo(group).path();
        }
    for (const QString &parent : parents)
        removeCgroup(parent);
    if (!lab.bridge.isEmpty() &&
        QFileInfo::exists(QStringLiteral("/sys/class/net/") + lab.bridge)) {
        const QString why = tryRun(QStringLiteral("ip"),
                                   {QStringLiteral("link"), QStringLiteral("del"), lab.bridge});
        if (why.isEmpty())
            say(QStringLiteral("bridge %1").arg(lab.bridge));
        else
            *failed << QStringLiteral("bridge %1 (%2)").arg(lab.bridge, why);
    }
    return removed;
}

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

void LabState::save() const
{
    QSaveFile f(dir + QStringLiteral("/lab.json"));
    if (!f.open(QIODevice::WriteOnly) ||
        f.write(QByteArray::fromStdString(toJson().dump(2) + "\n")) < 0 || !f.commit())
        throw core::IoError("cannot write '" + dir.toStdString() + "/lab.json'");
}

LabState LabState::fromJson(const core::Json &j, const std::string &source)
{
    if (!j.isObject() || !j.find("format") || num(j, "format") != kFormat || !j.find("nodes") ||
        !j.find("nodes")->isArray())
        throw core::FormatError(source + ": not a lab state (format " + std::to_string(kFormat) +
                                ")");
    LabState s;
    s.id = str(j, "id");
    auto refuse = [&](const char *field, const QString &value) {
        throw core::FormatError(source + ": field \"" + field +
                                "\" is not a name this lab gives: '" + value.toStdString() + "'");
    };
    if (!QRegularExpression(QStringLiteral("^[0-9a-f]{4}$")).match(s.id).hasMatch())
        refuse("id", s.id);
    s.dir = str(j, "dir");
    s.bridge = str(j, "bridge");
    if (!s.bridge.isEmpty() && s.bridge != QStringLiteral("etlab") + s.id)
        refuse("bridge", s.bridge);
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
    const QRegularExpression netns(QStringLiteral("^etlab%1-[0-9]+$").arg(s.id));
    const QRegularExpression link(QStringLiteral("^etl%1h[0-9]+$").arg(s.id));
    const QRegularExpression group(QStringLiteral("^/sys/fs/cgroup/(cpu/|memory/)?edgetrain-lab-%1/"
                                                  "[A-Za-z0-9._+-]+$")
                                       .arg(s.id));
    for (const core::Json &e : j.find("nodes")->toArray()) {
        LabNode n;
        n.name = str(e, "name");
        n.profile_id = str(e, "profile");
        n.netns = str(e, "netns");
        if (!n.netns.isEmpty() && !netns.match(n.netns).hasMatch())
            refuse("netns", n.netns);
        n.host_link = str(e, "host_link");
        if (!n.host_link.isEmpty() && !link.match(n.host_link).hasMatch())
            refuse("host_link", n.host_link);
        n.address = str(e, "address");
        n.port = quint16(num(e, "port"));
        n.discovery_port = quint16(num(e, "discovery_port"));
        n.pid = qint64(num(e, "pid"));
        n.start_time = qint64(num(e, "start_time"));
        n.cpu_cores = num(e, "cpu_cores");
        n.cpu_quota_cores = num(e, "cpu_quota_cores");
        n.measured_cores = num(e, "measured_cores");
        n.memory_limit_bytes = std::int64_t(num(e, "memory_limit_bytes"));
        n.link_bits_per_second = std::int64_t(num(e, "link_bits_per_second"));
        n.cpu_cgroup = str(e, "cpu_cgroup");
        n.memory_cgroup = str(e, "memory_cgroup");
        for (const QString &g : {n.cpu_cgroup, n.memory_cgroup})
            if (!g.isEmpty() && !group.match(g).hasMatch())
                refuse("cpu_cgroup/memory_cgroup", g);
        n.log = str(e, "log");
        n.kernels = str(e, "kernels");
        s.nodes.push_back(std::move(n));
    }
    return s;
}

QStringList EdgeLab::boardKernels(const core::DeviceProfile &profile)
{
    if (profile.arch == "x86_64" || profile.arch == "amd64")
        return {};
    return {QStringLiteral("EDGETRAIN_GEMM=eigen"), QStringLiteral("EDGETRAIN_CONV=im2col")};
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
        return {QStringLiteral("not root: network namespaces, tc and cgroups need root")};
    const QStringList paths{QStringLiteral("/usr/sbin"), QStringLiteral("/sbin"),
                            QStringLiteral("/usr/bin")};
    if (QStandardPaths::findExecutable(QStringLiteral("ip"), paths).isEmpty() ||
        QStandardPaths::findExecutable(QStringLiteral("tc"), paths).isEmpty())
        return {QStringLiteral("ip or tc not found (Debian package iproute2)")};
    // Tried, not assumed: a container's root may lack the capabilities.
    const QString probe = QStringLiteral("etlabprobe%1").arg(::getpid());
    if (const QString why =
            tryRun(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("add"), probe});
        !why.isEmpty())
        missing << QStringLiteral("cannot make a network namespace: ") + why;
    else
        tryRun(QStringLiteral("ip"), {QStringLiteral("netns"), QStringLiteral("del"), probe});
    const Cgroups kind = cgroups();
    if (kind == Cgroups::None) {
        missing << QStringLiteral("no cpu and memory cgroup controllers under /sys/fs/cgroup");
    } else {
        const QString test = cgroupParent(kind, QStringLiteral("cpu"), probe);
        if (::mkdir(QFile::encodeName(test).constData(), 0755) != 0)
            missing << QStringLiteral("cannot make a cgroup (%1): %2")
                           .arg(test, QString::fromUtf8(std::strerror(errno)));
        else
            ::rmdir(QFile::encodeName(test).constData());
    }
    return missing;
}

std::vector<LabOptions::Devices> EdgeLab::parseDevices(const QString &text)
{
    std::vector<LabOptions::Devices> out;
    int total = 0;
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
        total += d.count;
        auto same = std::find_if(out.begin(), out.end(), [&](const LabOptions::Devices &e) {
            return e.profile.id == d.profile.id;
        });
        if (same == out.end())
            out.push_back(std::move(d));
        else
            same->count += d.count; // "pi3:1,pi3b:2": three of one profile, named 1 to 3
    }
    if (out.empty())
        throw core::SpecError("--devices: no device given (e.g. pi3:3,pi4:1)");
    if (total > kMaxDevices)
        throw core::SpecError("--devices: " + std::to_string(total) + " devices; a lab holds " +
                              std::to_string(kMaxDevices) + " at most");
    return out;
}

std::int64_t EdgeLab::parseRate(const QString &text)
{
    std::string t = text.trimmed().toLower().toStdString();
    double scale = 1.0;
    for (const auto &[suffix, s] : {std::pair{"gbit", 1e9}, std::pair{"mbit", 1e6},
                                    std::pair{"kbit", 1e3}, std::pair{"bit", 1.0}})
        if (t.size() > std::strlen(suffix) && t.ends_with(suffix)) {
            scale = s;
            t.resize(t.size() - std::strlen(suffix));
            break;
        }
    const auto value = core::NumberText::parse(t);
    if (!value || !(*value > 0) || *value * scale < 1000 || *value * scale > 1e12)
        throw core::SpecError("'" + text.toStdString() +
                              "' is not a link rate from 1kbit to 1000gbit (e.g. 100mbit, 1gbit)");
    return std::int64_t(std::llround(*value * scale));
}

QString EdgeLab::defaultFolder()
{
    if (::geteuid() == 0)
        return QStringLiteral("/run/edgetrain-lab");
    const QString runtime = qEnvironmentVariable("XDG_RUNTIME_DIR");
    return runtime.isEmpty() ? QStringLiteral("/tmp/edgetrain-lab-%1").arg(::geteuid())
                             : runtime + QStringLiteral("/edgetrain-lab");
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
    s.running = isOurNode(node.pid, node.start_time);
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

QStringList EdgeLab::down(const QString &dirArg, const Progress &progress)
{
    const QString dir = QFileInfo(dirArg).absoluteFilePath();
    const LabState lab = read(dir);
    QStringList failed;
    const QStringList removed = removeAll(lab, &failed, progress);
    if (!failed.isEmpty())
        throw core::Error(
            "lab down could not remove: " + failed.join(QStringLiteral("; ")).toStdString() +
            (::geteuid() == 0 ? "" : " (lab down needs root)") +
            ". lab.json is kept: run lab down again");
    for (const QString &file :
         {QStringLiteral("/lab.json"), QStringLiteral("/nodes"), QStringLiteral("/cluster.key")})
        QFile::remove(dir + file);
    const QString profiles = dir + QStringLiteral("/profiles");
    if (!QFileInfo(profiles).isSymLink())
        QDir(profiles).removeRecursively();
    return removed;
}

} // namespace edgetrain::net

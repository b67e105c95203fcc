#include "net/lab/labsystem.h"

#include "core/error.h"
#include "core/numbertext.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QProcess>
#include <QStandardPaths>
#include <QTcpSocket>
#include <QUdpSocket>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace edgetrain::net::LabSystem {

namespace {

const QString kCgroupRoot = QStringLiteral("/sys/fs/cgroup");

QString tool(const QString &name)
{
    const QString found =
        QStandardPaths::findExecutable(name, {QStringLiteral("/usr/sbin"), QStringLiteral("/sbin"),
                                              QStringLiteral("/usr/bin"), QStringLiteral("/bin")});
    return found.isEmpty() ? name : found;
}

std::string reason(int error)
{
    return std::strerror(error);
}

} // namespace

QString run(const QString &program, const QStringList &args)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(tool(program), args);
    const std::string command =
        (program + QLatin1Char(' ') + args.join(QLatin1Char(' '))).toStdString();
    if (!p.waitForStarted(5000))
        throw core::Error("cannot run '" + command + "': " + p.errorString().toStdString());
    if (!p.waitForFinished(15000)) {
        p.kill();
        p.waitForFinished(1000);
        throw core::Error("'" + command + "' did not finish in 15 s");
    }
    const QString out = QString::fromLocal8Bit(p.readAll()).trimmed();
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
        throw core::Error("'" + command + "' failed: " + out.toStdString());
    return out;
}

QString tryRun(const QString &program, const QStringList &args)
{
    try {
        run(program, args);
        return {};
    } catch (const core::Error &e) {
        return QString::fromUtf8(e.what());
    }
}

Cgroups cgroups()
{
    if (QFileInfo::exists(kCgroupRoot + QStringLiteral("/cpu/cpu.cfs_quota_us")) &&
        QFileInfo::exists(kCgroupRoot + QStringLiteral("/memory/memory.limit_in_bytes")))
        return Cgroups::V1;
    const QList<QByteArray> offered =
        readFile(kCgroupRoot + QStringLiteral("/cgroup.controllers")).split(' ');
    if (offered.contains("cpu") && offered.contains("memory"))
        return Cgroups::V2;
    return Cgroups::None;
}

QString cgroupParent(Cgroups kind, const QString &controller, const QString &labId)
{
    const QString name = QStringLiteral("edgetrain-lab-") + labId;
    return kind == Cgroups::V1
               ? kCgroupRoot + QLatin1Char('/') + controller + QLatin1Char('/') + name
               : kCgroupRoot + QLatin1Char('/') + name;
}

void makeCgroup(Cgroups kind, const QString &path)
{
    const QString parent = QFileInfo(path).path();
    if (!QFileInfo::exists(parent)) {
        if (::mkdir(QFile::encodeName(parent).constData(), 0755) != 0 && errno != EEXIST)
            throw core::Error("cannot create the cgroup '" + parent.toStdString() +
                              "': " + reason(errno));
    }
    if (kind == Cgroups::V2) {
        // A v2 group has cpu.max and memory.max only if its parent hands those down.
        for (const QString &p : {kCgroupRoot, parent})
            writeFile(p + QStringLiteral("/cgroup.subtree_control"), "+cpu +memory");
    }
    if (::mkdir(QFile::encodeName(path).constData(), 0755) != 0)
        throw core::Error("cannot create the cgroup '" + path.toStdString() +
                          "': " + reason(errno));
}

void writeFile(const QString &path, const QByteArray &text)
{
    const int fd = ::open(QFile::encodeName(path).constData(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        throw core::Error("cannot open '" + path.toStdString() + "': " + reason(errno));
    const bool ok = ::write(fd, text.constData(), std::size_t(text.size())) == text.size();
    const int error = errno;
    ::close(fd);
    if (!ok)
        throw core::Error("cannot write '" + text.trimmed().toStdString() + "' to '" +
                          path.toStdString() + "': " + reason(error));
}

QByteArray readFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll().trimmed() : QByteArray();
}

qint64 startTime(qint64 pid)
{
    if (pid <= 0)
        return 0;
    const QByteArray stat = readFile(QStringLiteral("/proc/%1/stat").arg(pid));
    const int close = stat.lastIndexOf(')');
    if (close < 0)
        return 0;
    // after "pid (comm) ": state is field 3, starttime field 22
    const QList<QByteArray> fields = stat.mid(close + 2).split(' ');
    return fields.size() > 19 ? fields[19].toLongLong() : 0;
}

bool isOurNode(qint64 pid, qint64 start)
{
    if (pid <= 0 || (::kill(pid_t(pid), 0) != 0 && errno != EPERM))
        return false;
    const QByteArray stat = readFile(QStringLiteral("/proc/%1/stat").arg(pid));
    const int close = stat.lastIndexOf(')');
    if (close < 0 || stat.size() <= close + 2 || stat.at(close + 2) == 'Z')
        return false;
    // The pid and its start time name one process for the life of the machine. Its command line
    // is asked only when the start time is not known: while the process is inside execve its
    // /proc cmdline is briefly empty, and a node seen in that moment is still ours.
    if (start > 0)
        return startTime(pid) == start;
    return readFile(QStringLiteral("/proc/%1/cmdline").arg(pid)).contains("edgetrain-node");
}

qint64 spawn(const QString &program, const QStringList &args, const QString &netns,
             const QStringList &procsFiles, const QString &logPath, const QString &outPath,
             const QStringList &environment)
{
    // Everything the child needs is made here: between fork and exec only async-signal-safe
    // calls (open, write, setns, dup2, sigprocmask, execve).
    std::vector<QByteArray> argBytes{QFile::encodeName(program)};
    for (const QString &a : args)
        argBytes.push_back(a.toLocal8Bit());
    std::vector<char *> argv;
    for (QByteArray &a : argBytes)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    // OpenMP threads that spin while they wait would burn a CPU quota doing nothing.
    const QStringList set =
        QStringList{QStringLiteral("OMP_WAIT_POLICY=PASSIVE"), QStringLiteral("GOMP_SPINCOUNT=0")} +
        environment;
    auto isSet = [&](const QString &entry) {
        return std::any_of(set.begin(), set.end(), [&](const QString &s) {
            const qsizetype eq = s.indexOf(QLatin1Char('='));
            return eq > 0 && entry.startsWith(s.left(eq + 1));
        });
    };
    std::vector<QByteArray> envBytes;
    for (const QString &e : QProcess::systemEnvironment())
        if (!isSet(e))
            envBytes.push_back(e.toLocal8Bit());
    for (const QString &e : set)
        envBytes.push_back(e.toLocal8Bit());
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
    const QByteArray out = QFile::encodeName(outPath);
    sigset_t none;
    sigemptyset(&none);

    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0)
        throw core::Error("cannot start '" + program.toStdString() + "': pipe: " + reason(errno));
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int error = errno;
        ::close(ready[0]);
        ::close(ready[1]);
        throw core::Error("cannot start '" + program.toStdString() + "': fork: " + reason(error));
    }
    if (pid == 0) {
        // The child reports the failing step and errno through the pipe, then exits.
        auto fail = [&](char step) {
            struct
            {
                char step;
                int error;
            } report{step, errno};
            [[maybe_unused]] const auto n = ::write(ready[1], &report, sizeof report);
            ::_exit(127);
        };
        ::setsid();
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (const int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP})
            ::signal(sig, SIG_DFL);
        // No descriptor of the caller (sockets, files) lives on in the node.
        ::syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
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
        const int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        const int o =
            ::open(out.constData(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
        const int e =
            ::open(log.constData(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (in < 0 || o < 0 || e < 0 || ::dup2(in, 0) < 0 || ::dup2(o, 1) < 0 || ::dup2(e, 2) < 0)
            fail('o');
        ::execve(argv[0], argv.data(), envp.data());
        fail('e');
    }
    ::close(ready[1]);
    struct
    {
        char step;
        int error;
    } report{0, 0};
    ssize_t n;
    do
        n = ::read(ready[0], &report, sizeof report); // 0 bytes: exec closed the pipe
    while (n < 0 && errno == EINTR);
    ::close(ready[0]);
    if (n > 0) {
        ::waitpid(pid, nullptr, 0);
        const char *what = report.step == 'c'   ? "join its cgroups"
                           : report.step == 'n' ? "enter the network namespace"
                           : report.step == 'o' ? "open its log files"
                                                : "be executed";
        throw core::Error("'" + program.toStdString() + "' could not " + what + ": " +
                          reason(report.error) + " (log: " + logPath.toStdString() + ")");
    }
    // Reaped when it ends, so a stopped node does not linger as a zombie of this process.
    std::thread([pid] { ::waitpid(pid, nullptr, 0); }).detach();
    return qint64(pid);
}

QStringList netemArgs(std::int64_t bitsPerSecond, double delayMs, double lossPercent)
{
    QStringList args{QStringLiteral("root"), QStringLiteral("netem")};
    if (bitsPerSecond > 0)
        args << QStringLiteral("rate") << QStringLiteral("%1bit").arg(bitsPerSecond);
    if (delayMs > 0)
        args << QStringLiteral("delay")
             << QString::fromStdString(core::NumberText::format(delayMs)) + QStringLiteral("ms");
    if (lossPercent > 0)
        args << QStringLiteral("loss")
             << QString::fromStdString(core::NumberText::format(lossPercent)) + QLatin1Char('%');
    const std::int64_t packets =
        bitsPerSecond > 0 ? std::clamp<std::int64_t>(bitsPerSecond / 8 / 1500 / 10, 64, 10000)
                          : 1000;
    args << QStringLiteral("limit") << QString::number(packets);
    return args;
}

QStringList tbfArgs(std::int64_t bitsPerSecond)
{
    const std::int64_t burst = std::max<std::int64_t>(32 * 1024, bitsPerSecond / 8 / 100);
    return {QStringLiteral("root"),    QStringLiteral("tbf"),
            QStringLiteral("rate"),    QStringLiteral("%1bit").arg(bitsPerSecond),
            QStringLiteral("burst"),   QString::number(burst),
            QStringLiteral("latency"), QStringLiteral("50ms")};
}

void giveToSudoUser(const QString &path)
{
    bool uidOk = false, gidOk = false;
    const uint uid = qEnvironmentVariable("SUDO_UID").toUInt(&uidOk);
    const uint gid = qEnvironmentVariable("SUDO_GID").toUInt(&gidOk);
    if (::geteuid() == 0 && uidOk && gidOk) [[maybe_unused]]
        const int ignored = ::lchown(QFile::encodeName(path).constData(), uid_t(uid), gid_t(gid));
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

QString freeSubnetPrefix()
{
    const QString addresses = run(
        QStringLiteral("ip"), {QStringLiteral("-o"), QStringLiteral("-4"), QStringLiteral("addr")});
    for (int n = 1; n < 255; ++n) {
        const QString prefix = QStringLiteral("10.213.%1.").arg(n);
        if (!addresses.contains(QStringLiteral(" ") + prefix))
            return prefix;
    }
    throw core::Error("no free 10.213.N.0/24 subnet for the lab's bridge");
}

void checkLabFolder(const QString &dir)
{
    const QByteArray path = QFile::encodeName(dir);
    struct stat st
    {};
    if (::lstat(path.constData(), &st) != 0) {
        if (errno != ENOENT || !QDir().mkpath(dir) || ::lstat(path.constData(), &st) != 0)
            throw core::IoError("cannot create the lab folder '" + dir.toStdString() + "'");
    }
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))
        throw core::IoError("the lab folder '" + dir.toStdString() +
                            "' is a symlink or not a folder");
    if (st.st_uid != ::geteuid())
        throw core::IoError("the lab folder '" + dir.toStdString() +
                            "' belongs to another user: choose another --out");
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        throw core::IoError("others may write to the lab folder '" + dir.toStdString() +
                            "': run chmod go-w on it or choose another --out");
}

} // namespace edgetrain::net::LabSystem

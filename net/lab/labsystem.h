#pragma once

#include <QByteArray>
#include <QString>
#include <QStringList>

#include <cstdint>

namespace edgetrain::net {

/**
 * What the edge lab asks of the operating system, kept apart from what a lab is (edgelab.h):
 * iproute2 and tc, cgroups v1 or v2, starting a detached process inside a network namespace
 * and cgroups, and telling our processes from others. Everything throws core::Error with the
 * command or file and the system's reason.
 */
namespace LabSystem {

/** Runs a system tool (ip, tc) and returns its output; throws with the command and its output
 *  when it fails or takes over 15 s. */
QString run(const QString &program, const QStringList &args);
/** run(), but a failure is returned as its message (empty: it worked). */
QString tryRun(const QString &program, const QStringList &args);

enum class Cgroups { None, V1, V2 };
/** v1 when the cpu and memory hierarchies are mounted, v2 when the unified hierarchy offers
 *  both controllers, None otherwise. */
Cgroups cgroups();
/** The folder of a lab's cgroups for a controller ("cpu", "memory"; v2: one folder). */
QString cgroupParent(Cgroups kind, const QString &controller, const QString &labId);
/** Creates a cgroup folder (an existing one is an error: two nodes must not share one); in v2
 *  first lets its parent hand the cpu and memory controllers down. */
void makeCgroup(Cgroups kind, const QString &path);

/** Writes `text` to an existing file (a cgroup's), never through a symlink. */
void writeFile(const QString &path, const QByteArray &text);
/** The file's bytes, trimmed; empty when it cannot be read. */
QByteArray readFile(const QString &path);

/** When the kernel started `pid` (clock ticks since boot, /proc/PID/stat field 22), 0 if there
 *  is no such process. */
qint64 startTime(qint64 pid);
/** Whether `pid` is a live (not zombie) process that started at `start` — the node we started:
 *  a pid the kernel handed to another process since is not ours. With `start` 0 (not known) it
 *  must be an edgetrain-node by its command line. */
bool isOurNode(qint64 pid, qint64 start);

/**
 * Starts `program` detached (its own session: it outlives the caller) in the network namespace
 * `netns` (empty: this one) and the cgroups whose `cgroup.procs` files are given, stdin from
 * /dev/null, stdout to `outPath`, stderr appended to `logPath`, with an empty signal mask and
 * no other descriptor of the caller, and this process's environment with `environment`'s
 * NAME=value entries set over it. Returns its pid; throws with the step that failed and the
 * system's reason. The child is reaped when it ends.
 */
qint64 spawn(const QString &program, const QStringList &args, const QString &netns,
             const QStringList &procsFiles, const QString &logPath, const QString &outPath,
             const QStringList &environment = {});

/** tc arguments for a link: netem with rate, delay, loss and a queue of ~100 ms at the rate. */
QStringList netemArgs(std::int64_t bitsPerSecond, double delayMs, double lossPercent);
/** tc arguments for kernels without netem: a token bucket at the rate (10 ms of burst, at
 *  least 32 KiB; 50 ms of queue). */
QStringList tbfArgs(std::int64_t bitsPerSecond);
/** Gives a file root made to the user who ran sudo (SUDO_UID/SUDO_GID), so that user's
 *  commands can read the lab's key and node list; nothing otherwise. */
void giveToSudoUser(const QString &path);

/** A free UDP port on 127.0.0.1 (for plain local nodes' discovery). */
quint16 freeUdpPort();
/** Whether a TCP connection to address:port is accepted within the time. */
bool answers(const QString &address, quint16 port, int timeoutMs);
/** The first 10.213.N. prefix (N 1-254) no interface of this machine is on. */
QString freeSubnetPrefix();

/** A folder root may keep a lab in: created if missing; refused when it is a symlink, is not
 *  owned by this user, or others may write to it. */
void checkLabFolder(const QString &dir);

} // namespace LabSystem

} // namespace edgetrain::net

#pragma once

#include "core/deviceprofile.h"
#include "core/json.h"

#include <QString>
#include <QStringList>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

namespace edgetrain::net {

/** What a lab is asked to emulate. */
struct LabOptions
{
    struct Devices
    {
        core::DeviceProfile profile;
        int count = 1;
    };
    std::vector<Devices> devices;
    std::int64_t link_bits_per_second = 0; // every node's link; 0: each profile's own
    double delay_ms = 0.0;                 // added on each link, each direction
    double loss_percent = 0.0;             // on each link, each direction
    QString dir;                           // lab.json, cluster.key, nodes, logs/
    QString node_program;                  // the edgetrain-node binary
    /** This machine's GEMM rate per core (GFLOP/s) the CPU quotas are scaled by; 0: measure it
     *  (EdgeLab::calibrate). */
    double host_core_gflops = 0.0;
    /** Every device runs this many times slower than its profile (links too), so that a lab
     *  that needs more CPU than this machine has still keeps the devices' ratios; 0: the
     *  smallest factor >= 1 that fits the lab into 90 % of this machine's cores. */
    double time_scale = 0.0;
    /** false: plain local nodes with the profiles' names and figures, nothing limited (what
     *  happens anyway without root, namespaces or cgroups). */
    bool emulate = true;
    /** What the nodes' deployed students run on (edgetrain-node --camera): node k (from 0, in
     *  the order of `devices`) gets cameras[k % size]; empty: the nodes have no camera. */
    QStringList cameras;
    /** Their --camera-rate ("max", frames/s); empty: each file's own rate. */
    QString camera_rate;
    /** Set (e.g. by Ctrl-C): `up` stops between steps, removes what it made and throws. */
    const std::atomic<bool> *stop = nullptr;
};

/** One emulated device as the lab made it. */
struct LabNode
{
    QString name;       // "pi3b-1"
    QString profile_id; // "pi3b"
    QString netns;      // its network namespace; empty when not emulated
    QString host_link;  // the host end of its veth pair (on the lab's bridge)
    QString address;    // where its control port listens
    quint16 port = 0;
    quint16 discovery_port = 0; // where it answers discovery probes (at `address`)
    qint64 pid = 0;
    qint64 start_time = 0;  // when the kernel started it (ticks since boot): tells a reused pid
    double cpu_cores = 0.0; // the profile's speed in cores of this machine (0: not limited)
    /** The quota set for it, in cores: cpu_cores corrected once by a measurement (small quotas
     *  yield less than their share), and what the engine then measured inside it. */
    double cpu_quota_cores = 0.0;
    double measured_cores = 0.0;
    std::int64_t memory_limit_bytes = 0;   // its cgroup memory limit (0: none)
    std::int64_t link_bits_per_second = 0; // shaped rate (0: not shaped)
    QString cpu_cgroup, memory_cgroup;     // the cgroup folders (empty: none)
    QString log;                           // its stderr
    /** The GEMM and convolution kernels it trains on where they are not this machine's
     *  default: "eigen, im2col" for a board oneDNN is not built for (EdgeLab::boardKernels). */
    QString kernels;
};

/** A lab as `lab up` left it: everything `lab down` must remove, in DIR/lab.json. */
struct LabState
{
    static constexpr int kFormat = 1;
    QString id; // 4 hex digits, in every name the lab gives the system
    QString dir;
    QString bridge; // empty when not emulated
    QString subnet; // "10.213.7.0/24"
    QString key_file;
    double host_core_gflops = 0.0;
    double time_scale = 1.0;
    double delay_ms = 0.0;
    double loss_percent = 0.0;
    QStringList not_emulated; // what could not be emulated, and why
    std::vector<LabNode> nodes;

    core::Json toJson() const;
    /** Writes DIR/lab.json (atomically); throws core::IoError. */
    void save() const;
    /** Throws core::FormatError naming the file, also when a name in it is not one a lab gives
     *  (down acts on them as root: a namespace, link or cgroup outside the lab is refused). */
    static LabState fromJson(const core::Json &json, const std::string &source);
};

/** A node's state now (lab status). */
struct LabNodeStatus
{
    bool running = false;              // its process is alive
    bool answering = false;            // its control port accepts connections
    std::int64_t memory_bytes = -1;    // its cgroup's memory use (-1: unknown)
    std::int64_t throttled_count = -1; // CPU quota periods it was throttled in (-1: unknown)
};

/**
 * The edge lab: emulated devices on this machine, for rehearsing a session without the boards.
 * Each device is an `edgetrain-node` in its own network namespace, on a bridge, its link shaped
 * with tc netem (rate, delay, loss, both directions), its CPU limited by a cgroup quota to the
 * device's speed relative to this machine (measured: EdgeLab::calibrate times the engine's GEMM
 * here; the profile gives the device's), its memory limited by a cgroup to the device's RAM
 * less what its OS keeps, its GEMM and convolution kernels those the board runs
 * (boardKernels), and its name and reported device facts those of the profile.
 *
 * Needs root, iproute2 (ip, tc) and cgroups (v1 cpu + memory, or v2); what is missing is said
 * in LabState::not_emulated and the lab falls back to plain local nodes on 127.0.0.1.
 * Errors: core::Error with the failing command and its output; a failed `up` removes what it
 * had made before it throws.
 */
class EdgeLab
{
public:
    using Progress = std::function<void(const QString &line)>;

    /** Starts the lab in options.dir (created), writes lab.json, cluster.key (0600) and nodes
     *  (one host:port a line), and returns when every node answers on its control port. Throws
     *  core::Error if a lab is already up in that folder. */
    static LabState up(const LabOptions &options, const Progress &progress = {});
    /** Stops the nodes and removes the namespaces, links, bridge and cgroups of the lab in
     *  `dir`, and lab.json, nodes and cluster.key (logs/ stays). Returns what it removed.
     *  Goes on past a failure and throws core::Error listing what it could not remove. */
    static QStringList down(const QString &dir, const Progress &progress = {});
    /** The lab in `dir`; throws core::IoError if there is none. */
    static LabState read(const QString &dir);
    static LabNodeStatus status(const LabNode &node);
    /** This machine's FP32 GEMM rate of one core (GFLOP/s), as `edgetrain-cli bench
     *  --gemm-size 1024 --threads 1` measures it: the best of three medians of five products.
     *  Sets the engine to one thread while it runs. */
    static double calibrate();
    /** Why this process cannot emulate devices here (empty: it can): tried for real (a
     *  namespace and a cgroup are made and removed), so a container's root without the
     *  capabilities is told, not failed. */
    static QStringList missingCapabilities();
    /** "pi3:3,pi4:1" -> profiles and counts (DeviceProfiles::find); a profile named twice is
     *  one entry. Throws core::SpecError (an unknown name, a count outside 1-64, more than
     *  200 devices). */
    static std::vector<LabOptions::Devices> parseDevices(const QString &text);
    /** Where a lab lives unless told: /run/edgetrain-lab for root (not a folder every user may
     *  write to), $XDG_RUNTIME_DIR/edgetrain-lab or /tmp/edgetrain-lab-UID otherwise. */
    static QString defaultFolder();
    /** The environment that makes a device's edgetrain-node train on the kernels the board
     *  itself runs (EDGETRAIN_GEMM, EDGETRAIN_CONV; core/gemm.h, core/conv2d.h). oneDNN is
     *  built for x86-64 alone (Debian ships libdnnl for amd64 only), so a board of any other
     *  arch trains on the portable path, Eigen's GEMM and im2col convolutions, and an emulated
     *  one on oneDNN would be faster than the board. Empty for an x86-64 profile: this
     *  machine's default kernels. */
    static QStringList boardKernels(const core::DeviceProfile &profile);
    /** "100mbit", "1gbit", "94.4mbit", "500kbit", "2000000" -> bits per second (1 kbit/s to
     *  1000 Gbit/s, locale-free). Throws core::SpecError naming the text. */
    static std::int64_t parseRate(const QString &text);

private:
    /** Stops the lab's processes and removes its namespaces, links, cgroups and bridge. Goes
     *  on past a failure; returns what it removed, and adds what it could not (and why) to
     *  `failed`. */
    static QStringList removeAll(const LabState &lab, QStringList *failed,
                                 const Progress &progress);
};

} // namespace edgetrain::net

#pragma once

#include "json.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace edgetrain::core {

/**
 * What EdgeTrain knows about a kind of edge device, as data (the JSON files in resources/devices,
 * or a user's own file): its CPU, its speed, its memory, its link and how much power it draws. The
 * edge lab emulates a device from it (CPU quota, memory limit, link shaping); the planner and the
 * power estimate read it. Every figure names its source in `sources`.
 *
 * Speed is `core_gflops`: the FP32 matrix-product (GEMM) rate of one core while all of them
 * are busy, as the per-thread figure of `edgetrain-cli bench --gemm-size 1024 --threads <cores>`
 * prints it. On a real device, measure it there and put it in the profile; the built-in
 * profiles derive it from published figures (their sources say how).
 *
 * The file format ("format": "edgetrain-device/1"):
 *     {"format": "edgetrain-device/1", "id": "pi3b", "name": "Raspberry Pi 3 Model B",
 *      "aliases": ["pi3"], "arch": "aarch64", "cpu_model": "Cortex-A53", "cores": 4,
 *      "clock_mhz": 1200, "core_gflops": 1.6, "ram_bytes": 1073741824,
 *      "os_reserved_bytes": 209715200, "link_bits_per_second": 94000000,
 *      "power": {"idle_watts": 1.4, "full_watts": 3.7,
 *                "curve": [[0, 1.4], [0.25, 2.0], [1, 3.7]]},
 *      "sources": {"core_gflops": "...", "ram_bytes": "...", "link_bits_per_second": "...",
 *                  "power": "..."}}
 * `curve` (optional) is watts against CPU utilisation of the whole device (0..1, increasing,
 * from 0 to 1); without it power is linear between idle and full load.
 */
struct DeviceProfile
{
    static constexpr const char *kFormat = "edgetrain-device/1";

    std::string id;
    std::string name;
    std::vector<std::string> aliases;
    std::string arch;
    std::string cpu_model;
    int cores = 1;
    int clock_mhz = 0;
    double core_gflops = 0.0;
    std::int64_t ram_bytes = 0;
    std::int64_t os_reserved_bytes = 0; // what the device's OS keeps for itself
    std::int64_t link_bits_per_second = 0;
    double idle_watts = 0.0;
    double full_watts = 0.0;
    std::vector<std::pair<double, double>> power_curve; // (utilisation 0..1, watts)
    std::map<std::string, std::string> sources;         // figure -> where it comes from

    /** RAM a training job may use on it: ram_bytes - os_reserved_bytes. */
    std::int64_t usableBytes() const { return ram_bytes - os_reserved_bytes; }
    /** The device's GEMM rate with every core busy. */
    double deviceGflops() const { return core_gflops * cores; }
    /** Watts at a CPU utilisation of the whole device (clamped to 0..1): the curve, or linear
     *  between idle and full load. */
    double watts(double utilisation) const;
    /** Whether `wanted` is its id or one of its aliases. */
    bool answersTo(const std::string &wanted) const;

    Json toJson() const;
    /** Throws SpecError naming `source` and the field ("pi3b.json: field \"cores\" must be an
     *  integer from 1 to 1024, got 0"). Unknown fields are refused too (a typo is not ignored). */
    static DeviceProfile fromJson(const Json &json, const std::string &source);
    /** Reads a profile file; IoError if it cannot be read, FormatError/SpecError naming it. */
    static DeviceProfile load(const std::string &path);
};

} // namespace edgetrain::core

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
 *                "curve": [[0, 1.4], [0.25, 2.0], [1, 3.7]], "frequency_exponent": 1},
 *      "sources": {"core_gflops": "...", "ram_bytes": "...", "link_bits_per_second": "...",
 *                  "power": "..."}}
 * `curve` (optional) is watts against CPU utilisation of the whole device (0..1, increasing,
 * from 0 to 1); without it power is linear between idle and full load. Both are at the
 * profile's `clock_mhz`. Below it (a governor's lower step, a thermal or under-voltage cap) the
 * part above idle scales by (clock / clock_mhz) ^ `frequency_exponent` (optional, 0 to 4,
 * default 1): CMOS switching power is C V^2 f, proportional to the clock at one voltage; where
 * the firmware lowers the voltage with the clock it falls faster, and a measured exponent
 * belongs in the profile with its source. The paper's regression (its Equation 1) fits power
 * to clock and utilisation alike.
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
    double frequency_exponent = 1.0;
    std::map<std::string, std::string> sources; // figure -> where it comes from

    /** RAM a training job may use on it: ram_bytes - os_reserved_bytes. */
    std::int64_t usableBytes() const { return ram_bytes - os_reserved_bytes; }
    /** The device's GEMM rate with every core busy. */
    double deviceGflops() const { return core_gflops * cores; }
    /** Watts at a CPU utilisation of the whole device (clamped to 0..1): the curve, or linear
     *  between idle and full load. */
    double watts(double utilisation) const;
    /** The same at a CPU clock of `mhz` (<= 0, or no clock_mhz: the profile's clock; above it:
     *  the profile's figures, which are for its full speed). */
    double watts(double utilisation, double mhz) const;
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

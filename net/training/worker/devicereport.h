#pragma once

#include <QCborMap>
#include <QString>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace edgetrain::net::worker {

/** The node's link to the coordinator, as its probe timed it (measureLink), or why it could
 *  not be. */
struct LinkFigures
{
    QString error; // not empty: the probe failed (it is not tried again); nothing else is set
    double rtt_seconds = 0.0;
    double seconds = 0.0; // how long the probe took
    // The transfers' rates and their CPU per byte as a share of the device's busy cores; only
    // when they were timed (else the exchange over the link stands for them).
    bool rates_timed = false;
    double up_bytes_per_second = 0.0, down_bytes_per_second = 0.0;
    double up_busy_seconds_per_byte = 0.0, down_busy_seconds_per_byte = 0.0;

    bool operator==(const LinkFigures &other) const = default;
};

/** What an allreduce of the job's gradients costs this device per byte of a ring round:
 *  timed with the coordinator's rank over the link, or on the device over loopback. */
struct ExchangeFigures
{
    bool timed = false; // the figures below hold a measurement
    QString error;      // not empty: it could not be timed (the planner then knows no bound)
    // Why it could not be timed with the coordinator, when it then was on the device.
    QString link_error;
    double seconds_per_byte = 0.0;
    QString over; // "link" or "loopback"
    std::int64_t bytes = 0;
    int repeats = 0;
    double seconds = 0.0, setup_seconds = 0.0, windows_seconds = 0.0;
    // Over the link: the CPU a byte each way costs the device, as a share of its busy cores;
    // < 0: not timed (over loopback).
    double busy_seconds_per_byte = -1.0;

    /** Neither timed nor failed: not tried. */
    bool isEmpty() const { return !timed && error.isEmpty(); }
    bool operator==(const ExchangeFigures &other) const = default;
};

/**
 * What a node measured of itself before it joins a job (the job_ready's "profile"): the
 * planner's compute line (time per step at two local batches), an optimizer update,
 * evaluation per sample, the largest batch its memory takes, its power, its link and its
 * exchange, and where the profiling's time went. toCbor() and fromCbor() are its one wire
 * form.
 */
struct DeviceReport
{
    std::int64_t small_batch = 0, large_batch = 0;
    double small_step_seconds = 0.0, large_step_seconds = 0.0; // gather + forward + backward
    double update_seconds = 0.0;
    double eval_seconds_per_sample = 0.0;
    std::int64_t max_local_batch = -1;           // -1: no budget, 0: not even one sample
    int steps = 0;                               // the passes timed at least, per point
    double seconds = 0.0;                        // how long profiling took
    double idle_watts = -1.0, busy_watts = -1.0; // < 0: not known
    QString power_source;
    // Where the profile's time went, phase by phase in the order they first came (a phase
    // that comes more than once: its sum).
    std::vector<std::pair<QString, double>> phases_seconds;
    std::optional<LinkFigures> link; // absent: the job has no link probe
    ExchangeFigures exchange;        // empty: the job is not planned

    /** The speed the coordinator splits the first epoch by (images/s): at a part of 16 (the
     *  large batch if smaller), read off the line through the two points. */
    double typicalImagesPerSecond() const;
    /** Adds `seconds` to the phase's sum. */
    void addPhase(const QString &phase, double seconds);

    QCborMap toCbor() const;
    /** Reads what toCbor() wrote; a missing field keeps its default. */
    static DeviceReport fromCbor(const QCborMap &map);

    bool operator==(const DeviceReport &other) const = default;
};

} // namespace edgetrain::net::worker

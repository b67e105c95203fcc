#pragma once

#include <QCborMap>
#include <QString>

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace edgetrain::net {

/** What an allreduce of the job's gradients costs the device per byte of a ring round, as its
 *  profile timed it (the profile's "exchange"). */
struct ExchangeFigures
{
    enum class Over { Unknown, Link, Loopback }; // timed with the coordinator, or on the device
    bool timed = false; // the figures below hold; else `error` says why not (or none was asked)
    QString error;
    double seconds_per_byte = 0.0;
    Over over = Over::Unknown;
    std::int64_t bytes = 0;
    int repeats = 0;
    double seconds = 0.0, setup_seconds = 0.0, windows_seconds = 0.0;
    /** Over the link: the CPU a byte costs the device, as a share of its busy cores. */
    std::optional<double> busy_seconds_per_byte;
    /** Why it could not be timed with the coordinator (it was then timed on the device). */
    QString link_error;

    /** Neither timed nor failed: not tried. */
    bool isEmpty() const { return !timed && error.isEmpty(); }
    bool operator==(const ExchangeFigures &other) const = default;
    QCborMap toCbor() const;
    static std::optional<ExchangeFigures> fromCbor(const QCborMap &map, QString *error);
    /** Never refused (ProfileReport::fromCborLenient): a field absent or not of its type reads
     *  as its default; `timed` says whether the figure per byte was there at all. */
    static ExchangeFigures fromCborLenient(const QCborMap &map);
};

/** The node's link to the coordinator, as its link probe measured it (the profile's "link"). */
struct LinkFigures
{
    QString error; // the probe failed: why (and no figures)
    double rtt_seconds = 0.0;
    double seconds = 0.0; // what the probe took
    /** The transfers' rates were timed (a plan with async wants them); else the exchange over
     *  the link stands for them. */
    bool rates_timed = false;
    double up_bytes_per_second = 0.0, down_bytes_per_second = 0.0;
    double up_busy_seconds_per_byte = 0.0, down_busy_seconds_per_byte = 0.0;

    bool operator==(const LinkFigures &other) const = default;
    QCborMap toCbor() const;
    static std::optional<LinkFigures> fromCbor(const QCborMap &map, QString *error);
    /** Never refused (ProfileReport::fromCborLenient): a field absent or not of its type reads
     *  as its default; the rates count as timed when the upload's is there at all. */
    static LinkFigures fromCborLenient(const QCborMap &map);
};

/**
 * A node's profile of the job on its own device (job_ready's "profile"): the time of a training
 * step at two local batch sizes, of an update and of evaluating a sample, the largest local
 * batch its memory takes, its power, and its link and exchange. The cluster planner's input.
 */
struct ProfileReport
{
    // The two local batch sizes timed; a profile from a node that timed none reads as 0 and 0.
    std::int64_t small_batch = 0, large_batch = 0;
    double small_step_seconds = 0.0, large_step_seconds = 0.0; // gather + forward + backward
    double update_seconds = 0.0;                               // an optimizer step
    double eval_seconds_per_sample = 0.0;
    std::int64_t max_local_batch = -1;           // what the memory budget takes; -1: no budget
    int steps = 0;                               // passes timed per point at least
    double seconds = 0.0;                        // what profiling took
    double idle_watts = -1.0, busy_watts = -1.0; // < 0: not known
    QString power_source;
    /** Where the profile's time went, phase by phase in the order they first came. */
    std::vector<std::pair<QString, double>> phases_seconds;
    std::optional<LinkFigures> link; // absent: the job has no link probe
    ExchangeFigures exchange;        // empty: the job is not planned

    /** Adds `seconds` to `phase` (a phase that comes more than once sums). */
    void addPhase(const QString &phase, double seconds);

    bool operator==(const ProfileReport &other) const = default;
    QCborMap toCbor() const;
    static std::optional<ProfileReport> fromCbor(const QCborMap &map, QString *error);
    /**
     * The planner's reading, which takes a profile from any node, older ones and partial bodies
     * included: never refused, a field that is absent or not of its type reads as its default
     * (the batches and step times only as a pair of two lists of two; the watts as -1; a link
     * that is absent, not a map or empty as no link). A body fromCbor accepts reads as there.
     */
    static ProfileReport fromCborLenient(const QCborMap &map);
};

} // namespace edgetrain::net

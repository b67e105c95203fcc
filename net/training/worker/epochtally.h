#pragma once

#include "core/model.h"

#include <cstddef>
#include <cstdint>

namespace edgetrain::net::worker {

/**
 * An epoch's sums: the loss summed over samples, the correct predictions, the samples seen and
 * the targets accuracy divides by (samples for a classifier, objects for a detector).
 *
 * In sync and local-SGD mode a tally travels behind the gradients (or the weights) in the
 * step's one allreduce, with the rank's vote to stop: packTrailer() writes those
 * kTrailerFloats floats, every rank's are summed, unpackTrailer() reads the group's tally and
 * whether any rank voted to stop. The sums are sent as floats, as the gradients are.
 */
struct EpochTally
{
    /** The floats a trailer takes: the four sums and the stop vote. */
    static constexpr std::size_t kTrailerFloats = 5;
    /** The floats pack() takes: the four sums. */
    static constexpr std::size_t kFloats = 4;

    double loss_sum = 0.0;
    double correct = 0.0;
    double seen = 0.0;
    double targets = 0.0;

    /** A step's result on `samples` samples (its loss is their mean). */
    static EpochTally of(const core::StepResult &result, std::int64_t samples);

    EpochTally &operator+=(const EpochTally &other);
    bool operator==(const EpochTally &other) const = default;

    /** The mean loss per sample seen (0 when none was). */
    double meanLoss() const;
    /** Correct predictions per target (0 when there was none). */
    double accuracy() const;

    /** Writes the four sums to out[0..kFloats). */
    void pack(float *out) const;
    static EpochTally unpack(const float *in);

    /** What a summed trailer says: the group's tally, and whether any rank voted to stop. */
    struct Trailer;
    /** Writes the sums and the stop vote to out[0..kTrailerFloats). */
    void packTrailer(float *out, bool stop) const;
    /** Reads a trailer, as written by packTrailer() or summed over the ranks. */
    static Trailer unpackTrailer(const float *in);
};

struct EpochTally::Trailer
{
    EpochTally tally;
    bool stop = false;
};

} // namespace edgetrain::net::worker

#include "net/training/worker/epochtally.h"

#include <algorithm>

namespace edgetrain::net::worker {

EpochTally EpochTally::of(const core::StepResult &result, std::int64_t samples)
{
    return {result.loss * double(samples), double(result.correct), double(samples),
            double(result.count)};
}

EpochTally &EpochTally::operator+=(const EpochTally &other)
{
    loss_sum += other.loss_sum;
    correct += other.correct;
    seen += other.seen;
    targets += other.targets;
    return *this;
}

double EpochTally::meanLoss() const
{
    return loss_sum / std::max(seen, 1.0);
}

double EpochTally::accuracy() const
{
    return correct / std::max(targets, 1.0);
}

void EpochTally::pack(float *out) const
{
    out[0] = float(loss_sum);
    out[1] = float(correct);
    out[2] = float(seen);
    out[3] = float(targets);
}

EpochTally EpochTally::unpack(const float *in)
{
    return {in[0], in[1], in[2], in[3]};
}

void EpochTally::packTrailer(float *out, bool stop) const
{
    pack(out);
    out[kFloats] = stop ? 1.0f : 0.0f;
}

EpochTally::Trailer EpochTally::unpackTrailer(const float *in)
{
    // Summed over the ranks the vote counts the ranks that want to stop: one is enough.
    return {unpack(in), in[kFloats] > 0.0f};
}

} // namespace edgetrain::net::worker

#include "bootstrap.h"

#include "core/error.h"
#include "weightedfigures.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace edgetrain::vision {

namespace {

/** High 64 bits of a 64 x 64-bit product, in 32-bit halves (no compiler's 128-bit type needed). */
std::uint64_t mulHigh(std::uint64_t a, std::uint64_t b, std::uint64_t &low)
{
    const std::uint64_t aLo = a & 0xffffffffu, aHi = a >> 32, bLo = b & 0xffffffffu, bHi = b >> 32;
    const std::uint64_t ll = aLo * bLo, lh = aLo * bHi, hl = aHi * bLo, hh = aHi * bHi;
    const std::uint64_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu);
    low = (mid << 32) | (ll & 0xffffffffu);
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}

/** Uniform in [0, n), n > 0: Lemire's multiply-shift with rejection, exact and the same
 *  everywhere (std::uniform_int_distribution's algorithm is the library's choice). */
std::uint64_t uniformBelow(std::mt19937_64 &rng, std::uint64_t n)
{
    std::uint64_t low = 0;
    std::uint64_t high = mulHigh(rng(), n, low);
    if (low < n) {
        const std::uint64_t floor = (0 - n) % n;
        while (low < floor)
            high = mulHigh(rng(), n, low);
    }
    return high;
}

/** The four figures of each draw, NaN where a draw leaves the figure undefined. */
struct Draws
{
    std::vector<double> recall, precision, f1, ap50;

    void add(double r, double p, double f, double ap)
    {
        recall.push_back(r);
        precision.push_back(p);
        f1.push_back(f);
        ap50.push_back(ap);
    }
};

constexpr double undefined = std::numeric_limits<double>::quiet_NaN();

void addFigures(Draws &d, const DetectionMetrics::Figures &s)
{
    d.add(s.truths > 0 ? s.recall : undefined, s.detections > 0 ? s.precision : undefined,
          s.truths + s.detections > 0 ? s.f1 : undefined, s.truths > 0 ? s.ap50 : undefined);
}

Interval interval(std::vector<double> draws, double level, double lowest, int resamples)
{
    draws.erase(std::remove_if(draws.begin(), draws.end(), [](double v) { return std::isnan(v); }),
                draws.end());
    Interval out{lowest, 1.0, int(draws.size())};
    if (draws.empty() || 2 * draws.size() < std::size_t(resamples))
        return out;
    const double alpha = (1.0 - level) / 2.0, last = double(draws.size() - 1);
    const auto lo = draws.begin() + std::ptrdiff_t(std::floor(alpha * last));
    const auto hi = draws.begin() + std::ptrdiff_t(std::ceil((1.0 - alpha) * last));
    std::nth_element(draws.begin(), lo, draws.end());
    out.lo = *lo;
    if (hi != lo)
        std::nth_element(lo + 1, hi, draws.end()); // all after lo are >= *lo
    out.hi = *hi;
    return out;
}

FigureIntervals intervals(const Draws &d, double level, double lowest, int resamples)
{
    return {interval(d.recall, level, lowest, resamples),
            interval(d.precision, level, lowest, resamples),
            interval(d.f1, level, lowest, resamples), interval(d.ap50, level, lowest, resamples)};
}

FigureIntervals wholeRange(double lowest)
{
    const Interval all{lowest, 1.0, 0};
    return {all, all, all, all};
}

void checkInputs(const std::vector<BootstrapDetector> &detectors,
                 const std::vector<std::pair<int, int>> &pairs, const BootstrapOptions &options)
{
    if (options.resamples < 1)
        throw core::Error("bootstrap: resamples must be at least 1, not " +
                          std::to_string(options.resamples));
    if (!(options.level > 0.0 && options.level < 1.0))
        throw core::Error("bootstrap: level must be in (0, 1), not " +
                          std::to_string(options.level));
    for (const BootstrapDetector &d : detectors) {
        const std::vector<FrameMatch> &first = detectors.front().frames;
        const bool same = d.frames.size() == first.size() &&
                          std::equal(d.frames.begin(), d.frames.end(), first.begin(),
                                     [](const FrameMatch &a, const FrameMatch &b) {
                                         return a.frame == b.frame && a.truths == b.truths;
                                     });
        if (!same)
            throw core::Error("bootstrap: detector '" + d.name +
                              "' was scored on other frames than '" + detectors.front().name + "'");
    }
    for (const auto &[a, b] : pairs)
        if (a < 0 || b < 0 || a >= int(detectors.size()) || b >= int(detectors.size()))
            throw core::Error("bootstrap: pair (" + std::to_string(a) + ", " + std::to_string(b) +
                              ") is out of range for " + std::to_string(detectors.size()) +
                              " detectors");
}

DetectionMetrics::Figures minus(const DetectionMetrics::Figures &a,
                                const DetectionMetrics::Figures &b)
{
    DetectionMetrics::Figures d = a;
    d.recall = a.recall - b.recall;
    d.precision = a.precision - b.precision;
    d.f1 = a.f1 - b.f1;
    d.ap50 = a.ap50 - b.ap50;
    return d;
}

/** A draw's difference of one figure: undefined unless both sides are. */
double differenceOf(const std::vector<double> &a, const std::vector<double> &b)
{
    return a.back() - b.back(); // NaN when either is
}

} // namespace

BootstrapResult Bootstrap::run(const std::vector<BootstrapDetector> &detectors,
                               const std::vector<std::pair<int, int>> &pairs,
                               const BootstrapOptions &options)
{
    checkInputs(detectors, pairs, options);
    BootstrapResult result;
    result.frames = detectors.empty() ? 0 : int(detectors.front().frames.size());
    result.resamples = options.resamples;
    result.seed = options.seed;
    result.level = options.level;

    std::vector<WeightedFigures> prepared;
    for (const BootstrapDetector &d : detectors) {
        prepared.emplace_back(d.frames, d.threshold);
        result.figures.push_back(prepared.back().figures());
    }
    for (const auto &[a, b] : pairs)
        result.differences.push_back(
            {detectors[std::size_t(a)].name, detectors[std::size_t(b)].name,
             minus(result.figures[std::size_t(a)], result.figures[std::size_t(b)]),
             wholeRange(-1.0)});
    if (result.frames < 2) {
        result.intervals.assign(detectors.size(), wholeRange(0.0));
        return result;
    }

    std::vector<Draws> draws(detectors.size()), differences(pairs.size());
    std::mt19937_64 rng(options.seed);
    const std::size_t n = std::size_t(result.frames);
    std::vector<int> weight(n);
    for (int r = 0; r < options.resamples; ++r) {
        std::fill(weight.begin(), weight.end(), 0);
        for (std::size_t k = 0; k < n; ++k)
            ++weight[std::size_t(uniformBelow(rng, n))];
        for (std::size_t d = 0; d < prepared.size(); ++d)
            addFigures(draws[d], prepared[d].figures(weight));
        for (std::size_t p = 0; p < pairs.size(); ++p) {
            const Draws &a = draws[std::size_t(pairs[p].first)];
            const Draws &b = draws[std::size_t(pairs[p].second)];
            differences[p].add(differenceOf(a.recall, b.recall),
                               differenceOf(a.precision, b.precision), differenceOf(a.f1, b.f1),
                               differenceOf(a.ap50, b.ap50));
        }
    }
    for (const Draws &d : draws)
        result.intervals.push_back(intervals(d, options.level, 0.0, options.resamples));
    for (std::size_t p = 0; p < pairs.size(); ++p)
        result.differences[p].ci =
            intervals(differences[p], options.level, -1.0, options.resamples);
    return result;
}

std::optional<int> Bootstrap::framesToSettle(int frames, double delta, const Interval &ci, int cap)
{
    if (ci.clearOfZero())
        return 0;
    if (delta == 0.0 || frames < 1 || !std::isfinite(delta))
        return std::nullopt;
    // The interval's reach from delta towards zero, which has to fall below |delta|.
    const double reach = delta > 0 ? delta - ci.lo : ci.hi - delta;
    const double needed = frames * (reach / delta) * (reach / delta); // total frames, exclusive
    if (!(needed < double(frames) + cap))
        return std::nullopt;
    const int more = int(std::floor(needed)) + 1 - frames;
    if (more > cap)
        return std::nullopt;
    return more;
}

} // namespace edgetrain::vision

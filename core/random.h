#pragma once

#include <cstdint>
#include <string_view>

namespace edgetrain::core {

/**
 * A small deterministic generator (SplitMix64). Same seed, same numbers, on every platform and
 * standard library, which std::uniform_real_distribution does not promise.
 */
class Rng
{
public:
    explicit Rng(std::uint64_t seed) : m_state(seed) {}

    std::uint64_t next()
    {
        std::uint64_t z = (m_state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    /** Uniform in [0, 1) with 24 bits, exactly representable as float. */
    float uniform() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
    float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
    /** Uniform integer in [0, n). */
    std::uint64_t below(std::uint64_t n) { return next() % n; }

private:
    std::uint64_t m_state;
};

/** A stateless hash of (a, b, c): counter-based randomness, e.g. dropout masks. */
inline std::uint64_t mixHash(std::uint64_t a, std::uint64_t b, std::uint64_t c)
{
    Rng r(a ^ (b * 0x9E3779B97F4A7C15ull) ^ (c * 0xC2B2AE3D27D4EB4Full));
    return r.next();
}

/** FNV-1a of a string: a stable 64-bit name hash (std::hash is not stable across libraries). */
inline std::uint64_t stableHash(std::string_view text)
{
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : text)
        h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h;
}

} // namespace edgetrain::core

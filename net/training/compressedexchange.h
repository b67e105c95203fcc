#pragma once

#include <QByteArray>
#include <QString>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgetrain::net {

/**
 * The async mode's exchange in bfloat16 (float32's sign and exponent, 8 bits of mantissa, 2 bytes
 * little-endian per value; rounded to nearest, ties to even; NaN and infinities kept): half the
 * bytes of float32 each way, the rounding carried over instead of lost.
 *
 *  - Gradients go up with error feedback: what one push's rounding dropped is added to the
 *    next push's gradient (encodeWithFeedback()), so over an epoch the gradients that arrive sum
 *    to the gradients the node computed, to within one push's rounding (what is left at an
 *    epoch's end is dropped with the epoch).
 *  - Weights come down as deltas against a mirror: the parameter server keeps, per node, the
 *    weights that node holds, and sends the bfloat16 of (its weights - the mirror); both sides add
 *    the same decoded delta with the same float32 addition (addDecoded()), so the mirror stays
 *    bit-identical to the node's copy and a delta's rounding error is simply part of the next
 *    delta. A full float32 pull (each epoch's start) resets both.
 */
class CompressedExchange
{
public:
    /** Inline, branch-free: the loops over a model's values vectorise. */
    static std::uint16_t toBf16(float value)
    {
        std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
        const bool nan = (bits & 0x7fffffffu) > 0x7f800000u;
        const std::uint32_t quietNan = (bits >> 16) | 0x0040u; // stays a NaN, never infinity
        // Round to nearest, ties to even; an overflow rounds to infinity as float rounding does.
        bits += 0x7fffu + ((bits >> 16) & 1u);
        return std::uint16_t(nan ? quietNan : bits >> 16);
    }
    static float fromBf16(std::uint16_t value)
    {
        return std::bit_cast<float>(std::uint32_t(value) << 16);
    }

    /** `count` values as bfloat16 bytes. */
    static QByteArray encode(const float *values, std::size_t count);
    /** Decodes into `out`; false (nothing written) unless `bytes` is `count` bfloat16 values. */
    static bool decode(const QByteArray &bytes, float *out, std::size_t count);
    /** values[i] += decoded[i]; false (nothing changed) unless `bytes` is `count` values. */
    static bool addDecoded(const QByteArray &bytes, float *values, std::size_t count);

    /** Encodes values + the rounding error this object's previous encoding left, and keeps the
     *  new error. A different count starts over with no error carried. */
    QByteArray encodeWithFeedback(const float *values, std::size_t count);
    /** Forgets the carried error (the values it belongs to were thrown away). */
    void reset() { m_residual.clear(); }

    /** A 64-bit FNV-1a hash of the values' bytes as 16 hex digits: the node sends it of the
     *  weights it holds at an epoch's end, the parameter server compares it with its mirror's. */
    static QString fingerprint(const float *values, std::size_t count);

private:
    std::vector<float> m_residual;
};

} // namespace edgetrain::net

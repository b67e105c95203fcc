#include "net/training/compressedexchange.h"

#include <QtEndian>

#include <cmath>

namespace edgetrain::net {

QByteArray CompressedExchange::encode(const float *values, std::size_t count)
{
    QByteArray bytes(qsizetype(count * 2), Qt::Uninitialized);
    auto *out = reinterpret_cast<uchar *>(bytes.data());
    for (std::size_t i = 0; i < count; ++i)
        qToLittleEndian(toBf16(values[i]), out + 2 * i);
    return bytes;
}

namespace {
/** Calls f(i, value) for each of `count` bfloat16 values; false (no call) if the size is wrong. */
template <typename F> bool forEachDecoded(const QByteArray &bytes, std::size_t count, F &&f)
{
    if (std::size_t(bytes.size()) != count * 2)
        return false;
    const auto *in = reinterpret_cast<const uchar *>(bytes.constData());
    for (std::size_t i = 0; i < count; ++i)
        f(i, CompressedExchange::fromBf16(qFromLittleEndian<std::uint16_t>(in + 2 * i)));
    return true;
}
} // namespace

bool CompressedExchange::decode(const QByteArray &bytes, float *out, std::size_t count)
{
    return forEachDecoded(bytes, count, [out](std::size_t i, float v) { out[i] = v; });
}

bool CompressedExchange::addDecoded(const QByteArray &bytes, float *values, std::size_t count)
{
    return forEachDecoded(bytes, count, [values](std::size_t i, float v) { values[i] += v; });
}

QByteArray CompressedExchange::encodeWithFeedback(const float *values, std::size_t count)
{
    if (m_residual.size() != count)
        m_residual.assign(count, 0.0f);
    QByteArray bytes(qsizetype(count * 2), Qt::Uninitialized);
    auto *out = reinterpret_cast<uchar *>(bytes.data());
    for (std::size_t i = 0; i < count; ++i) {
        const float wanted = values[i] + m_residual[i];
        const std::uint16_t sent = toBf16(wanted);
        const float back = fromBf16(sent);
        // A value that is (or rounds to) NaN or infinity is sent as it is and carries nothing
        // over: the run has diverged, and the error must not poison every later push too.
        m_residual[i] = std::isfinite(back) ? wanted - back : 0.0f;
        qToLittleEndian(sent, out + 2 * i);
    }
    return bytes;
}

QString CompressedExchange::fingerprint(const float *values, std::size_t count)
{
    std::uint64_t h = 0xcbf29ce484222325ull;
    const auto *bytes = reinterpret_cast<const unsigned char *>(values);
    for (std::size_t i = 0; i < count * sizeof(float); ++i)
        h = (h ^ bytes[i]) * 0x100000001b3ull;
    return QStringLiteral("%1").arg(h, 16, 16, QLatin1Char('0'));
}

} // namespace edgetrain::net

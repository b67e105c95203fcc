#include "net/protocol/frame.h"

#include <QCborArray>
#include <QCborStreamReader>
#include <QCborValue>
#include <QMessageAuthenticationCode>
#include <QRandomGenerator>
#include <QtEndian>

#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace edgetrain::net {

QByteArray hmacSha256(const QByteArray &key, const char *data, std::size_t size)
{
    QByteArray mac(Frame::kMacBytes, '\0');
    unsigned int length = 0;
    const unsigned char *done = HMAC(EVP_sha256(), key.constData(), int(key.size()),
                                     reinterpret_cast<const unsigned char *>(data), size,
                                     reinterpret_cast<unsigned char *>(mac.data()), &length);
    if (done != nullptr && length == unsigned(Frame::kMacBytes))
        return mac;
    // libcrypto could not (out of memory, a broken OpenSSL configuration): the same HMAC,
    // slower, from Qt, rather than no connection at all.
    return QMessageAuthenticationCode::hash(QByteArray::fromRawData(data, qsizetype(size)), key,
                                            QCryptographicHash::Sha256);
}

QByteArray hmacSha256(const QByteArray &key, const QByteArray &message)
{
    return hmacSha256(key, message.constData(), std::size_t(message.size()));
}

bool constantTimeEquals(const QByteArray &a, const QByteArray &b)
{
    if (a.size() != b.size())
        return false;
    unsigned char diff = 0;
    for (qsizetype i = 0; i < a.size(); ++i)
        diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

QByteArray randomBytes(int count)
{
    QByteArray bytes(count, '\0');
    auto *gen = QRandomGenerator::system();
    for (int i = 0; i < count; ++i)
        bytes[i] = char(gen->bounded(256));
    return bytes;
}

QByteArray Frame::encode(const QByteArray &sessionKey) const
{
    QCborArray payload;
    payload.append(qint64(sequence));
    payload.append(type);
    payload.append(body);
    const QByteArray cbor = QCborValue(payload).toCbor();
    QByteArray out;
    out.reserve(kHeaderBytes + cbor.size() + kMacBytes);
    out.append('E').append('T').append(char(kVersion));
    out.append(char(sessionKey.isEmpty() ? 0 : kAuthenticated));
    char length[4];
    qToBigEndian(quint32(cbor.size()), length);
    out.append(length, 4);
    out.append(cbor);
    if (!sessionKey.isEmpty())
        out.append(hmacSha256(sessionKey, out));
    return out;
}

void FrameDecoder::fail(const QString &what)
{
    if (m_error.isEmpty())
        m_error = QStringLiteral("%1 (stream offset %2)").arg(what).arg(m_offset);
    m_buffer.clear();
}

void FrameDecoder::feed(const QByteArray &bytes)
{
    if (!failed())
        m_buffer.append(bytes);
}

std::optional<Frame> FrameDecoder::next()
{
    if (failed() || m_buffer.isEmpty())
        return std::nullopt;
    const auto *h = reinterpret_cast<const unsigned char *>(m_buffer.constData());
    // Judge the magic as soon as it arrives: garbage is refused at once, not after a timeout.
    if (h[0] != 'E' || (m_buffer.size() > 1 && h[1] != 'T')) {
        fail(QStringLiteral("not an EdgeTrain frame (bad magic bytes)"));
        return std::nullopt;
    }
    if (m_buffer.size() < Frame::kHeaderBytes)
        return std::nullopt;
    if (h[2] != Frame::kVersion) {
        fail(QStringLiteral("protocol version %1 is not supported (this node speaks %2)")
                 .arg(h[2])
                 .arg(Frame::kVersion));
        return std::nullopt;
    }
    const std::uint8_t flags = h[3];
    if (flags & ~Frame::kAuthenticated) {
        fail(QStringLiteral("unknown frame flags 0x%1").arg(flags, 2, 16, QLatin1Char('0')));
        return std::nullopt;
    }
    const quint32 length = qFromBigEndian<quint32>(h + 4);
    if (length > m_maxPayload) {
        fail(QStringLiteral("frame of %1 bytes exceeds the limit of %2")
                 .arg(length)
                 .arg(m_maxPayload));
        return std::nullopt;
    }
    const bool authenticated = flags & Frame::kAuthenticated;
    const qsizetype total =
        Frame::kHeaderBytes + qsizetype(length) + (authenticated ? Frame::kMacBytes : 0);
    if (m_buffer.size() < total)
        return std::nullopt;
    if (authenticated) {
        if (m_key.isEmpty()) {
            fail(QStringLiteral("authenticated frame before the handshake"));
            return std::nullopt;
        }
        const QByteArray mac = m_buffer.mid(Frame::kHeaderBytes + length, Frame::kMacBytes);
        if (!constantTimeEquals(
                hmacSha256(m_key, m_buffer.constData(), std::size_t(Frame::kHeaderBytes + length)),
                mac)) {
            fail(QStringLiteral("frame authentication failed (wrong key or altered bytes)"));
            return std::nullopt;
        }
    } else if (!m_key.isEmpty()) {
        fail(QStringLiteral("unauthenticated frame after the handshake"));
        return std::nullopt;
    }
    QCborParserError parseError;
    const QCborValue payload =
        QCborValue::fromCbor(m_buffer.mid(Frame::kHeaderBytes, length), &parseError);
    if (parseError.error != QCborError::NoError) {
        fail(QStringLiteral("undecodable frame payload: %1 at payload byte %2")
                 .arg(parseError.errorString())
                 .arg(parseError.offset));
        return std::nullopt;
    }
    const QCborArray parts = payload.toArray();
    if (!payload.isArray() || parts.size() != 3 || !parts[0].isInteger() ||
        parts[0].toInteger() < 0 || !parts[1].isString() || !parts[2].isMap()) {
        fail(QStringLiteral("frame payload is not [sequence, type, body]"));
        return std::nullopt;
    }
    Frame frame;
    frame.sequence = std::uint64_t(parts[0].toInteger());
    frame.type = parts[1].toString();
    frame.body = parts[2].toMap();
    frame.authenticated = authenticated;
    m_buffer.remove(0, total);
    m_offset += total;
    return frame;
}

} // namespace edgetrain::net

#pragma once

#include <QByteArray>
#include <QCborMap>
#include <QString>

#include <cstddef>
#include <cstdint>
#include <optional>

namespace edgetrain::net {

/**
 * The control protocol's unit on the wire:
 *
 *   "ET" | version (1 byte) | flags (1 byte) | payload length (4 bytes, big-endian) | payload
 *   [ | HMAC-SHA256 of header + payload (32 bytes), when flags has kAuthenticated ]
 *
 * The payload is CBOR: [sequence number, message type, body map]. Frames after the handshake
 * are authenticated with the session key and carry strictly increasing sequence numbers, so a
 * frame cannot be forged, altered or replayed.
 */
struct Frame
{
    static constexpr std::uint8_t kVersion = 1;
    static constexpr std::uint8_t kAuthenticated = 0x01;
    static constexpr int kHeaderBytes = 8;
    static constexpr int kMacBytes = 32;
    static constexpr std::uint32_t kDefaultMaxPayload = 8u << 20;
    /** Before the handshake completes nobody needs more: a stranger cannot make us buffer MBs. */
    static constexpr std::uint32_t kHandshakeMaxPayload = 4096;

    std::uint64_t sequence = 0;
    QString type;
    QCborMap body;
    bool authenticated = false;

    /** Serialises; with a non-empty key the frame is authenticated. */
    QByteArray encode(const QByteArray &sessionKey = {}) const;
};

/**
 * Cuts a byte stream into frames. Any malformed input (wrong magic or version, a length over the
 * limit, undecodable CBOR, a bad MAC) puts the decoder in a failed state with a message saying
 * what and where; the connection must then be closed. Never throws, never reads past its buffer.
 */
class FrameDecoder
{
public:
    explicit FrameDecoder(std::uint32_t maxPayload = Frame::kDefaultMaxPayload)
        : m_maxPayload(maxPayload)
    {}

    /** The key that authenticated frames are checked with (empty: before the handshake). */
    void setSessionKey(const QByteArray &key) { m_key = key; }
    void setMaxPayload(std::uint32_t bytes) { m_maxPayload = bytes; }
    void feed(const QByteArray &bytes);
    /** The next complete frame, or nothing (need more bytes, or failed()). */
    std::optional<Frame> next();

    bool failed() const { return !m_error.isEmpty(); }
    const QString &error() const { return m_error; }
    /** Bytes consumed so far: the stream offset an error refers to. */
    std::int64_t offset() const { return m_offset; }

private:
    void fail(const QString &what);

    QByteArray m_buffer;
    QByteArray m_key;
    std::uint32_t m_maxPayload;
    std::int64_t m_offset = 0;
    QString m_error;
};

/** HMAC-SHA256(key, message), computed by OpenSSL's libcrypto: with the CPU's SHA instructions
 *  where it has them (x86 SHA-NI, ARMv8 crypto extensions), ~2 GB/s here against Qt's portable
 *  ~0.25 GB/s, which made the MAC of the async pushes half of a 3-node run's CPU. */
QByteArray hmacSha256(const QByteArray &key, const QByteArray &message);
QByteArray hmacSha256(const QByteArray &key, const char *data, std::size_t size);
/** Compares without an early exit (MACs must not leak through timing). */
bool constantTimeEquals(const QByteArray &a, const QByteArray &b);
/** Cryptographically random bytes (QRandomGenerator::system()). */
QByteArray randomBytes(int count);

} // namespace edgetrain::net

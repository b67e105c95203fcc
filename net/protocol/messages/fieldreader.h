#pragma once

#include <QByteArray>
#include <QCborArray>
#include <QCborMap>
#include <QString>

#include <cstdint>
#include <limits>

namespace edgetrain::net {

/**
 * Reads the fields of a message body that came from another process, so that a body that does
 * not hold what its type promises is refused with a sentence naming the message and the field
 * (core::FieldCheck's words: `epoch_done: field "seen" must be a number`), never read as
 * garbage or crash. The first problem is kept; every read after it returns its fallback, so a
 * struct's fromCbor reads all its fields and asks ok() once.
 *
 * Required fields (`integer`, `text`, ...) must be present with the right type; the `...Or`
 * readers take an absent field as their fallback and refuse only a present one of the wrong
 * type or range.
 */
class FieldReader
{
public:
    static constexpr double kAnyNumber = std::numeric_limits<double>::infinity();

    /** `what` names the message in errors ("job", "epoch_done"). */
    FieldReader(const QCborMap &map, QString what) : m_map(map), m_what(std::move(what)) {}

    bool ok() const { return m_error.isEmpty(); }
    /** The first problem, with the message's name in front; empty while ok(). */
    const QString &error() const { return m_error; }
    /** Whether the body holds `key` at all. */
    bool has(const char *key) const;

    std::int64_t integer(const char *key, std::int64_t lo, std::int64_t hi);
    std::int64_t integerOr(const char *key, std::int64_t fallback, std::int64_t lo,
                           std::int64_t hi);
    /** An integer or a floating-point number in [lo, hi]; with lo = -kAnyNumber and hi =
     *  kAnyNumber any value, NaN and infinities included (a diverged run's loss is news, not a
     *  malformed body). */
    double number(const char *key, double lo = -kAnyNumber, double hi = kAnyNumber);
    double numberOr(const char *key, double fallback, double lo = -kAnyNumber,
                    double hi = kAnyNumber);
    QString text(const char *key, int maxLength = 4096);
    QString textOr(const char *key, const QString &fallback, int maxLength = 4096);
    bool boolean(const char *key);
    bool booleanOr(const char *key, bool fallback);
    QByteArray bytes(const char *key, qsizetype maxBytes = std::numeric_limits<qsizetype>::max());
    /** Absent: empty. */
    QByteArray bytesOr(const char *key, qsizetype maxBytes = std::numeric_limits<qsizetype>::max());
    QCborMap map(const char *key);
    QCborArray array(const char *key);

    /** Records a problem found across fields (keeps the first); `problem` in FieldCheck's words
     *  without the message's name. */
    void fail(const QString &problem);
    /** `field "KEY" must be EXPECTED`, recorded. */
    void mustBe(const char *key, const std::string &expected);

private:
    /** The value of a field being read, or nothing after an earlier problem. */
    bool take(const char *key, QCborValue *value) const;

    const QCborMap &m_map;
    QString m_what;
    QString m_error;
};

} // namespace edgetrain::net

#include "net/protocol/messages/fieldreader.h"

#include "core/fieldcheck.h"

#include <cmath>
#include <string>

namespace edgetrain::net {

namespace {

std::string numberRange(double lo, double hi)
{
    if (std::isinf(lo) && std::isinf(hi))
        return "a number";
    return core::FieldCheck::numberFrom(lo, hi);
}

} // namespace

bool FieldReader::has(const char *key) const
{
    return m_map.contains(QLatin1String(key));
}

bool FieldReader::take(const char *key, QCborValue *value) const
{
    if (!ok())
        return false;
    *value = m_map.value(QLatin1String(key));
    return true;
}

void FieldReader::fail(const QString &problem)
{
    if (ok() && !problem.isEmpty())
        m_error = m_what + QStringLiteral(": ") + problem;
}

void FieldReader::mustBe(const char *key, const std::string &expected)
{
    fail(QString::fromStdString(core::FieldCheck::mustBe(key, expected)));
}

std::int64_t FieldReader::integer(const char *key, std::int64_t lo, std::int64_t hi)
{
    QCborValue v;
    if (!take(key, &v))
        return lo;
    if (!v.isInteger()) {
        mustBe(key, core::FieldCheck::integerFrom(lo, hi));
        return lo;
    }
    const std::string problem = core::FieldCheck::integerIn(key, v.toInteger(), lo, hi);
    fail(QString::fromStdString(problem));
    return problem.empty() ? v.toInteger() : lo;
}

std::int64_t FieldReader::integerOr(const char *key, std::int64_t fallback, std::int64_t lo,
                                    std::int64_t hi)
{
    return has(key) ? integer(key, lo, hi) : fallback;
}

double FieldReader::number(const char *key, double lo, double hi)
{
    QCborValue v;
    if (!take(key, &v))
        return 0.0;
    if (!v.isInteger() && !v.isDouble()) {
        mustBe(key, numberRange(lo, hi));
        return 0.0;
    }
    const double x = v.isInteger() ? double(v.toInteger()) : v.toDouble();
    if (std::isinf(lo) && std::isinf(hi))
        return x;
    const std::string problem = core::FieldCheck::numberIn(key, x, lo, hi);
    fail(QString::fromStdString(problem));
    return problem.empty() ? x : lo;
}

double FieldReader::numberOr(const char *key, double fallback, double lo, double hi)
{
    return has(key) ? number(key, lo, hi) : fallback;
}

QString FieldReader::text(const char *key, int maxLength)
{
    QCborValue v;
    if (!take(key, &v))
        return {};
    if (!v.isString() || v.toString().size() > maxLength) {
        mustBe(key, "a string of at most " + std::to_string(maxLength) + " characters");
        return {};
    }
    return v.toString();
}

QString FieldReader::textOr(const char *key, const QString &fallback, int maxLength)
{
    return has(key) ? text(key, maxLength) : fallback;
}

bool FieldReader::boolean(const char *key)
{
    QCborValue v;
    if (!take(key, &v))
        return false;
    if (!v.isBool()) {
        mustBe(key, "true or false");
        return false;
    }
    return v.toBool();
}

bool FieldReader::booleanOr(const char *key, bool fallback)
{
    return has(key) ? boolean(key) : fallback;
}

QByteArray FieldReader::bytes(const char *key, qsizetype maxBytes)
{
    QCborValue v;
    if (!take(key, &v))
        return {};
    if (!v.isByteArray() || v.toByteArray().size() > maxBytes) {
        mustBe(key, maxBytes == std::numeric_limits<qsizetype>::max()
                        ? std::string("bytes")
                        : "at most " + std::to_string(maxBytes) + " bytes");
        return {};
    }
    return v.toByteArray();
}

QByteArray FieldReader::bytesOr(const char *key, qsizetype maxBytes)
{
    return has(key) ? bytes(key, maxBytes) : QByteArray();
}

QCborMap FieldReader::map(const char *key)
{
    QCborValue v;
    if (!take(key, &v))
        return {};
    if (!v.isMap()) {
        mustBe(key, "a map");
        return {};
    }
    return v.toMap();
}

QCborArray FieldReader::array(const char *key)
{
    QCborValue v;
    if (!take(key, &v))
        return {};
    if (!v.isArray()) {
        mustBe(key, "a list");
        return {};
    }
    return v.toArray();
}

} // namespace edgetrain::net

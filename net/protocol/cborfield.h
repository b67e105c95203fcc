#pragma once

#include <QCborValue>

namespace edgetrain::net {

/** The integer a received CBOR value holds, or `fallback` if it holds none. Not
 *  QCborValue::toInteger(): that converts a double (what Qt decodes an integer beyond int64 to)
 *  without a range check, undefined behaviour for 1e19 (UBSan's finding under fuzz_messages). */
inline qint64 cborInteger(const QCborValue &value, qint64 fallback = 0)
{
    return value.isInteger() ? value.toInteger() : fallback;
}

} // namespace edgetrain::net

#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace edgetrain::core {

/**
 * What every reader of structured input accepts in a field, and how it says no: model specs
 * (core/modelspec.cpp), sessions (app/session/sessionread.cpp) and cluster jobs
 * (net/training/job.cpp) each find the value in their own container (core::Json, QJsonValue,
 * QCborValue) and ask here, so a user reads the same sentence wherever a value is wrong:
 *
 *     field "plan.batch" must be an integer from 1 to 1048576, got 0
 *     missing field "out_channels"
 *
 * Numbers in messages are locale-free (NumberText).
 */
namespace FieldCheck {
/** `field "F" must be EXPECTED`, and `, got G` when there was a value. */
std::string mustBe(std::string_view field, std::string_view expected, std::string_view got = {});
/** `missing field "F"` */
std::string missing(std::string_view field);
/** "an integer from LO to HI" */
std::string integerFrom(std::int64_t lo, std::int64_t hi);
/** "a number from LO to HI" */
std::string numberFrom(double lo, double hi);
/** Empty when `value` lies in [lo, hi]; the message for `field` otherwise. */
std::string integerIn(std::string_view field, std::int64_t value, std::int64_t lo, std::int64_t hi);
/** Empty when `value` lies in [lo, hi] (NaN never does); the message for `field` otherwise. */
std::string numberIn(std::string_view field, double value, double lo, double hi);
/** Whether a JSON or CBOR number is an integer that int64 holds exactly. */
bool isIntegral(double value);
} // namespace FieldCheck

} // namespace edgetrain::core

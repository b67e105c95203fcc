#include "fieldcheck.h"

#include "numbertext.h"

#include <cmath>

namespace edgetrain::core::FieldCheck {

namespace {

std::string numberText(double v)
{
    return std::isfinite(v) ? NumberText::format(v)
           : std::isnan(v)  ? "NaN"
           : v > 0          ? "infinity"
                            : "-infinity";
}

} // namespace

std::string mustBe(std::string_view field, std::string_view expected, std::string_view got)
{
    std::string text = "field \"" + std::string(field) + "\" must be " + std::string(expected);
    if (!got.empty())
        text += ", got " + std::string(got);
    return text;
}

std::string missing(std::string_view field)
{
    return "missing field \"" + std::string(field) + "\"";
}

std::string integerFrom(std::int64_t lo, std::int64_t hi)
{
    return "an integer from " + std::to_string(lo) + " to " + std::to_string(hi);
}

std::string numberFrom(double lo, double hi)
{
    return "a number from " + numberText(lo) + " to " + numberText(hi);
}

std::string integerIn(std::string_view field, std::int64_t value, std::int64_t lo, std::int64_t hi)
{
    return value >= lo && value <= hi ? std::string()
                                      : mustBe(field, integerFrom(lo, hi), std::to_string(value));
}

std::string numberIn(std::string_view field, double value, double lo, double hi)
{
    return value >= lo && value <= hi ? std::string()
                                      : mustBe(field, numberFrom(lo, hi), numberText(value));
}

bool isIntegral(double value)
{
    // 2^63 itself is out of int64's range; every double below it that is integral fits.
    return std::isfinite(value) && value == std::trunc(value) &&
           std::fabs(value) < 9.2233720368547758e18;
}

} // namespace edgetrain::core::FieldCheck

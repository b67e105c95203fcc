#include "numbertext.h"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace edgetrain::core {

std::string NumberText::format(double value)
{
    char buf[64];
    if (value == std::floor(value) && std::fabs(value) < 9.0e15) {
        const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<std::int64_t>(value));
        return std::string(buf, r.ptr);
    }
    const auto r = std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, r.ptr);
}

std::string NumberText::fixed(double value, int decimals)
{
    char buf[400];
    const auto r = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, decimals);
    return std::string(buf, r.ptr);
}

std::string NumberText::bytes(std::int64_t bytes)
{
    constexpr std::int64_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;
    const std::int64_t size = bytes < 0 ? -bytes : bytes;
    if (size >= GiB)
        return fixed(double(bytes) / double(GiB), 2) + " GiB";
    if (size >= MiB)
        return fixed(double(bytes) / double(MiB), 1) + " MiB";
    if (size >= KiB)
        return fixed(double(bytes) / double(KiB), 1) + " KiB";
    return std::to_string(bytes) + " B";
}

std::optional<double> NumberText::parsePrefix(std::string_view text, std::size_t *used)
{
    double value = 0.0;
    // from_chars accepts no leading '+'; JSON has none either.
    const auto r = std::from_chars(text.data(), text.data() + text.size(), value);
    if (r.ec != std::errc()) {
        if (used)
            *used = 0;
        return std::nullopt;
    }
    if (used)
        *used = std::size_t(r.ptr - text.data());
    return value;
}

std::optional<double> NumberText::parse(std::string_view text)
{
    std::size_t used = 0;
    const auto value = parsePrefix(text, &used);
    if (!value || used != text.size())
        return std::nullopt;
    return value;
}

} // namespace edgetrain::core

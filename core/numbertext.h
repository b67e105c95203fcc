#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace edgetrain::core {

/**
 * Numbers as text, the same bytes in every locale. The C library's strtod / printf follow the
 * process locale (Qt sets it from the environment), so under de_DE.UTF-8 they write and read
 * "0,05": files and --json output would then differ by machine. Everything in core that turns a
 * number into text or back goes through these (std::to_chars / std::from_chars).
 */
namespace NumberText {
/** Shortest text that reads back as exactly `value` ("0.05", "1e-07"); integral values up to
 *  2^53 without exponent or point ("3"). Not for NaN or infinity (the caller decides). */
std::string format(double value);
/** Fixed notation with `decimals` digits after the point ("1.5"). */
std::string fixed(double value, int decimals);
/** A size in binary units for people to read, locale-free: "512 B", "12.3 KiB", "300.0 MiB",
 *  "1.50 GiB". The one formatter below Qt (the CLI, the node's logs); the window uses
 *  QLocale::formattedDataSize, in the user's locale. */
std::string bytes(std::int64_t bytes);
/** The whole of `text` as a number in JSON's syntax (optional sign, digits, '.', exponent);
 *  nothing if any character is left over or the text is not a number. */
std::optional<double> parse(std::string_view text);
/** The longest number at the start of `text`; `used` gets its length (0: none). */
std::optional<double> parsePrefix(std::string_view text, std::size_t *used);
} // namespace NumberText

} // namespace edgetrain::core

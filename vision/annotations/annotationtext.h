#pragma once

#include "core/json.h"

#include <opencv2/core.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

/** What the annotation codecs and truth.json share: locale-free numbers, line and field
 *  splitting, frame and box checks that name where the input is wrong. */
namespace edgetrain::vision::Internal {

/** The label that marks a box neither required nor a false detection when found. */
inline constexpr const char *kIgnoreLabel = "ignore";

/** Locale-free number text: fixed with `decimals`, trailing zeros dropped. */
std::string num(double v, int decimals);
std::string_view trim(std::string_view s);
/** The whole of `s` as a finite number (std::from_chars: no locale). */
bool parseNumber(std::string_view s, double &out);
/** The whole of `s` as a whole number within +-1e9. */
bool parseInteger(std::string_view s, int &out);
/** The last run of digits in a file name's stem ("frame_000123.png" -> 123); -1 if none. */
int numberInName(const std::string &name);
/** "frame_000123" + extension. */
std::string frameFileName(int index, const char *extension);

/** Splits text into lines (LF or CRLF). */
std::vector<std::string_view> lines(std::string_view text);
/** Fields between `separator`s, each trimmed. */
std::vector<std::string_view> split(std::string_view line, char separator);
/** Fields between runs of white space. */
std::vector<std::string_view> splitSpaces(std::string_view line);

/** Checks a frame number against [0, frame_count) (unbounded if frame_count <= 0); `base` is
 *  added to the number shown, as the format writes it. Throws core::FormatError at `where`. */
void checkFrame(int index, int frameCount, int base, const std::string &where);
/**
 * A box in frame pixels, checked: positive size, at most 1 px outside the frame (then clipped).
 * `fields`: how the format names the left, top, right and bottom sides, for the message.
 */
cv::Rect2d checkBox(cv::Rect2d b, cv::Size frame, const std::string &where,
                    const std::array<const char *, 4> &fields);

/** Writes `text` to `path` atomically, creating its folder if needed. Throws core::IoError. */
void writeTextFile(const std::string &path, std::string_view text);

/** Typed lookups into a JSON document that name the path of what is wrong (core::FormatError
 *  "<file>: <path>: <what>"). */
struct JsonReader
{
    std::string file;

    [[noreturn]] void fail(const std::string &path, const std::string &what) const;
    const core::Json &field(const core::Json &object, const std::string &path,
                            const char *key) const;
    const core::Json::Array &array(const core::Json &object, const std::string &path,
                                   const char *key) const;
    double number(const core::Json &v, const std::string &path) const;
    std::int64_t integer(const core::Json &v, const std::string &path) const;
    const std::string &text(const core::Json &v, const std::string &path) const;
};

} // namespace edgetrain::vision::Internal

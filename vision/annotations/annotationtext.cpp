#include "vision/annotations/annotationtext.h"

#include "core/error.h"
#include "core/fileio.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <system_error>

namespace edgetrain::vision::Internal {

namespace fs = std::filesystem;

/** Locale-free number text: fixed with `decimals`, trailing zeros dropped. */
std::string num(double v, int decimals)
{
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    if (r.ec != std::errc()) // past 1e63 fixed notation does not fit: the shortest form does
        r = std::to_chars(buf, buf + sizeof buf, v);
    std::string s(buf, r.ptr);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0')
            s.pop_back();
        if (s.back() == '.')
            s.pop_back();
    }
    if (s == "-0")
        s = "0";
    return s;
}

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

/** The whole of `s` as a finite number (std::from_chars: no locale). */
bool parseNumber(std::string_view s, double &out)
{
    s = trim(s);
    if (!s.empty() && s.front() == '+')
        s.remove_prefix(1);
    if (s.empty())
        return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(out);
}

bool parseInteger(std::string_view s, int &out)
{
    double d = 0;
    if (!parseNumber(s, d) || d != std::floor(d) || std::abs(d) > 1e9)
        return false;
    out = int(d);
    return true;
}

/** The last run of digits in a file name's stem ("frame_000123.png" -> 123); -1 if none. */
int numberInName(const std::string &name)
{
    const std::string stem = fs::path(name).stem().string();
    const auto last = stem.find_last_of("0123456789");
    if (last == std::string::npos)
        return -1;
    auto first = last;
    while (first > 0 && std::isdigit(static_cast<unsigned char>(stem[first - 1])))
        --first;
    if (last - first >= 9)
        return -1;
    return std::stoi(stem.substr(first, last - first + 1));
}

std::string frameFileName(int index, const char *extension)
{
    std::string digits = std::to_string(index);
    if (digits.size() < 6)
        digits.insert(0, 6 - digits.size(), '0');
    return "frame_" + digits + extension;
}

/** Checks a frame number against [lo, lo + frame_count); `shown` is the number as written. */
void checkFrame(int index, int frameCount, int base, const std::string &where)
{
    if (index < 0 || (frameCount > 0 && index >= frameCount))
        throw core::FormatError(
            where + ": frame " + std::to_string(index + base) + " is not in the video (" +
            (frameCount > 0 ? std::to_string(base) + ".." + std::to_string(frameCount - 1 + base)
                            : ">= " + std::to_string(base)) +
            ")");
}

/**
 * A box in frame pixels, checked: positive size, at most 1 px outside the frame (then clipped).
 * `fields`: how the format names the left, top, right and bottom sides, for the message.
 */
cv::Rect2d checkBox(cv::Rect2d b, cv::Size frame, const std::string &where,
                    const std::array<const char *, 4> &fields)
{
    if (!(b.width > 0))
        throw core::FormatError(where + ": field '" + fields[2] + "': the box has no width (" +
                                num(b.width, 3) + ")");
    if (!(b.height > 0))
        throw core::FormatError(where + ": field '" + fields[3] + "': the box has no height (" +
                                num(b.height, 3) + ")");
    const std::string size = std::to_string(frame.width) + "x" + std::to_string(frame.height);
    auto outside = [&](const char *field, const std::string &what) {
        throw core::FormatError(where + ": field '" + field + "': the box " + what + " of the " +
                                size + " frame");
    };
    constexpr double kTolerance_px = 1.0;
    if (b.x < -kTolerance_px)
        outside(fields[0], "starts left (x " + num(b.x, 2) + ")");
    if (b.y < -kTolerance_px)
        outside(fields[1], "starts above (y " + num(b.y, 2) + ")");
    if (b.x + b.width > frame.width + kTolerance_px)
        outside(fields[2], "ends right (right edge " + num(b.x + b.width, 2) + ")");
    if (b.y + b.height > frame.height + kTolerance_px)
        outside(fields[3], "ends below (bottom edge " + num(b.y + b.height, 2) + ")");
    const cv::Rect2d clipped = b & cv::Rect2d(0, 0, frame.width, frame.height);
    if (clipped.width <= 0 || clipped.height <= 0)
        throw core::FormatError(where + ": the box lies outside the " + size + " frame");
    return clipped;
}

/** Splits text into lines (LF or CRLF). */
std::vector<std::string_view> lines(std::string_view text)
{
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string_view::npos)
            end = text.size();
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

std::vector<std::string_view> split(std::string_view line, char separator)
{
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        const auto end = line.find(separator, start);
        out.push_back(trim(line.substr(start, end - start)));
        if (end == std::string_view::npos)
            return out;
        start = end + 1;
    }
}

std::vector<std::string_view> splitSpaces(std::string_view line)
{
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i])))
            ++i;
        const auto start = i;
        while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i])))
            ++i;
        if (i > start)
            out.push_back(line.substr(start, i - start));
    }
    return out;
}

void writeTextFile(const std::string &path, std::string_view text)
{
    const fs::path parent = fs::path(path).parent_path();
    std::error_code error;
    if (!parent.empty())
        fs::create_directories(parent, error);
    if (error)
        throw core::IoError("cannot create the folder '" + parent.string() +
                            "': " + error.message());
    core::writeFileAtomically(path, text);
}

void JsonReader::fail(const std::string &path, const std::string &what) const
{
    throw core::FormatError(file + ": " + path + ": " + what);
}

const core::Json &JsonReader::field(const core::Json &object, const std::string &path,
                                    const char *key) const
{
    const core::Json *v = object.isObject() ? object.find(key) : nullptr;
    if (!v)
        fail(path + "." + key, "missing");
    return *v;
}

const core::Json::Array &JsonReader::array(const core::Json &object, const std::string &path,
                                           const char *key) const
{
    const core::Json &v = field(object, path, key);
    if (!v.isArray())
        fail(path + "." + key, "not an array");
    return v.toArray();
}

double JsonReader::number(const core::Json &v, const std::string &path) const
{
    if (!v.isNumber())
        fail(path, "not a number");
    return v.toDouble();
}

std::int64_t JsonReader::integer(const core::Json &v, const std::string &path) const
{
    const double d = number(v, path);
    if (d != std::floor(d) || std::abs(d) > 1e15)
        fail(path, "not a whole number (" + num(d, 3) + ")");
    return std::int64_t(d);
}

const std::string &JsonReader::text(const core::Json &v, const std::string &path) const
{
    if (!v.isString())
        fail(path, "not a string");
    return v.toString();
}

} // namespace edgetrain::vision::Internal

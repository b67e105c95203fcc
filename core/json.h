#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace edgetrain::core {

/**
 * A JSON value, for the few JSON documents core reads and writes itself (ModelSpec files,
 * safetensors headers, CLI results). Objects keep their keys in insertion order so that written
 * files are stable. Integers (written without fraction or exponent, within int64) are held
 * exactly, other numbers as doubles; both are written locale-free, doubles in their shortest
 * round-trip form. parse() throws FormatError naming the source, line and column.
 */
class Json
{
public:
    using Array = std::vector<Json>;
    using Object = std::vector<std::pair<std::string, Json>>;

    Json() = default; // null
    Json(std::nullptr_t) {}
    Json(bool b) : m_value(b) {}
    Json(double d) : m_value(d) {}
    Json(int i) : m_value(static_cast<std::int64_t>(i)) {}
    Json(std::int64_t i) : m_value(i) {}
    Json(std::uint64_t i); // exact up to INT64_MAX, a double above
    Json(const char *s) : m_value(std::string(s)) {}
    Json(std::string s) : m_value(std::move(s)) {}
    Json(Array a) : m_value(std::move(a)) {}
    Json(Object o) : m_value(std::move(o)) {}

    static Json array() { return Json(Array{}); }
    static Json object() { return Json(Object{}); }

    bool isNull() const { return std::holds_alternative<std::monostate>(m_value); }
    bool isBool() const { return std::holds_alternative<bool>(m_value); }
    bool isNumber() const
    {
        return std::holds_alternative<double>(m_value) ||
               std::holds_alternative<std::int64_t>(m_value);
    }
    /** A number written without fraction or exponent that fits int64 (kept exactly). */
    bool isInteger() const { return std::holds_alternative<std::int64_t>(m_value); }
    bool isString() const { return std::holds_alternative<std::string>(m_value); }
    bool isArray() const { return std::holds_alternative<Array>(m_value); }
    bool isObject() const { return std::holds_alternative<Object>(m_value); }

    // Accessors throw FormatError("expected ...") when the type does not match.
    bool toBool() const;
    double toDouble() const;
    std::int64_t toInt() const; // exact for integers; a double must be integral and within 2^53
    const std::string &toString() const;
    const Array &toArray() const;
    const Object &toObject() const;
    Array &toArray();
    Object &toObject();

    /** Object lookup; nullptr if absent (or not an object). */
    const Json *find(std::string_view key) const;
    /** Object insert-or-replace; turns null into an object. Returns *this for chaining. */
    Json &set(std::string key, Json value);
    /** Array append; turns null into an array. */
    Json &push(Json value);

    std::string dump(int indent = -1) const; // -1: compact

    /** Parses text; `source` names the file or stream in error messages. */
    static Json parse(std::string_view text, std::string_view source = "JSON");
    /** Reads and parses a file; throws IoError "<cannot> '<path>'" if it cannot be read (e.g.
     *  "cannot open model spec"), FormatError naming the file if it is not JSON. */
    static Json parseFile(const std::string &path, std::string_view cannot);

private:
    std::variant<std::monostate, bool, double, std::int64_t, std::string, Array, Object> m_value;
    void dumpTo(std::string &out, int indent, int depth) const;
};

} // namespace edgetrain::core

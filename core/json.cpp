#include "json.h"

#include "error.h"
#include "fileio.h"
#include "numbertext.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace edgetrain::core {

namespace {

class Parser
{
public:
    Parser(std::string_view text, std::string_view source) : m_text(text), m_source(source) {}

    Json document()
    {
        Json v = value(0);
        skipSpace();
        if (m_pos != m_text.size())
            fail("unexpected characters after the JSON value");
        return v;
    }

private:
    [[noreturn]] void fail(const std::string &what) const
    {
        std::size_t line = 1, column = 1;
        for (std::size_t i = 0; i < m_pos && i < m_text.size(); ++i) {
            if (m_text[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        throw FormatError(std::string(m_source) + ":" + std::to_string(line) + ":" +
                          std::to_string(column) + ": " + what);
    }

    void skipSpace()
    {
        while (m_pos < m_text.size() && (m_text[m_pos] == ' ' || m_text[m_pos] == '\n' ||
                                         m_text[m_pos] == '\r' || m_text[m_pos] == '\t'))
            ++m_pos;
    }

    bool consume(std::string_view word)
    {
        if (m_text.substr(m_pos, word.size()) == word) {
            m_pos += word.size();
            return true;
        }
        return false;
    }

    Json value(int depth)
    {
        if (depth > 64)
            fail("nesting deeper than 64 levels");
        skipSpace();
        if (m_pos >= m_text.size())
            fail("unexpected end of input");
        const char c = m_text[m_pos];
        if (c == '{')
            return object(depth);
        if (c == '[')
            return array(depth);
        if (c == '"')
            return Json(string());
        if (consume("true"))
            return Json(true);
        if (consume("false"))
            return Json(false);
        if (consume("null"))
            return Json();
        if (c == '-' || (c >= '0' && c <= '9'))
            return number();
        fail(std::string("unexpected character '") + c + "'");
    }

    Json object(int depth)
    {
        ++m_pos; // {
        Json::Object members;
        skipSpace();
        if (m_pos < m_text.size() && m_text[m_pos] == '}') {
            ++m_pos;
            return Json(std::move(members));
        }
        for (;;) {
            skipSpace();
            if (m_pos >= m_text.size() || m_text[m_pos] != '"')
                fail("expected a quoted key");
            std::string key = string();
            skipSpace();
            if (m_pos >= m_text.size() || m_text[m_pos] != ':')
                fail("expected ':' after key \"" + key + "\"");
            ++m_pos;
            for (const auto &[k, v] : members)
                if (k == key)
                    fail("duplicate key \"" + key + "\"");
            members.emplace_back(std::move(key), value(depth + 1));
            skipSpace();
            if (m_pos < m_text.size() && m_text[m_pos] == ',') {
                ++m_pos;
                continue;
            }
            if (m_pos < m_text.size() && m_text[m_pos] == '}') {
                ++m_pos;
                return Json(std::move(members));
            }
            fail("expected ',' or '}' in object");
        }
    }

    Json array(int depth)
    {
        ++m_pos; // [
        Json::Array items;
        skipSpace();
        if (m_pos < m_text.size() && m_text[m_pos] == ']') {
            ++m_pos;
            return Json(std::move(items));
        }
        for (;;) {
            items.push_back(value(depth + 1));
            skipSpace();
            if (m_pos < m_text.size() && m_text[m_pos] == ',') {
                ++m_pos;
                continue;
            }
            if (m_pos < m_text.size() && m_text[m_pos] == ']') {
                ++m_pos;
                return Json(std::move(items));
            }
            fail("expected ',' or ']' in array");
        }
    }

    static void appendUtf8(std::string &out, unsigned cp)
    {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    unsigned hex4()
    {
        if (m_pos + 4 > m_text.size())
            fail("truncated \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
            const char h = m_text[m_pos++];
            v <<= 4;
            if (h >= '0' && h <= '9')
                v |= unsigned(h - '0');
            else if (h >= 'a' && h <= 'f')
                v |= unsigned(h - 'a' + 10);
            else if (h >= 'A' && h <= 'F')
                v |= unsigned(h - 'A' + 10);
            else
                fail("bad hex digit in \\u escape");
        }
        return v;
    }

    std::string string()
    {
        ++m_pos; // "
        std::string out;
        for (;;) {
            if (m_pos >= m_text.size())
                fail("unterminated string");
            const char c = m_text[m_pos++];
            if (c == '"')
                return out;
            if (static_cast<unsigned char>(c) < 0x20)
                fail("control character in string");
            if (c != '\\') {
                out += c;
                continue;
            }
            if (m_pos >= m_text.size())
                fail("unterminated escape");
            switch (const char e = m_text[m_pos++]) {
            case '"':
                out += '"';
                break;
            case '\\':
                out += '\\';
                break;
            case '/':
                out += '/';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                unsigned cp = hex4();
                if (cp >= 0xD800 && cp < 0xDC00) {
                    if (!consume("\\u"))
                        fail("unpaired surrogate in \\u escape");
                    const unsigned low = hex4();
                    if (low < 0xDC00 || low >= 0xE000)
                        fail("bad low surrogate in \\u escape");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                }
                appendUtf8(out, cp);
                break;
            }
            default:
                fail(std::string("unknown escape '\\") + e + "'");
            }
        }
    }

    Json number()
    {
        const std::size_t start = m_pos;
        if (m_text[m_pos] == '-')
            ++m_pos;
        auto digits = [&] {
            const std::size_t from = m_pos;
            while (m_pos < m_text.size() && m_text[m_pos] >= '0' && m_text[m_pos] <= '9')
                ++m_pos;
            return m_pos > from;
        };
        if (!digits())
            fail("expected digits");
        if (m_pos < m_text.size() && m_text[m_pos] == '.') {
            ++m_pos;
            if (!digits())
                fail("expected digits after '.'");
        }
        if (m_pos < m_text.size() && (m_text[m_pos] == 'e' || m_text[m_pos] == 'E')) {
            ++m_pos;
            if (m_pos < m_text.size() && (m_text[m_pos] == '+' || m_text[m_pos] == '-'))
                ++m_pos;
            if (!digits())
                fail("expected digits in exponent");
        }
        const std::string_view token = m_text.substr(start, m_pos - start);
        if (token.find_first_of(".eE") == std::string_view::npos) {
            // An integer: exact in int64 (a double would round above 2^53).
            std::int64_t i = 0;
            const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), i);
            if (ec == std::errc() && end == token.data() + token.size())
                return Json(i);
        }
        // Locale-free: strtod would read "0.05" as 0 under a comma-decimal locale.
        const auto value = NumberText::parse(token);
        if (!value)
            fail("number out of range");
        return Json(*value);
    }

    std::string_view m_text;
    std::string_view m_source;
    std::size_t m_pos = 0;
};

void escapeTo(std::string &out, const std::string &s)
{
    out += '"';
    for (const char c : s) {
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(c));
                out += buf;
            } else {
                out += c;
            }
        }
    }
    out += '"';
}

[[noreturn]] void typeError(const char *expected)
{
    throw FormatError(std::string("expected a JSON ") + expected);
}

} // namespace

bool Json::toBool() const
{
    if (!isBool())
        typeError("boolean");
    return std::get<bool>(m_value);
}

Json::Json(std::uint64_t i)
{
    if (i <= std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        m_value = std::int64_t(i);
    else
        m_value = double(i);
}

double Json::toDouble() const
{
    if (isInteger())
        return double(std::get<std::int64_t>(m_value));
    if (!isNumber())
        typeError("number");
    return std::get<double>(m_value);
}

std::int64_t Json::toInt() const
{
    if (isInteger())
        return std::get<std::int64_t>(m_value);
    const double d = toDouble();
    if (d != std::floor(d) || std::fabs(d) > 9007199254740992.0) // 2^53: beyond, not exact
        typeError("integer");
    return static_cast<std::int64_t>(d);
}

const std::string &Json::toString() const
{
    if (!isString())
        typeError("string");
    return std::get<std::string>(m_value);
}

const Json::Array &Json::toArray() const
{
    if (!isArray())
        typeError("array");
    return std::get<Array>(m_value);
}

const Json::Object &Json::toObject() const
{
    if (!isObject())
        typeError("object");
    return std::get<Object>(m_value);
}

Json::Array &Json::toArray()
{
    if (!isArray())
        typeError("array");
    return std::get<Array>(m_value);
}

Json::Object &Json::toObject()
{
    if (!isObject())
        typeError("object");
    return std::get<Object>(m_value);
}

const Json *Json::find(std::string_view key) const
{
    if (!isObject())
        return nullptr;
    for (const auto &[k, v] : std::get<Object>(m_value))
        if (k == key)
            return &v;
    return nullptr;
}

Json &Json::set(std::string key, Json value)
{
    if (isNull())
        m_value = Object{};
    auto &members = toObject();
    for (auto &[k, v] : members)
        if (k == key) {
            v = std::move(value);
            return *this;
        }
    members.emplace_back(std::move(key), std::move(value));
    return *this;
}

Json &Json::push(Json value)
{
    if (isNull())
        m_value = Array{};
    toArray().push_back(std::move(value));
    return *this;
}

std::string Json::dump(int indent) const
{
    std::string out;
    dumpTo(out, indent, 0);
    return out;
}

void Json::dumpTo(std::string &out, int indent, int depth) const
{
    auto newline = [&](int d) {
        if (indent < 0)
            return;
        out += '\n';
        out.append(static_cast<std::size_t>(indent * d), ' ');
    };
    if (isNull()) {
        out += "null";
    } else if (isBool()) {
        out += std::get<bool>(m_value) ? "true" : "false";
    } else if (isInteger()) {
        char text[24];
        const auto [end, ec] =
            std::to_chars(text, text + sizeof text, std::get<std::int64_t>(m_value));
        out.append(text, ec == std::errc() ? end : text);
    } else if (isNumber()) {
        const double d = std::get<double>(m_value);
        if (!std::isfinite(d)) {
            out += "null"; // JSON has no NaN/inf
        } else {
            out += NumberText::format(d); // shortest round trip, the same in every locale
        }
    } else if (isString()) {
        escapeTo(out, std::get<std::string>(m_value));
    } else if (isArray()) {
        const auto &a = std::get<Array>(m_value);
        out += '[';
        for (std::size_t i = 0; i < a.size(); ++i) {
            if (i)
                out += ',';
            newline(depth + 1);
            a[i].dumpTo(out, indent, depth + 1);
        }
        if (!a.empty())
            newline(depth);
        out += ']';
    } else {
        const auto &o = std::get<Object>(m_value);
        out += '{';
        for (std::size_t i = 0; i < o.size(); ++i) {
            if (i)
                out += ',';
            newline(depth + 1);
            escapeTo(out, o[i].first);
            out += indent < 0 ? ":" : ": ";
            o[i].second.dumpTo(out, indent, depth + 1);
        }
        if (!o.empty())
            newline(depth);
        out += '}';
    }
}

Json Json::parse(std::string_view text, std::string_view source)
{
    return Parser(text, source).document();
}

Json Json::parseFile(const std::string &path, std::string_view cannot)
{
    std::error_code error;
    const std::string text = readFile(path, error);
    if (error)
        throw IoError(std::string(cannot) + " '" + path + "': " + error.message());
    return parse(text, path);
}

} // namespace edgetrain::core

#include "shape.h"

#include "error.h"

#include <charconv>

namespace edgetrain::core {

std::int64_t Shape::numel() const
{
    std::int64_t n = 1;
    for (auto d : m_dims)
        n *= d;
    return n;
}

Shape Shape::sample() const
{
    return Shape(
        std::vector<std::int64_t>(m_dims.begin() + (m_dims.empty() ? 0 : 1), m_dims.end()));
}

std::string Shape::toString() const
{
    std::string s = "[";
    for (std::size_t i = 0; i < m_dims.size(); ++i) {
        if (i)
            s += ", ";
        s += std::to_string(m_dims[i]);
    }
    return s + "]";
}

Shape parseSampleShape(const std::string &text)
{
    std::vector<std::int64_t> dims;
    const char *p = text.data();
    const char *end = p + text.size();
    while (p < end) {
        std::int64_t v = 0;
        auto [next, ec] = std::from_chars(p, end, v);
        if (ec != std::errc() || v <= 0 || v > (1 << 20))
            throw SpecError("input shape '" + text + "': expected positive sizes like 3x32x32");
        dims.push_back(v);
        p = next;
        if (p < end) {
            if (*p != 'x' && *p != 'X')
                throw SpecError("input shape '" + text + "': expected sizes separated by 'x'");
            ++p;
            if (p == end)
                throw SpecError("input shape '" + text + "' ends with 'x'");
        }
    }
    if (dims.empty() || dims.size() > 3)
        throw SpecError("input shape '" + text + "': expected C x H x W or a feature count");
    return Shape(std::move(dims));
}

} // namespace edgetrain::core

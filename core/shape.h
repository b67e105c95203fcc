#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace edgetrain::core {

/** Dimensions of a tensor, outermost first (NCHW for images, [N, features] for vectors). */
class Shape
{
public:
    Shape() = default;
    Shape(std::initializer_list<std::int64_t> dims) : m_dims(dims) {}
    explicit Shape(std::vector<std::int64_t> dims) : m_dims(std::move(dims)) {}

    int rank() const { return static_cast<int>(m_dims.size()); }
    std::int64_t operator[](int i) const { return m_dims[static_cast<std::size_t>(i)]; }
    std::int64_t &operator[](int i) { return m_dims[static_cast<std::size_t>(i)]; }
    std::int64_t numel() const;
    const std::vector<std::int64_t> &dims() const { return m_dims; }

    /** The shape without its outermost dimension (one sample). */
    Shape sample() const;

    std::string toString() const; // "[64, 1, 28, 28]"
    bool operator==(const Shape &other) const = default;

private:
    std::vector<std::int64_t> m_dims;
};

/** Parses "CxHxW" (or "F" for a flat input) into a sample shape; throws SpecError. */
Shape parseSampleShape(const std::string &text);

} // namespace edgetrain::core

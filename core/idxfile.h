#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edgetrain::core {

/**
 * An IDX file (the MNIST family's format): big-endian header (0, 0, type, rank), the
 * dimensions, then the values. Read straight from .gz (zlib) or uncompressed. Only unsigned
 * bytes (type 0x08) are supported, which is what image and label files use.
 */
struct IdxFile
{
    std::vector<std::int64_t> dims;
    std::vector<std::uint8_t> values;

    /**
     * Throws IoError if the file cannot be opened or read, FormatError naming the file and byte
     * offset if the header is wrong or the data is truncated or followed by extra bytes.
     */
    static IdxFile read(const std::string &path);
};

} // namespace edgetrain::core

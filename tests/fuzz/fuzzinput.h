#pragma once

// For targets whose parser reads a file: the input is written to a file of its own in a
// per-process folder (under $EDGETRAIN_FUZZ_TMPDIR if set, else on /dev/shm where there is one:
// libFuzzer runs thousands of inputs a second), and exceptions derived from std::exception are the
// parsers' way of refusing bad input — anything else (a crash, an ASan or UBSan report, a hang) is
// a finding.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace edgetrain::fuzz {

inline const std::filesystem::path &folder()
{
    static const std::filesystem::path dir = [] {
        const char *chosen = std::getenv("EDGETRAIN_FUZZ_TMPDIR");
        const std::filesystem::path base = chosen && *chosen ? std::filesystem::path(chosen)
                                           : std::filesystem::exists("/dev/shm")
                                               ? std::filesystem::path("/dev/shm")
                                               : std::filesystem::temp_directory_path();
        std::filesystem::path d = base / ("edgetrain-fuzz-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

/** Writes the input to folder()/name (subfolders made) and returns its path. */
inline std::string write(const std::string &name, const std::uint8_t *data, std::size_t size)
{
    const std::filesystem::path p = folder() / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char *>(data), std::streamsize(size));
    return p.string();
}

/** The first byte of an input chooses the parser, the rest is what it reads: takes the byte off
 *  (false for an empty input). */
inline bool takeSelector(const std::uint8_t *&data, std::size_t &size, std::uint8_t *which)
{
    if (size == 0)
        return false;
    *which = data[0];
    ++data;
    --size;
    return true;
}

} // namespace edgetrain::fuzz

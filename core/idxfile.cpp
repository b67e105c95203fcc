#include "idxfile.h"

#include "error.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace edgetrain::core {

namespace {

class GzReader
{
public:
    explicit GzReader(const std::string &path) : m_path(path)
    {
        m_file = gzopen(path.c_str(), "rb");
        if (!m_file)
            throw IoError("cannot open '" + path +
                          "': " + (errno ? std::strerror(errno) : "out of memory"));
        gzbuffer(m_file, 1 << 17);
    }
    ~GzReader() { gzclose(m_file); }
    GzReader(const GzReader &) = delete;
    GzReader &operator=(const GzReader &) = delete;

    /** Reads up to n bytes; returns how many. Throws on a decompression error. */
    std::size_t read(void *dst, std::size_t n)
    {
        std::size_t done = 0;
        while (done < n) {
            const unsigned chunk = unsigned(std::min<std::size_t>(n - done, 1u << 30));
            const int got = gzread(m_file, static_cast<char *>(dst) + done, chunk);
            if (got < 0) {
                int code = 0;
                const char *msg = gzerror(m_file, &code);
                throw FormatError("'" + m_path + "': corrupt compressed data after byte " +
                                  std::to_string(m_offset + done) + " of the content (" + msg +
                                  ")");
            }
            if (got == 0)
                break;
            done += std::size_t(got);
        }
        m_offset += done;
        return done;
    }

    /** True if a truncated gzip stream was detected at the end (zlib reports it only then). */
    std::string endError()
    {
        int code = Z_OK;
        const char *msg = gzerror(m_file, &code);
        return (code != Z_OK && code != Z_STREAM_END) ? std::string(msg) : std::string();
    }

    std::uint64_t offset() const { return m_offset; }

private:
    std::string m_path;
    gzFile m_file = nullptr;
    std::uint64_t m_offset = 0;
};

} // namespace

IdxFile IdxFile::read(const std::string &path)
{
    GzReader in(path);
    unsigned char header[4];
    if (in.read(header, 4) != 4)
        throw FormatError("'" + path + "': truncated IDX header (file shorter than 4 bytes)");
    if (header[0] != 0 || header[1] != 0)
        throw FormatError("'" + path + "': not an IDX file (magic bytes at offset 0 are " +
                          std::to_string(header[0]) + ", " + std::to_string(header[1]) +
                          ", expected 0, 0)");
    if (header[2] != 0x08)
        throw FormatError("'" + path + "': IDX value type " + std::to_string(header[2]) +
                          " at offset 2 is not supported (only unsigned bytes, type 8)");
    const int rank = header[3];
    if (rank < 1 || rank > 4)
        throw FormatError("'" + path + "': IDX rank " + std::to_string(rank) +
                          " at offset 3 is out of range (1-4)");
    IdxFile idx;
    std::uint64_t total = 1;
    for (int i = 0; i < rank; ++i) {
        unsigned char b[4];
        if (in.read(b, 4) != 4)
            throw FormatError("'" + path + "': truncated IDX header at offset " +
                              std::to_string(4 + 4 * i));
        const std::uint32_t d = (std::uint32_t(b[0]) << 24) | (std::uint32_t(b[1]) << 16) |
                                (std::uint32_t(b[2]) << 8) | std::uint32_t(b[3]);
        idx.dims.push_back(d);
        // Checked: 2^17 x 2^17 x 2^30 would wrap to 0 values and pass as an empty file.
        if (__builtin_mul_overflow(total, std::uint64_t(d), &total) ||
            total > (std::uint64_t(1) << 34))
            throw FormatError("'" + path + "': IDX dimensions are absurdly large (dimension " +
                              std::to_string(i) + " = " + std::to_string(d) + " at offset " +
                              std::to_string(4 + 4 * i) + ")");
    }
    // The header is not trusted with memory: the values are read in pieces as they come, so a
    // short file that promises gigabytes costs what it holds, then is refused as truncated.
    constexpr std::size_t kPiece = std::size_t(1) << 24;
    std::size_t got = 0;
    while (got < total) {
        const std::size_t want = std::min<std::size_t>(std::size_t(total) - got, kPiece);
        idx.values.resize(got + want);
        const std::size_t n = in.read(idx.values.data() + got, want);
        got += n;
        if (n < want)
            break;
    }
    if (got != total) {
        const std::string zerr = in.endError();
        throw FormatError("'" + path + "': truncated: the header promises " +
                          std::to_string(total) + " values but the data ends after " +
                          std::to_string(got) + " (at offset " + std::to_string(in.offset()) + ")" +
                          (zerr.empty() ? "" : " — " + zerr));
    }
    unsigned char extra;
    if (in.read(&extra, 1) != 0)
        throw FormatError("'" + path + "': unexpected data after the " + std::to_string(total) +
                          " values the header declares (offset " + std::to_string(in.offset() - 1) +
                          ")");
    if (const std::string zerr = in.endError(); !zerr.empty())
        throw FormatError("'" + path + "': " + zerr);
    return idx;
}

} // namespace edgetrain::core

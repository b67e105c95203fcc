#include "fileio.h"

#include "error.h"

#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace edgetrain::core {

namespace {

std::error_code lastError()
{
    return {errno, std::generic_category()};
}

/** An open file descriptor, closed when it goes out of scope. */
class Descriptor
{
public:
    explicit Descriptor(int fd) : m_fd(fd) {}
    Descriptor(const Descriptor &) = delete;
    Descriptor &operator=(const Descriptor &) = delete;
    ~Descriptor()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    int get() const { return m_fd; }
    /** Closes now; false (errno set) if the close reports an error, as NFS may on write-back. */
    bool close()
    {
        const int fd = m_fd;
        m_fd = -1;
        return fd < 0 || ::close(fd) == 0;
    }

private:
    int m_fd;
};

/** Opens a new temporary file next to `path` (its name goes to `temp`); -1 with errno set if it
 *  cannot. */
int createTemporary(const std::filesystem::path &path, std::filesystem::path &temp)
{
    static std::atomic<unsigned> s_saves{0};
    for (;;) {
        temp = path;
        temp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(s_saves++);
        // O_EXCL: a file left by a killed process that had our pid is skipped, never reused.
        const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
}

bool writeAll(int fd, std::string_view bytes)
{
    while (!bytes.empty()) {
        const ssize_t n = ::write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return false;
        bytes.remove_prefix(std::size_t(n));
    }
    return true;
}

} // namespace

void writeFileAtomically(const std::filesystem::path &path, std::string_view bytes)
{
    writeFileAtomically(path, std::span<const std::string_view>(&bytes, 1));
}

void writeFileAtomically(const std::filesystem::path &path,
                         std::span<const std::string_view> pieces)
{
    std::filesystem::path temp;
    Descriptor fd(createTemporary(path, temp));
    if (fd.get() < 0)
        throw IoError("cannot write '" + path.string() + "': " + lastError().message());
    auto fail = [&](const char *verb) {
        const std::error_code error = lastError();
        fd.close();
        ::unlink(temp.c_str());
        throw IoError(std::string(verb) + " '" + path.string() + "': " + error.message());
    };
    for (std::string_view piece : pieces)
        if (!writeAll(fd.get(), piece))
            fail("cannot write");
    // Without the fsync a power cut soon after the rename can leave `path` empty on file systems
    // that do not order data before renames (an edge board is often switched off by unplugging).
    if (::fsync(fd.get()) != 0 || !fd.close())
        fail("cannot write");
    if (::rename(temp.c_str(), path.c_str()) != 0)
        fail("cannot replace");
}

std::string readFile(const std::filesystem::path &path, std::error_code &error)
{
    error.clear();
    Descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        error = lastError();
        return {};
    }
    std::string text;
    struct stat info
    {};
    if (::fstat(fd.get(), &info) == 0 && info.st_size > 0)
        text.reserve(std::size_t(info.st_size)); // a hint: /proc files report 0 and still have text
    char buffer[64 * 1024];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            error = lastError(); // a folder: EISDIR
            return {};
        }
        if (n == 0)
            return text;
        text.append(buffer, std::size_t(n));
    }
}

std::string readFile(const std::filesystem::path &path)
{
    std::error_code error;
    std::string text = readFile(path, error);
    if (error)
        throw IoError("cannot read '" + path.string() + "': " + error.message());
    return text;
}

} // namespace edgetrain::core

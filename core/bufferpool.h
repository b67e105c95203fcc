#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace edgetrain::core {

/**
 * Where tensor memory comes from. A training step frees and re-allocates the same buffer sizes
 * every step; handing large blocks back to the kernel each time costs page faults and zeroing
 * (measured: up to 70 % of a checkpointed ResNet-56 step). The pool keeps freed blocks of 64 KiB
 * and more for reuse by an allocation of the same size (or up to a quarter smaller), as long as
 * the bytes in use plus the bytes kept stay under a limit; a new block first evicts kept ones
 * that would break the limit. Everything else goes back to the system at once, so the
 * process's memory stays near the engine's live bytes. Large blocks are mappings of their own
 * (mmap), so that giving them back is exact; small blocks use the C heap. Thread-safe,
 * 64-byte aligned. POSIX only.
 */
class BufferPool
{
public:
    static BufferPool &instance();

    /** A block of at least `bytes` (rounded up to 64). Throws std::bad_alloc. */
    float *acquire(std::size_t bytes);
    /** Returns a block from acquire() with the same `bytes`. */
    void release(float *block, std::size_t bytes);

    /** In-use plus kept bytes above which freed blocks are not kept (-1: no limit). Kept blocks
     *  above a new, lower limit are released at once. */
    void setLimit(std::int64_t bytes);
    std::int64_t limit() const;

private:
    BufferPool();
    void trimLocked(std::vector<std::pair<float *, std::size_t>> &toFree);

    mutable std::mutex m_mutex;
    std::map<std::size_t, std::vector<float *>> m_free;          // kept blocks by size
    std::unordered_map<const float *, std::size_t> m_blockSizes; // handed-out large blocks
    std::int64_t m_inUse = 0;                                    // pooled-size blocks handed out
    std::int64_t m_kept = 0;
    std::int64_t m_limit = -1;
};

} // namespace edgetrain::core

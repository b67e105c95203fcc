#include "bufferpool.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <new>
#include <sys/mman.h>

namespace edgetrain::core {

namespace {
constexpr std::size_t kPooled = 64 * 1024;
constexpr std::size_t kPage = 4096;

std::size_t rounded(std::size_t bytes)
{
    if (bytes >= kPooled)
        return (bytes + kPage - 1) / kPage * kPage; // its own pages
    return std::max<std::size_t>((bytes + 63) / 64 * 64, 64);
}

/** Large blocks are their own mappings: unmapping gives the pages back at once (the C heap
 *  might keep them), and page alignment covers the 64 bytes tensors need. */
float *mapBlock(std::size_t size)
{
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : static_cast<float *>(p);
}

void unmapBlock(float *block, std::size_t size)
{
    ::munmap(block, size);
}
} // namespace

BufferPool::BufferPool() = default;

BufferPool &BufferPool::instance()
{
    static BufferPool pool;
    return pool;
}

float *BufferPool::acquire(std::size_t bytes)
{
    const std::size_t size = rounded(bytes);
    if (size < kPooled) {
        auto *block = static_cast<float *>(std::aligned_alloc(64, size));
        if (!block)
            throw std::bad_alloc();
        return block;
    }
    std::vector<std::pair<float *, std::size_t>> toFree;
    std::pair<float *, std::size_t> resized{nullptr, 0};
    {
        std::lock_guard lock(m_mutex);
        // A kept block of this size, or one at most a quarter larger (sizes of a training step
        // repeat, but checkpointed phases mix them).
        auto it = m_free.lower_bound(size);
        if (it != m_free.end() && it->first <= size + size / 4 && !it->second.empty()) {
            float *block = it->second.back();
            const std::size_t blockSize = it->first;
            it->second.pop_back();
            if (it->second.empty())
                m_free.erase(it);
            m_kept -= std::int64_t(blockSize);
            m_inUse += std::int64_t(blockSize);
            m_blockSizes[block] = blockSize;
            return block;
        }
        // Under a limit that a new mapping would break, a kept block would be given back for
        // it: resize one instead. mremap keeps its pages, so the ones both sizes share are not
        // faulted in and zeroed again (a detector's step at a tight budget ran 40 % slower
        // unmapping and mapping its blocks).
        if (m_limit >= 0 && !m_free.empty() && m_inUse + m_kept + std::int64_t(size) > m_limit) {
            auto pick = m_free.lower_bound(size);
            if (pick == m_free.end())
                pick = std::prev(m_free.end());
            resized = {pick->second.back(), pick->first};
            pick->second.pop_back();
            if (pick->second.empty())
                m_free.erase(pick);
            m_kept -= std::int64_t(resized.second);
        }
        // A new mapping: first give back kept blocks that would push us over the limit.
        m_inUse += std::int64_t(size);
        trimLocked(toFree);
    }
    for (const auto &[b, s] : toFree)
        unmapBlock(b, s);
    float *block = nullptr;
    if (resized.first) {
        void *p = ::mremap(resized.first, resized.second, size, MREMAP_MAYMOVE);
        if (p == MAP_FAILED)
            unmapBlock(resized.first, resized.second);
        else
            block = static_cast<float *>(p);
    }
    if (!block)
        block = mapBlock(size);
    std::lock_guard lock(m_mutex);
    if (!block) {
        m_inUse -= std::int64_t(size);
        throw std::bad_alloc();
    }
    m_blockSizes[block] = size;
    return block;
}

void BufferPool::release(float *block, std::size_t bytes)
{
    if (!block)
        return;
    if (rounded(bytes) < kPooled) {
        std::free(block);
        return;
    }
    std::size_t size = 0;
    {
        std::lock_guard lock(m_mutex);
        const auto it = m_blockSizes.find(block);
        assert(it != m_blockSizes.end() && "release() of a block acquire() did not hand out");
        size = it->second; // the block may be larger than this tensor asked for
        m_blockSizes.erase(it);
        m_inUse -= std::int64_t(size);
        if (m_limit < 0 || m_inUse + m_kept + std::int64_t(size) <= m_limit) {
            m_free[size].push_back(block);
            m_kept += std::int64_t(size);
            return;
        }
    }
    unmapBlock(block, size);
}

void BufferPool::trimLocked(std::vector<std::pair<float *, std::size_t>> &toFree)
{
    for (auto it = m_free.begin();
         it != m_free.end() && m_limit >= 0 && m_inUse + m_kept > m_limit;) {
        while (!it->second.empty() && m_inUse + m_kept > m_limit) {
            toFree.push_back({it->second.back(), it->first});
            it->second.pop_back();
            m_kept -= std::int64_t(it->first);
        }
        it = it->second.empty() ? m_free.erase(it) : std::next(it);
    }
}

void BufferPool::setLimit(std::int64_t bytes)
{
    std::vector<std::pair<float *, std::size_t>> toFree;
    {
        std::lock_guard lock(m_mutex);
        m_limit = bytes;
        trimLocked(toFree);
    }
    for (const auto &[b, size] : toFree)
        unmapBlock(b, size);
}

std::int64_t BufferPool::limit() const
{
    std::lock_guard lock(m_mutex);
    return m_limit;
}

} // namespace edgetrain::core

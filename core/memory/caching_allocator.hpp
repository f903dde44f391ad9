/// @file
/// @brief A caching allocator: freed blocks are kept in free lists by size class and
/// handed out again, so a training step that allocates the same sizes every iteration
/// stops asking the system (or the device driver) for memory after the first step.
///
/// Owns: size classes, the free lists, and the hit/miss statistics. This is the idea
/// behind PyTorch's CUDA caching allocator (cudaMalloc and cudaFree are slow and
/// synchronise the device); here it sits in front of any gl::Allocator.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>
#include <vector>

#include "tensor/allocator.hpp"

namespace gl::memory {

/// The block size a request of @p bytes is served from: 512 bytes for small requests,
/// otherwise @p bytes rounded up to a quarter of its power of two (1024, 1280, 1536,
/// 1792, 2048, 2560, ...), so at most 25% of a block is wasted and blocks of nearby
/// sizes share a class.
std::size_t size_class(std::size_t bytes);

/// What a CachingAllocator did since it was made (or since reset_counts()).
struct CacheStats {
    std::size_t hits = 0;            ///< allocations served from a free list
    std::size_t misses = 0;          ///< allocations that went to the backing allocator
    std::size_t bytes_in_use = 0;    ///< bytes of blocks handed out and not yet freed
    std::size_t bytes_cached = 0;    ///< bytes of blocks waiting in the free lists
    std::size_t blocks_cached = 0;   ///< number of blocks waiting in the free lists
    std::size_t peak_reserved = 0;   ///< the most bytes (in use + cached) held at once

    /// hits / (hits + misses), 0 before any allocation.
    double hit_rate() const {
        const std::size_t n = hits + misses;
        return n ? static_cast<double>(hits) / static_cast<double>(n) : 0.0;
    }
    /// Bytes obtained from the backing allocator and not yet returned.
    std::size_t bytes_reserved() const { return bytes_in_use + bytes_cached; }
};

/// Serves each request from a free list of its size class when one holds a block (a
/// hit) and from the backing allocator otherwise (a miss); freed blocks go back on
/// their free list instead of to the backing allocator. Thread-safe.
class CachingAllocator final : public Allocator {
public:
    /// Caches blocks of @p backing (which must outlive this allocator).
    explicit CachingAllocator(Allocator& backing = cpu_allocator());
    /// Returns every cached block to the backing allocator.
    ~CachingAllocator() override;

    void* allocate(std::size_t bytes) override;
    void deallocate(void* ptr, std::size_t bytes) override;
    const char* name() const override { return "caching"; }

    /// Returns every cached (free) block to the backing allocator; blocks in use are
    /// untouched. Returns the number of bytes released.
    std::size_t empty_cache();
    /// A snapshot of the statistics.
    CacheStats stats() const;
    /// Restarts the hit and miss counts (byte counts stay: they describe the present).
    void reset_counts();

private:
    void* take_cached(std::size_t block_bytes);               // callers hold mutex_
    void keep_for_reuse(void* block, std::size_t block_bytes);  // callers hold mutex_

    Allocator& backing_;
    mutable std::mutex mutex_;
    std::map<std::size_t, std::vector<void*>> free_lists_;  // size class -> free blocks
    CacheStats stats_;
};

}  // namespace gl::memory

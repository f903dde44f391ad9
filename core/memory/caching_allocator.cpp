// The caching allocator. Every request is rounded up to its size class; a freed block
// is pushed on the free list of its class, and the next request of that class pops it
// (a hit) instead of asking the backing allocator (a miss). After the first training
// step every tensor of the step finds a block of its class waiting, so a step costs no
// system allocations at all. The price: memory freed by one tensor stays reserved for
// its class until empty_cache().
#include "memory/caching_allocator.hpp"

#include <algorithm>
#include <bit>

#include "base/error.hpp"

namespace gl::memory {

namespace {
constexpr std::size_t kSmallestBlock = 512;
}  // namespace

std::size_t size_class(std::size_t bytes) {
    if (bytes <= kSmallestBlock) return kSmallestBlock;
    const std::size_t octave = std::bit_floor(bytes - 1);  // largest power of two < bytes
    const std::size_t step = octave / 4;                    // four classes per octave
    return (bytes + step - 1) / step * step;
}

CachingAllocator::CachingAllocator(Allocator& backing) : backing_(backing) {}

CachingAllocator::~CachingAllocator() { empty_cache(); }

void* CachingAllocator::take_cached(std::size_t block_bytes) {
    // LAB 07 BEGIN: reuse a cached block of this size class
    // Look up the free list of this size class (free_lists_ maps a class to its blocks).
    // If it holds a block, remove one and return it; otherwise return nullptr (a miss).
    // Keep the byte counts true: a reused block moves from bytes_cached to bytes_in_use,
    // and blocks_cached drops by one.
    const auto it = free_lists_.find(block_bytes);
    if (it == free_lists_.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();  // the most recently freed block: likely still in cache
    it->second.pop_back();
    stats_.bytes_cached -= block_bytes;
    stats_.blocks_cached -= 1;
    stats_.bytes_in_use += block_bytes;
    return block;
    // LAB 07 END
}

void CachingAllocator::keep_for_reuse(void* block, std::size_t block_bytes) {
    // LAB 07 BEGIN: keep a freed block for reuse
    // Push the block on the free list of its size class instead of returning it to the
    // backing allocator. It moves from bytes_in_use to bytes_cached; blocks_cached grows.
    free_lists_[block_bytes].push_back(block);
    stats_.bytes_in_use -= block_bytes;
    stats_.bytes_cached += block_bytes;
    stats_.blocks_cached += 1;
    // LAB 07 END
}

void* CachingAllocator::allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    const std::size_t block_bytes = size_class(bytes);
    std::lock_guard lock(mutex_);
    if (void* block = take_cached(block_bytes)) {
        ++stats_.hits;
        return block;
    }
    ++stats_.misses;
    void* block = backing_.allocate(block_bytes);
    stats_.bytes_in_use += block_bytes;
    stats_.peak_reserved = std::max(stats_.peak_reserved, stats_.bytes_reserved());
    return block;
}

void CachingAllocator::deallocate(void* ptr, std::size_t bytes) {
    if (!ptr) return;
    std::lock_guard lock(mutex_);
    keep_for_reuse(ptr, size_class(bytes));
}

std::size_t CachingAllocator::empty_cache() {
    std::lock_guard lock(mutex_);
    std::size_t released = 0;
    for (auto& [block_bytes, blocks] : free_lists_) {
        for (void* block : blocks) backing_.deallocate(block, block_bytes);
        released += block_bytes * blocks.size();
    }
    free_lists_.clear();
    stats_.bytes_cached = 0;
    stats_.blocks_cached = 0;
    return released;
}

CacheStats CachingAllocator::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void CachingAllocator::reset_counts() {
    std::lock_guard lock(mutex_);
    stats_.hits = 0;
    stats_.misses = 0;
    stats_.peak_reserved = stats_.bytes_reserved();
}

}  // namespace gl::memory

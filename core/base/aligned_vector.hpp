/// @file
/// @brief std::vector with cache-line-aligned storage, for scratch buffers that kernels
/// read with vector loads.
///
/// Why it matters: a std::vector of more than 128 KiB comes from mmap and starts 16 bytes
/// into a page, so every 64-byte vector load from it, at any multiple of 16 floats,
/// straddles two cache lines, and the core does two accesses where one would do. A
/// kernel that is near its load limit (a dot product reads one operand per FMA) runs
/// measurably slower on such a buffer.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace gl {

/// A std::vector allocator whose allocations start on a 64-byte boundary (one cache line,
/// one AVX-512 vector), as gl::cpu_allocator's do.
template <class T>
struct CacheLineAllocator {
    /// The element type, as std::allocator_traits expects.
    using value_type = T;
    /// Bytes to align to.
    static constexpr std::size_t kAlignment = 64;

    CacheLineAllocator() = default;
    /// Rebinding, as std::allocator allows.
    template <class U>
    CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT(google-explicit-constructor)

    /// Room for @p n values; throws std::bad_alloc when there is none.
    T* allocate(std::size_t n) {
        const std::size_t bytes = (n * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
        void* p = std::aligned_alloc(kAlignment, bytes == 0 ? kAlignment : bytes);
        if (p == nullptr) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    /// Returns memory from allocate().
    void deallocate(T* p, std::size_t) { std::free(p); }

    /// Any two allocate and free the same way.
    template <class U>
    bool operator==(const CacheLineAllocator<U>&) const {
        return true;
    }
};

/// A vector whose data() is 64-byte aligned.
template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace gl

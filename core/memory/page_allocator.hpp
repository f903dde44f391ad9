/// @file
/// @brief An allocator that asks the operating system for fresh pages on every request.
///
/// Owns: nothing but the mmap/munmap pair. It stands for allocation without any cache:
/// what cudaMalloc/cudaFree cost on a GPU, and what glibc's malloc does for blocks above
/// its mmap threshold. A fresh mapping has no physical pages yet; the first write to
/// each 4 KiB page faults and the kernel zeroes a page for it, so allocating and filling
/// a large buffer costs time proportional to its size even before any real work.
#pragma once

#include "tensor/allocator.hpp"

namespace gl::memory {

/// mmap on every allocate(), munmap on every deallocate(). Thread-safe (no state).
class PageAllocator final : public Allocator {
public:
    void* allocate(std::size_t bytes) override;
    void deallocate(void* ptr, std::size_t bytes) override;
    const char* name() const override { return "pages"; }
};

/// The process-wide PageAllocator.
PageAllocator& page_allocator();

}  // namespace gl::memory

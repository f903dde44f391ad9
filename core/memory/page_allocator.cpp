#include "memory/page_allocator.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/error.hpp"

namespace gl::memory {

void* PageAllocator::allocate(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    // Page-aligned, so also 64-byte aligned as the Allocator contract asks.
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw Error("out of memory: mmap of " + std::to_string(bytes) + " bytes failed (" +
                    std::strerror(errno) + "); try a smaller batch size");
    return p;
}

void PageAllocator::deallocate(void* ptr, std::size_t bytes) {
    if (ptr) munmap(ptr, bytes);
}

PageAllocator& page_allocator() {
    static PageAllocator instance;
    return instance;
}

}  // namespace gl::memory

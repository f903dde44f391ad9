#include "count_allocations.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

std::atomic<std::int64_t> allocations{0};

void* counted(std::size_t bytes, std::size_t alignment) {
    allocations.fetch_add(1, std::memory_order_relaxed);
    void* p = alignment > alignof(std::max_align_t)
                  ? std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment)
                  : std::malloc(bytes ? bytes : 1);
    if (!p) throw std::bad_alloc();
    return p;
}

}  // namespace

void* operator new(std::size_t bytes) { return counted(bytes, 0); }
void* operator new[](std::size_t bytes) { return counted(bytes, 0); }
void* operator new(std::size_t bytes, std::align_val_t a) { return counted(bytes, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t bytes, std::align_val_t a) { return counted(bytes, static_cast<std::size_t>(a)); }
// The nothrow forms too (std::stable_sort's temporary buffer uses them): every form of new
// and delete here pairs malloc with free, or a sanitizer sees a mismatched pair.
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
    try {
        return counted(bytes, 0);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}
void* operator new[](std::size_t bytes, const std::nothrow_t& tag) noexcept { return operator new(bytes, tag); }
void* operator new(std::size_t bytes, std::align_val_t a, const std::nothrow_t&) noexcept {
    try {
        return counted(bytes, static_cast<std::size_t>(a));
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}
void* operator new[](std::size_t bytes, std::align_val_t a, const std::nothrow_t& tag) noexcept {
    return operator new(bytes, a, tag);
}
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace gl::graph::testing {

AllocationCounter::AllocationCounter() : start_(allocations.load()) {}
AllocationCounter::~AllocationCounter() = default;
std::int64_t AllocationCounter::count() const { return allocations.load() - start_; }

}  // namespace gl::graph::testing

#include "tensor/allocator.hpp"

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "base/error.hpp"

namespace gl {
namespace {

constexpr std::size_t kAlignment = 64;

class CpuAllocator final : public Allocator {
public:
    void* allocate(std::size_t bytes) override {
        if (bytes == 0) return nullptr;
        // aligned_alloc needs a size that is a multiple of the alignment.
        const std::size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
        void* p = std::aligned_alloc(kAlignment, rounded);
        if (!p)
            throw Error("out of memory: could not allocate " + std::to_string(bytes) +
                        " bytes on the CPU; try a smaller batch size");
        return p;
    }
    void deallocate(void* ptr, std::size_t) override { std::free(ptr); }
    const char* name() const override { return "cpu"; }
};

std::atomic<Allocator*> g_default{nullptr};

}  // namespace

Allocator& cpu_allocator() {
    static CpuAllocator instance;
    return instance;
}

Allocator& default_cpu_allocator() {
    Allocator* a = g_default.load(std::memory_order_acquire);
    return a ? *a : cpu_allocator();
}

void set_default_cpu_allocator(Allocator* allocator) {
    g_default.store(allocator, std::memory_order_release);
}

}  // namespace gl

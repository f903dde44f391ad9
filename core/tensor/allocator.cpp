#include "tensor/allocator.hpp"

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "base/error.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace gl {
namespace {

constexpr std::size_t kAlignment = 64;

// Large blocks start on a huge-page boundary and ask Linux for transparent huge pages
// (madvise; most systems give them only where asked). A pass over a data set of 200 MB in
// shuffled rows touches 50,000 pages of 4 KiB, far more than the TLB holds, so nearly
// every row costs a page walk; on 2 MiB pages it is 100 entries. PyTorch's CPU allocator
// does the same when THP_MEM_ALLOC_ENABLE is set. Measured on 2 CPUs (Zen 4): a SimpleNet
// epoch, whose batches are gathered from the 188 MB training set, about 5% faster.
constexpr std::size_t kHugePage = std::size_t{2} << 20;
constexpr std::size_t kHugeFrom = 2 * kHugePage;  // at least one whole huge page inside

void ask_for_huge_pages([[maybe_unused]] void* p, [[maybe_unused]] std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);  // a hint: its failure changes nothing
#endif
}

class CpuAllocator final : public Allocator {
public:
    void* allocate(std::size_t bytes) override {
        if (bytes == 0) return nullptr;
        const std::size_t alignment = bytes >= kHugeFrom ? kHugePage : kAlignment;
        // aligned_alloc needs a size that is a multiple of the alignment.
        const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
        void* p = std::aligned_alloc(alignment, rounded);
        if (p && alignment == kHugePage) ask_for_huge_pages(p, rounded);
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

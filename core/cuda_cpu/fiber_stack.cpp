// Fiber stacks: mmap'ed once per worker thread and reused for every block it runs.
#include "cuda_cpu/fiber_stack.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <new>

namespace gl::cuda::inline cpu::detail {
namespace {

std::size_t page_size() {
    static const std::size_t size = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    return size;
}

}  // namespace

StackPool::~StackPool() {
    const std::size_t chunk = (kStackBytes + page_size()) * kChunk;
    for (void* m : mappings_) ::munmap(m, chunk);
}

boost::context::stack_context StackPool::allocate() {
    if (free_.empty()) map_chunk();
    boost::context::stack_context s = free_.back();
    free_.pop_back();
    return s;
}

// Stacks are mapped kChunk at a time, each slot a guard page (stacks grow down, so it sits
// at the low end) and then the stack. The kernel commits only the pages a fiber touches, so
// a deep pool costs little real memory.
//
// Placement matters for speed. A barrier switches through every fiber of the block, and
// each switch touches the few hundred bytes at the top of that fiber's stack. If all the
// tops sat at the same offset modulo the cache's set stride, they would compete for the same
// few cache sets and every switch would miss. Slots are 68 KiB apart (17 pages: an odd
// number, so the 32 slots of a chunk fall on 32 different page positions modulo 128 KiB),
// and each chunk starts its tops at a different 256-byte offset inside the page ("stack
// colouring"): a block's hot stack tops then spread over all sets of L1 and L2.
void StackPool::map_chunk() {
    const std::size_t guard = page_size();
    const std::size_t slot = kStackBytes + guard;
    void* m = ::mmap(nullptr, slot * kChunk, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    mappings_.push_back(m);
    const std::size_t colour = (mappings_.size() % 16) * 256;
    free_.reserve(mappings_.size() * kChunk);  // so deallocate never allocates
    for (std::size_t k = kChunk; k-- > 0;) {
        char* start = static_cast<char*>(m) + k * slot;
        ::mprotect(start, guard, PROT_NONE);
        boost::context::stack_context s;
        s.size = kStackBytes - colour;
        s.sp = start + slot - colour;
        free_.push_back(s);
    }
}

void StackPool::deallocate(boost::context::stack_context& stack) noexcept {
    free_.push_back(stack);
}

}  // namespace gl::cuda::cpu::detail

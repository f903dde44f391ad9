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
    const std::size_t mapping = kStackBytes + page_size();
    for (void* m : mappings_) ::munmap(m, mapping);
}

boost::context::stack_context StackPool::allocate() {
    if (!free_.empty()) {
        boost::context::stack_context s = free_.back();
        free_.pop_back();
        return s;
    }
    // One guard page at the low end (stacks grow down), then the stack itself. The kernel
    // commits only the pages a fiber touches, so a deep pool costs little real memory.
    const std::size_t guard = page_size();
    void* m = ::mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    ::mprotect(m, guard, PROT_NONE);
    mappings_.push_back(m);
    free_.reserve(mappings_.size());  // so deallocate never allocates
    boost::context::stack_context s;
    s.size = kStackBytes;
    s.sp = static_cast<char*>(m) + guard + kStackBytes;
    return s;
}

void StackPool::deallocate(boost::context::stack_context& stack) noexcept {
    free_.push_back(stack);
}

}  // namespace gl::cuda::cpu::detail

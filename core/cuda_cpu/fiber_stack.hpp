/// @file
/// @brief Stacks for the fibers that run CUDA threads, and the stack-switch announcements
/// AddressSanitizer needs (CPU runtime internals).
///
/// Every CUDA thread that reaches a barrier needs a stack of its own, so that it can stop in
/// the middle of the kernel while the other threads of its block catch up. StackPool keeps
/// the stacks of a worker thread for reuse (a block of 1024 threads needs 1024 of them,
/// every block), each with an inaccessible guard page below it: a kernel that overflows its
/// small stack crashes at once instead of overwriting a neighbour's.
///
/// AddressSanitizer tracks which stack the program runs on. Switching stacks behind its back
/// makes its reports wrong (or makes it report errors that are not there), so every switch
/// is announced with __sanitizer_start_switch_fiber / __sanitizer_finish_switch_fiber, in
/// builds with ASan only: switch_to() below, and the entry and exit of each fiber.
#pragma once

#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/stack_context.hpp>
#include <cstddef>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define GL_CUDA_CPU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GL_CUDA_CPU_ASAN 1
#endif
#endif
#if defined(GL_CUDA_CPU_ASAN)
#include <sanitizer/common_interface_defs.h>
#endif

namespace gl::cuda::inline cpu::detail {

/// The memory of one stack: [bottom, bottom + size).
struct StackBounds {
    const void* bottom = nullptr;  ///< lowest address (stacks grow down towards it)
    std::size_t size = 0;          ///< bytes from bottom to the top of the stack
};

/// Fixed-size fiber stacks, kept for reuse by the worker thread that owns the pool.
class StackPool {
public:
    /// Usable bytes per stack (ASan builds get four times more: its frames are larger).
    static constexpr std::size_t kStackBytes = 64 * 1024
#if defined(GL_CUDA_CPU_ASAN)
                                               * 4
#endif
        ;
    StackPool() = default;
    ~StackPool();
    StackPool(const StackPool&) = delete;
    StackPool& operator=(const StackPool&) = delete;

    /// A free stack (a new one if none is free).
    boost::context::stack_context allocate();
    /// Gives a stack back for reuse.
    void deallocate(boost::context::stack_context& stack) noexcept;
    /// Number of stacks mapped so far.
    std::size_t mapped() const { return mappings_.size() * kChunk; }

private:
    static constexpr std::size_t kChunk = 32;  // stacks mapped at a time
    void map_chunk();

    std::vector<boost::context::stack_context> free_;
    std::vector<void*> mappings_;
};

/// The allocator Boost.Context calls to free a fiber's stack when the fiber ends.
struct PooledStack {
    StackPool* pool;  ///< the pool of the worker thread that made the fiber
    /// A stack from the pool (Boost.Context's StackAllocator interface).
    boost::context::stack_context allocate() { return pool->allocate(); }
    /// Returns @p s to the pool for the next fiber, instead of unmapping it.
    void deallocate(boost::context::stack_context& s) noexcept { pool->deallocate(s); }
};

/// The bounds of a Boost.Context stack, whose `sp` is the top (the highest address).
inline StackBounds bounds_of(const boost::context::stack_context& s) {
    return {static_cast<const char*>(s.sp) - s.size, s.size};
}

/// A fiber that will run @p fn on a stack from @p pool; @p stack receives the stack's bounds.
template <class Fn>
boost::context::fiber make_fiber(StackPool& pool, StackBounds& stack, Fn&& fn) {
    boost::context::stack_context s = pool.allocate();
    stack = bounds_of(s);
    return boost::context::fiber(std::allocator_arg, boost::context::preallocated(s.sp, s.size, s),
                                 PooledStack{&pool}, std::forward<Fn>(fn));
}

#if defined(GL_CUDA_CPU_ASAN)
/// Announces a switch for as long as it lives: the constructor says "leaving for a stack
/// with these bounds", the destructor "arrived back" (it also runs when the switch back
/// comes as an exception, which is how an aborted fiber unwinds).
class AnnouncedSwitch {
public:
    explicit AnnouncedSwitch(StackBounds to) {
        __sanitizer_start_switch_fiber(&fake_stack_, to.bottom, to.size);
    }
    ~AnnouncedSwitch() { __sanitizer_finish_switch_fiber(fake_stack_, nullptr, nullptr); }
    AnnouncedSwitch(const AnnouncedSwitch&) = delete;
    AnnouncedSwitch& operator=(const AnnouncedSwitch&) = delete;

private:
    void* fake_stack_ = nullptr;
};
/// First thing a new fiber does; @p from receives the bounds of the stack it came from.
inline void announce_fiber_entry(StackBounds* from) {
    const void* bottom = nullptr;
    std::size_t size = 0;
    __sanitizer_finish_switch_fiber(nullptr, &bottom, &size);
    if (from) *from = {bottom, size};
}
/// Last thing a fiber does before it ends and jumps to the stack @p to.
inline void announce_fiber_exit(StackBounds to) {
    __sanitizer_start_switch_fiber(nullptr, to.bottom, to.size);
}
#else
/// Without AddressSanitizer there is nobody to tell about a stack switch: nothing to do.
class AnnouncedSwitch {
public:
    /// Does nothing (the ASan build announces the switch to @p to here).
    explicit AnnouncedSwitch(StackBounds) {}
};
/// Does nothing (the ASan build completes the switch onto the new fiber's stack here).
inline void announce_fiber_entry(StackBounds*) {}
/// Does nothing (the ASan build announces the final switch off the ending fiber here).
inline void announce_fiber_exit(StackBounds) {}
#endif

/// Jumps to the suspended context @p target, whose stack is @p to, and returns the context
/// that jumps back here later (Boost.Context's fiber::resume, announced to ASan).
inline boost::context::fiber switch_to(boost::context::fiber&& target, StackBounds to) {
    AnnouncedSwitch announce(to);
    return std::move(target).resume();
}

}  // namespace gl::cuda::cpu::detail

/// @file
/// @brief The block scheduler: runs the threads of one block on one OS thread, with fibers
/// when they must wait for each other (CPU runtime internals; the heart of the runtime).
///
/// A GPU runs the threads of a block side by side. On the CPU one OS thread runs a block,
/// one CUDA thread at a time:
///
/// 1. *Plain calls.* The threads run one after another as ordinary function calls, in the
///    order of the schedule (cpu_runtime.hpp). A block whose threads never wait for each
///    other finishes like this and never pays for a fiber.
/// 2. *Fibers, on demand.* When a thread reaches __syncthreads or a warp operation it must
///    stop until the others get there. It cannot return, so the scheduler keeps that
///    thread's stack (the worker's own stack) as it is, moves onto a fiber of its own, and
///    runs each remaining thread on a fiber with a small stack of its own.
/// 3. *Rounds.* From then on the scheduler works in rounds: it resumes every runnable
///    thread, in schedule order, until each one waits or ends; then it releases what can be
///    released (a barrier that every thread reached, a warp operation that every lane of its
///    mask reached) and starts the next round. When nothing can be released and not every
///    thread has ended, the block is deadlocked: the scheduler names the kernel, the block,
///    and where each thread waits, and stops the block with an error instead of hanging.
///
/// Exceptions thrown by kernel code end the block as well; the threads still suspended are
/// unwound (their destructors run), and the launch rethrows the exception.
#pragma once

#include <boost/context/fiber.hpp>
#include <cstdint>
#include <exception>
#include <memory>
#include <source_location>
#include <string>
#include <vector>

#include "cuda_cpu/access_recorder.hpp"
#include "cuda_cpu/cpu_runtime.hpp"
#include "cuda_cpu/fiber_stack.hpp"
#include "cuda_cpu/launch.hpp"
#include "cuda_cpu/warp_ops.hpp"

namespace gl::cuda::inline cpu::detail {

/// Runs blocks, one at a time, on the OS thread that owns it.
class BlockScheduler {
public:
    BlockScheduler() = default;
    BlockScheduler(const BlockScheduler&) = delete;
    BlockScheduler& operator=(const BlockScheduler&) = delete;

    /// Runs every thread of block @p block_idx of @p launch to its end. Throws
    /// gl::cuda::Error when a thread threw (code kernel_exception, the original exception
    /// nested) or the block deadlocked (code barrier_divergence).
    void run_block(const KernelLaunch& launch, uint3 block_idx, Schedule schedule, bool lazy);

    /// The scheduler whose block the calling OS thread is running, or null outside kernels.
    static BlockScheduler* current();

    /// __syncthreads(): the running thread waits for the whole block.
    void barrier(const std::source_location& where);
    /// A warp shuffle, vote or __syncwarp: the running lane waits for its group; returns
    /// this lane's result.
    std::uint64_t warp_op(const WarpOp& op);
    /// The block's dynamic shared memory.
    void* dynamic_shared() { return dynamic_shared_.get(); }
    /// Reports an access of the running thread to the memory counters.
    void record_access(const void* site, const void* address, unsigned size, MemorySpace space,
                       bool store) {
        recorder_.record(current_, site, reinterpret_cast<std::uintptr_t>(address), size, space,
                         store);
    }
    /// The counts of the block that just ran.
    const MemoryCounters& block_counts() const { return recorder_.counts(); }
    /// The runtime costs of the blocks this scheduler ran since the last call (then zero).
    RuntimeStats take_stats();

private:
    enum class Status : std::uint8_t { not_started, runnable, at_barrier, at_warp_op, finished };
    struct Thread {
        Status status = Status::not_started;
        boost::context::fiber context;  // where to resume it (while suspended)
        StackBounds stack;              // the stack it runs on
        std::source_location where;     // the barrier or warp operation it waits at
        WarpOp op;                      // its part of the warp operation it waits in
        std::uint64_t result = 0;       // that operation's result for this lane
        uint3 idx{0, 0, 0};             // its threadIdx
        const void* stack_top = nullptr; // roughly where its stack ended when it was suspended
    };

    void enter(int t);
    void run_plain();
    void run_on_fibers_from_start();
    void start_fibers();
    void wait_until_released();
    void suspend();
    boost::context::fiber scheduler_main(boost::context::fiber&& from);
    boost::context::fiber thread_main(int t, boost::context::fiber&& scheduler);
    void run_rounds();
    void run_until_it_waits(int t);
    void prefetch_stack(int t);
    bool release_warp_ops();
    bool release_barrier();
    void compute_warp_results(int warp, unsigned lanes);
    std::string describe_deadlock() const;
    void unwind_suspended_threads();
    void finish(int t);
    void note_exception(int t);
    void fill_order(int round);
    void rethrow_block_error();
    unsigned existing_lanes(int warp) const;

    const KernelLaunch* launch_ = nullptr;
    Schedule schedule_;
    uint3 block_idx_{0, 0, 0};
    int threads_in_block_ = 0;
    std::vector<Thread> threads_;
    std::vector<int> order_;   // the order threads run in during this round
    int current_ = -1;         // the running thread
    int finished_ = 0;         // threads that have ended
    int at_warp_op_ = 0;       // threads waiting in a warp operation
    bool on_fibers_ = false;   // whether the block moved onto fibers
    int parked_ = -1;          // the thread whose stack is the worker's own stack
    bool aborting_ = false;    // the block failed: suspended threads are being unwound
    boost::context::fiber scheduler_;  // the scheduler's context, while a kernel thread runs
    StackBounds scheduler_stack_;
    boost::context::fiber worker_;     // the worker's context, when no thread was parked
    StackBounds worker_stack_;
    std::exception_ptr error_;
    int error_thread_ = -1;    // the thread that threw, or -1 for a deadlock
    StackPool stacks_;
    struct FreeAligned {
        void operator()(std::byte* p) const;
    };
    std::unique_ptr<std::byte, FreeAligned> dynamic_shared_;
    std::size_t dynamic_shared_capacity_ = 0;
    AccessRecorder recorder_;
    RuntimeStats stats_;
};

}  // namespace gl::cuda::cpu::detail

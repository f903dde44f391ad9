/// @file
/// @brief The knobs and statistics of the CPU runtime: thread schedule, worker threads,
/// lazy fibers, and how many fibers and context switches a launch cost.
///
/// These exist only on the CPU runtime (a GPU has no "schedule" to choose); host code that
/// must also compile with nvcc does not call them. Settings are process-wide and apply to
/// the launches that start after the call.
#pragma once

#include <cstdint>

namespace gl::cuda::inline cpu {

/// The order in which the threads of a block run between two switch points (barriers and
/// warp operations). A GPU promises no order, so a correct kernel gives the same answer
/// under every one; a kernel that forgot a __syncthreads usually does not.
enum class Order {
    in_order,  ///< thread 0, 1, 2, ... (the friendliest order: many races stay hidden)
    reverse,   ///< the last thread first
    random,    ///< a fresh seeded permutation at every switch point of every block
};

/// A thread order plus the seed for Order::random.
struct Schedule {
    Order order = Order::in_order;  ///< which thread runs first between two switch points
    std::uint64_t seed = 0;  ///< same seed, same permutations (per block, per round)
};

/// Sets the schedule of the launches that follow.
void set_schedule(Schedule schedule);
/// The schedule launches use now (in_order unless changed).
Schedule schedule();

/// Sets the schedule for the lifetime of this object, then restores the previous one.
class ScopedSchedule {
public:
    /// Remembers the current schedule and switches to @p s.
    explicit ScopedSchedule(Schedule s) : saved_(schedule()) { set_schedule(s); }
    ~ScopedSchedule() { set_schedule(saved_); }
    ScopedSchedule(const ScopedSchedule&) = delete;
    ScopedSchedule& operator=(const ScopedSchedule&) = delete;

private:
    Schedule saved_;
};

/// Sets how many OS threads run blocks (the calling thread counts as one); at least 1.
void set_workers(int count);
/// The number of OS threads that run blocks (default: the hardware's thread count).
int workers();

/// With lazy fibers (the default) a block's threads run as plain calls, one after another,
/// until one of them reaches a barrier or warp operation; only then does the block move
/// onto fibers. Turning it off runs every thread on its own fiber from the start, which is
/// only useful to measure what the laziness saves.
void set_lazy_fibers(bool lazy);
/// Whether blocks start without fibers.
bool lazy_fibers();

/// What the launches since the last reset cost the runtime.
struct RuntimeStats {
    std::uint64_t launches = 0;          ///< kernel launches
    std::uint64_t blocks = 0;            ///< blocks run
    std::uint64_t threads = 0;           ///< CUDA threads run
    std::uint64_t fiber_blocks = 0;      ///< blocks that needed fibers (reached a barrier or warp op)
    std::uint64_t fibers = 0;            ///< fibers created (threads, plus one scheduler per fiber block)
    std::uint64_t context_switches = 0;  ///< jumps between fibers and stacks
};
/// The totals since the last reset_runtime_stats().
RuntimeStats runtime_stats();
/// Sets the totals to zero.
void reset_runtime_stats();

}  // namespace gl::cuda::cpu

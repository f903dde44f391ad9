/// @file
/// @brief Intra-op threads: a small pool of pinned worker threads and the thread-count
/// control every threaded kernel honours (the spirit of torch.set_num_threads).
///
/// Owns: how many threads a kernel may use, the worker threads themselves, and how they
/// are placed on CPUs. Knows nothing about what the kernels compute.
///
/// Why pinned: on a 2-core machine the scheduler may put two busy threads on one core
/// for milliseconds at a time, which halves a parallel kernel's speed at random. Worker
/// t is bound to the t-th CPU the process may use (modulo their number), and the thread
/// that first starts a parallel region (the main thread, as a rule) runs share 0 and is
/// bound to the first CPU, as OpenMP does with OMP_PROC_BIND=true; other threads that
/// start regions run share 0 unbound.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

namespace gl {

/// Sets how many threads parallel kernels use (>= 1). More threads than CPUs is allowed
/// (to show that it does not help); the default is the number of CPUs this process may
/// run on. Not to be called from inside a parallel region.
void set_num_threads(int n);

/// How many threads parallel kernels use now.
int get_num_threads();

/// Runs fn(t) for every t in [0, n) at once, share t on thread t (the caller runs share
/// 0), and returns when all have finished. n is capped at get_num_threads(); a call from
/// inside a parallel region runs every share on the calling thread. An exception thrown
/// by a share is rethrown here after all shares have finished.
void parallel_run(int n, const std::function<void(int)>& fn);

/// Splits [0, count) into at most get_num_threads() contiguous ranges of at least
/// @p grain items each and runs fn(begin, end) on each range in parallel.
void parallel_for(std::int64_t count, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& fn);

/// parallel_run for any callable (a lambda): the std::function holds only a reference
/// to it, so starting a parallel region allocates nothing (a lambda with more than two
/// captures would not fit in std::function's own storage and would be copied to the heap
/// on every call; the captured graph executor promises zero allocations per step).
template <class F>
    requires(!std::is_same_v<std::decay_t<F>, std::function<void(int)>>)
void parallel_run(int n, F&& fn) {
    parallel_run(n, std::function<void(int)>(std::ref(fn)));
}

/// parallel_for for any callable, without allocating (see parallel_run above).
template <class F>
    requires(!std::is_same_v<std::decay_t<F>, std::function<void(std::int64_t, std::int64_t)>>)
void parallel_for(std::int64_t count, std::int64_t grain, F&& fn) {
    parallel_for(count, grain, std::function<void(std::int64_t, std::int64_t)>(std::ref(fn)));
}

/// True on a thread that is running a share of a parallel region.
bool in_parallel_region();

/// From now on, parallel regions started by the calling thread run on that thread alone,
/// and get_num_threads() says 1 there; other threads are not affected. For threads that
/// are already one of several workers running side by side (data-loader workers: PyTorch
/// calls torch.set_num_threads(1) in each): through the one pool they would queue for it,
/// one region at a time, and two workers would do the work of one.
void keep_regions_on_this_thread();

/// Lets the calling thread run on every CPU of the process. A new thread inherits its
/// creator's affinity, so a thread started by the pinned main thread would otherwise be
/// held to that one CPU: every thread gradlab starts (data-parallel workers, the DDP
/// communication thread, the CUDA-on-CPU runtime's helpers) calls this first.
void release_inherited_pinning();

/// release_inherited_pinning() for the lifetime of this object, then the calling thread's
/// affinity as it was. For calls into peer libraries (oneDNN's OpenMP threads, for one)
/// that start their own threads from the caller: without it all of the peer's threads
/// would share the one CPU the pool pinned the caller to, and the peer would be measured
/// at half speed.
class UnpinnedScope {
public:
    UnpinnedScope();
    ~UnpinnedScope();
    UnpinnedScope(const UnpinnedScope&) = delete;
    UnpinnedScope& operator=(const UnpinnedScope&) = delete;

private:
    std::vector<int> saved_cpus_;
};

}  // namespace gl

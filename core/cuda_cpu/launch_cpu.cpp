// Launching a grid on the CPU runtime: a small pool of OS threads takes blocks from a
// shared counter, each running its blocks with its own BlockScheduler (and so its own
// fiber stacks and its own copy of every __shared__ variable, which is thread_local).
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "cuda_cpu/block_scheduler.hpp"
#include "cuda_cpu/cpu_runtime.hpp"
#include "cuda_cpu/error.hpp"
#include "cuda_cpu/launch.hpp"
#include "cuda_cpu/timeline.hpp"
#include "parallel/thread_pool.hpp"

namespace gl::cuda::inline cpu {
namespace {

/// OS threads that run one job together: the caller and size()-1 helpers.
class WorkerPool {
public:
    explicit WorkerPool(int size) {
        for (int i = 1; i < size; ++i)
            helpers_.emplace_back([this] {
                release_inherited_pinning();  // not held to the launching thread's CPU
                serve();
            });
    }
    ~WorkerPool() {
        {
            std::lock_guard lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        for (auto& t : helpers_) t.join();
    }
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    int size() const { return static_cast<int>(helpers_.size()) + 1; }

    /// Runs @p job on every thread of the pool, the caller included; returns when all are done.
    void run(const std::function<void()>& job) {
        {
            std::lock_guard lock(mutex_);
            job_ = &job;
            busy_ = static_cast<int>(helpers_.size());
            ++generation_;
        }
        wake_.notify_all();
        job();
        std::unique_lock lock(mutex_);
        done_.wait(lock, [this] { return busy_ == 0; });
        job_ = nullptr;
    }

private:
    void serve() {
        std::uint64_t seen = 0;
        for (;;) {
            const std::function<void()>* job;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
                job = job_;
            }
            (*job)();
            {
                std::lock_guard lock(mutex_);
                --busy_;
            }
            done_.notify_one();
        }
    }

    std::vector<std::thread> helpers_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void()>* job_ = nullptr;
    std::uint64_t generation_ = 0;
    int busy_ = 0;
    bool stop_ = false;
};

/// Everything process-wide: settings, the pool, the counters.
struct Runtime {
    std::mutex launch_mutex;  // held by a launch for its whole run: one at a time, like one stream
    std::unique_ptr<WorkerPool> pool;  // guarded by launch_mutex

    std::mutex mutex;  // guards the fields below, briefly (kernel code may read them too)
    Schedule schedule;
    bool lazy = true;
    int workers = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    MemoryCounters counters;
    RuntimeStats stats;
};

Runtime& runtime() {
    static Runtime r;
    return r;
}

detail::BlockScheduler& this_threads_scheduler() {
    thread_local detail::BlockScheduler scheduler;
    return scheduler;
}

}  // namespace

namespace detail {

void check_launch_config(const KernelLaunch& k) {
    const dim3 g = k.grid, b = k.block;
    auto fail = [](const std::string& why) {
        throw Error(ErrorCode::invalid_configuration, why);
    };
    if (g.x == 0 || g.y == 0 || g.z == 0)
        fail("grid (" + std::to_string(g.x) + "," + std::to_string(g.y) + "," + std::to_string(g.z) +
             ") has a zero dimension; launch at least one block (and skip the launch for empty "
             "problems)");
    if (g.y > 65535 || g.z > 65535)
        fail("gridDim.y and gridDim.z are at most 65535 (put the large dimension in x)");
    if (b.x == 0 || b.y == 0 || b.z == 0)
        fail("block size has a zero dimension");
    if (b.x > 1024 || b.y > 1024 || b.z > 64 ||
        std::uint64_t(b.x) * b.y * b.z > 1024)
        fail("block (" + std::to_string(b.x) + "," + std::to_string(b.y) + "," +
             std::to_string(b.z) + ") has more than 1024 threads (or z > 64)");
    if (k.dynamic_shared_bytes > 48 * 1024)
        fail(std::to_string(k.dynamic_shared_bytes) +
             " bytes of dynamic shared memory: more than the 48 KiB a launch gets without "
             "cudaFuncSetAttribute");
}

void launch_kernel(const KernelLaunch& launch) {
    if (BlockScheduler::current())
        throw Error(ErrorCode::invalid_configuration,
                    "a kernel launched another kernel; the CPU runtime does not support "
                    "dynamic parallelism");
    check_launch_config(launch);
    Runtime& rt = runtime();
    std::lock_guard one_at_a_time(rt.launch_mutex);
    Schedule schedule;
    bool lazy;
    int workers;
    {
        std::lock_guard settings(rt.mutex);
        schedule = rt.schedule;
        lazy = rt.lazy;
        workers = rt.workers;
    }
    if (!rt.pool || rt.pool->size() != workers) {
        rt.pool.reset();
        rt.pool = std::make_unique<WorkerPool>(workers);
    }

    const dim3 g = launch.grid;
    const std::uint64_t blocks = std::uint64_t(g.x) * g.y * g.z;
    std::atomic<std::uint64_t> next{0};
    std::atomic<bool> failed{false};
    std::mutex results_mutex;
    std::uint64_t failed_block = std::numeric_limits<std::uint64_t>::max();
    std::exception_ptr failure;
    MemoryCounters counters;
    RuntimeStats stats;

    const std::function<void()> work = [&] {
        BlockScheduler& scheduler = this_threads_scheduler();
        MemoryCounters my_counters;
        for (std::uint64_t b; !failed.load(std::memory_order_relaxed) && (b = next++) < blocks;) {
            const uint3 idx{static_cast<unsigned>(b % g.x), static_cast<unsigned>(b / g.x % g.y),
                            static_cast<unsigned>(b / (std::uint64_t(g.x) * g.y))};
            try {
                scheduler.run_block(launch, idx, schedule, lazy);
            } catch (...) {
                // Report the failed block with the lowest index, whichever worker saw it.
                std::lock_guard results(results_mutex);
                if (b < failed_block) {
                    failed_block = b;
                    failure = std::current_exception();
                }
                failed = true;
            }
            my_counters += scheduler.block_counts();
        }
        const RuntimeStats s = scheduler.take_stats();
        std::lock_guard results(results_mutex);
        counters += my_counters;
        stats.blocks += s.blocks;
        stats.threads += s.threads;
        stats.fiber_blocks += s.fiber_blocks;
        stats.fibers += s.fibers;
        stats.context_switches += s.context_switches;
    };
    const std::int64_t start_ns = now_ns();  // the grid has the workers from here on
    rt.pool->run(work);
    TimelineEntry entry;
    entry.kind = OpKind::kernel;
    entry.stream = current_stream();
    record_op(entry, start_ns);

    std::lock_guard settings(rt.mutex);
    rt.counters += counters;
    rt.stats.launches += 1;
    rt.stats.blocks += stats.blocks;
    rt.stats.threads += stats.threads;
    rt.stats.fiber_blocks += stats.fiber_blocks;
    rt.stats.fibers += stats.fibers;
    rt.stats.context_switches += stats.context_switches;
    if (failure) std::rethrow_exception(failure);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------
// Settings and statistics (cpu_runtime.hpp, memory_counters.hpp).

void set_schedule(Schedule s) {
    std::lock_guard lock(runtime().mutex);
    runtime().schedule = s;
}
Schedule schedule() {
    std::lock_guard lock(runtime().mutex);
    return runtime().schedule;
}
void set_workers(int count) {
    if (count < 1) throw Error(ErrorCode::invalid_value, "set_workers: need at least one worker");
    std::lock_guard lock(runtime().mutex);
    runtime().workers = count;
}
int workers() {
    std::lock_guard lock(runtime().mutex);
    return runtime().workers;
}
void set_lazy_fibers(bool lazy) {
    std::lock_guard lock(runtime().mutex);
    runtime().lazy = lazy;
}
bool lazy_fibers() {
    std::lock_guard lock(runtime().mutex);
    return runtime().lazy;
}
RuntimeStats runtime_stats() {
    std::lock_guard lock(runtime().mutex);
    return runtime().stats;
}
void reset_runtime_stats() {
    std::lock_guard lock(runtime().mutex);
    runtime().stats = {};
}
MemoryCounters memory_counters() {
    std::lock_guard lock(runtime().mutex);
    return runtime().counters;
}
void reset_memory_counters() {
    std::lock_guard lock(runtime().mutex);
    runtime().counters = {};
}

}  // namespace gl::cuda::cpu

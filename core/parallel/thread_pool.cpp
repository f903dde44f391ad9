// The pool behind set_num_threads: workers 1..n-1 wait for a "generation" number to
// change, run their share of the job, and count down a "pending" counter the caller
// waits on. Waiting spins for a few microseconds first (a parallel region in a training
// step lasts tens of microseconds, too short for a sleep and wake-up), then sleeps.
#include "parallel/thread_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/error.hpp"

namespace gl {
namespace {

thread_local bool tls_in_region = false;
thread_local bool tls_regions_stay_here = false;  // keep_regions_on_this_thread() was called

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

// The CPUs the calling thread may run on, in order.
std::vector<int> allowed_cpus() {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &set)) cpus.push_back(c);
    if (cpus.empty()) cpus.push_back(0);
    return cpus;
}

// The CPUs this process may run on, read once, before the pool pins any thread: read
// later from a pinned caller, they would be just that caller's one CPU.
const std::vector<int>& process_cpus() {
    static const std::vector<int> cpus = allowed_cpus();
    return cpus;
}

void set_affinity(const std::vector<int>& cpus) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus) CPU_SET(c, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort
}

void pin_to(int cpu) { set_affinity({cpu}); }

class Pool {
public:
    explicit Pool(int threads) : cpus_(process_cpus()) {
        oversubscribed_ = threads > static_cast<int>(cpus_.size());
        for (int t = 1; t < threads; ++t) workers_.emplace_back([this, t] { work(t); });
    }
    ~Pool() {
        stop_.store(true);
        generation_.fetch_add(1);
        generation_.notify_all();
        for (auto& w : workers_) w.join();
    }
    int size() const { return static_cast<int>(workers_.size()) + 1; }

    void run(int n, const std::function<void(int)>& fn) {
        std::lock_guard lock(run_mutex_);
        pin_caller();
        job_ = &fn;
        job_threads_ = n;
        error_ = nullptr;
        pending_.store(n - 1);
        generation_.fetch_add(1);
        generation_.notify_all();
        run_share(0);
        for (int spins = 0; pending_.load() != 0; ++spins) wait_a_little(spins);
        job_ = nullptr;
        if (error_) std::rethrow_exception(error_);
    }

private:
    // Pins the process's first caller (the main thread, as a rule) to the first CPU, once.
    // Other threads that start regions stay free: several callers pinned to one CPU
    // would share it even between regions (data-parallel worker threads, for one).
    void pin_caller() {
        static std::atomic<bool> claimed{false};
        thread_local bool decided = false;
        if (decided) return;
        decided = true;
        if (!claimed.exchange(true)) pin_to(cpus_[0]);
    }

    void wait_a_little(int spins) {
        // Oversubscribed, a spinning thread steals the core from the one it waits for.
        if (oversubscribed_ || spins > 20000) std::this_thread::yield();
        else cpu_relax();
    }

    void run_share(int t) {
        tls_in_region = true;
        try {
            (*job_)(t);
        } catch (...) {
            std::lock_guard lock(error_mutex_);
            if (!error_) error_ = std::current_exception();
        }
        tls_in_region = false;
    }

    void work(int t) {
        pin_to(cpus_[static_cast<std::size_t>(t) % cpus_.size()]);
        std::uint64_t seen = 0;
        for (;;) {
            std::uint64_t now = generation_.load();
            for (int spins = 0; now == seen && spins < 50000; ++spins) {
                wait_a_little(spins);
                now = generation_.load();
            }
            if (now == seen) {
                generation_.wait(seen);  // sleep until the next job
                continue;
            }
            seen = now;
            if (stop_.load()) return;
            if (t < job_threads_) {
                run_share(t);
                pending_.fetch_sub(1);
            }
        }
    }

    std::vector<int> cpus_;
    bool oversubscribed_ = false;
    std::vector<std::thread> workers_;
    std::mutex run_mutex_;  // one parallel region at a time
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<int> pending_{0};
    std::atomic<bool> stop_{false};
    const std::function<void(int)>* job_ = nullptr;
    int job_threads_ = 0;
    std::mutex error_mutex_;
    std::exception_ptr error_;
};

struct State {
    std::mutex mutex;
    int threads = static_cast<int>(process_cpus().size());
    std::unique_ptr<Pool> pool;
};

State& state() {
    static State s;
    return s;
}

}  // namespace

void set_num_threads(int n) {
    check(n >= 1, "set_num_threads: the number of threads must be at least 1, got " + std::to_string(n));
    check(!tls_in_region, "set_num_threads: cannot change the thread count inside a parallel region");
    State& s = state();
    std::lock_guard lock(s.mutex);
    if (s.pool && s.pool->size() != n) s.pool.reset();  // joins the old workers
    s.threads = n;
}

int get_num_threads() {
    if (tls_regions_stay_here) return 1;
    State& s = state();
    std::lock_guard lock(s.mutex);
    return s.threads;
}

bool in_parallel_region() { return tls_in_region; }

void keep_regions_on_this_thread() { tls_regions_stay_here = true; }

void release_inherited_pinning() { set_affinity(process_cpus()); }

UnpinnedScope::UnpinnedScope() : saved_cpus_(allowed_cpus()) { release_inherited_pinning(); }

UnpinnedScope::~UnpinnedScope() {
    if (!saved_cpus_.empty()) set_affinity(saved_cpus_);
}

void parallel_run(int n, const std::function<void(int)>& fn) {
    n = std::min(n, get_num_threads());
    if (n <= 1 || tls_in_region) {  // every share on this thread, in order
        const bool outer = tls_in_region;
        tls_in_region = true;
        try {
            for (int t = 0; t < std::max(n, 1); ++t) fn(t);
        } catch (...) {
            tls_in_region = outer;
            throw;
        }
        tls_in_region = outer;
        return;
    }
    Pool* pool = nullptr;
    {
        State& s = state();
        std::lock_guard lock(s.mutex);
        if (!s.pool) s.pool = std::make_unique<Pool>(s.threads);
        pool = s.pool.get();
    }
    pool->run(n, fn);
}

void parallel_for(std::int64_t count, std::int64_t grain,
                  const std::function<void(std::int64_t, std::int64_t)>& fn) {
    if (count <= 0) return;
    grain = std::max<std::int64_t>(grain, 1);
    const std::int64_t shares =
        std::min<std::int64_t>(get_num_threads(), (count + grain - 1) / grain);
    if (shares <= 1 || tls_in_region) {
        fn(0, count);
        return;
    }
    parallel_run(static_cast<int>(shares), [&](int t) {
        const std::int64_t begin = count * t / shares, end = count * (t + 1) / shares;
        if (begin < end) fn(begin, end);
    });
}

}  // namespace gl

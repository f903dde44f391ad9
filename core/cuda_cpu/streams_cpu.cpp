// Streams on the CPU runtime: a worker thread per stream runs its queue in order; events
// are completion marks those workers set; page-locked host memory is mlock'ed; the
// timeline records when each copy and kernel ran.
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "cuda_cpu/streams.hpp"
#include "cuda_cpu/timeline.hpp"

namespace gl::cuda::inline cpu {

// ---------------------------------------------------------------------------------------
// The timeline and the stream schedule.

namespace {

struct TimelineLog {
    std::mutex mutex;
    bool on = false;
    std::int64_t epoch_ns = 0;
    std::vector<TimelineEntry> entries;
    StreamSchedule schedule;
    double link_gbs = 0;
};

TimelineLog& log() {
    static TimelineLog t;
    return t;
}

thread_local int this_threads_stream = 0;

/// A vector clock: stream id -> operations of that stream known to have finished.
using Clock = std::map<int, std::uint64_t>;
thread_local Clock* this_threads_clock = nullptr;  // the stream worker's own clock

void merge_into(Clock& into, const Clock& from) {
    for (const auto& [stream, count] : from) into[stream] = std::max(into[stream], count);
}

/// What a host thread (not a stream worker) knows has finished: it learns it by waiting
/// (Stream::synchronize, Event::synchronize), and everything it enqueues afterwards comes
/// after that. Without it, a host that synchronizes after every kernel would serialize the
/// work while the timeline still said the work may overlap.
Clock& host_clock() {
    thread_local Clock clock;
    return clock;
}

/// The clock of the calling thread: a worker's own, or the host thread's.
Clock& callers_clock() { return this_threads_clock ? *this_threads_clock : host_clock(); }

/// The calling host thread's number (1, 2, ...; TimelineEntry::host_thread), given on first use.
int this_host_thread() {
    static std::atomic<int> next{1};
    thread_local const int number = next++;
    return number;
}

/// Operations the calling host thread has run on its default stream (its lane, -number in
/// clocks). Kept apart from host_clock(): on a GPU the default stream's work is only queued
/// when the host moves on, so a stream's work queued next does not come after it. Other
/// lanes learn it only through an event recorded on the default stream, or synchronize().
thread_local std::uint64_t host_lane_ops = 0;

/// host_clock() with the default stream's own progress: what a default-stream event marks.
Clock host_lane_clock() {
    Clock clock = host_clock();
    clock[-this_host_thread()] = host_lane_ops;
    return clock;
}

}  // namespace

const char* op_name(OpKind kind) {
    switch (kind) {
        case OpKind::copy_h2d: return "copy_h2d";
        case OpKind::copy_d2h: return "copy_d2h";
        case OpKind::copy_d2d: return "copy_d2d";
        case OpKind::copy_h2h: return "copy_h2h";
        case OpKind::memset: return "memset";
        case OpKind::kernel: return "kernel";
    }
    return "?";
}

void set_timeline_recording(bool on) {
    TimelineLog& t = log();
    std::lock_guard lock(t.mutex);
    if (on) {
        t.entries.clear();
        t.epoch_ns = detail::now_ns();
    }
    t.on = on;
}

bool timeline_recording() {
    std::lock_guard lock(log().mutex);
    return log().on;
}

std::vector<TimelineEntry> timeline() {
    std::lock_guard lock(log().mutex);
    return log().entries;
}

void set_stream_schedule(StreamSchedule schedule) {
    if (schedule.max_delay_us < 0)
        throw Error(ErrorCode::invalid_value, "set_stream_schedule: max_delay_us must be >= 0");
    std::lock_guard lock(log().mutex);
    log().schedule = schedule;
}

StreamSchedule stream_schedule() {
    std::lock_guard lock(log().mutex);
    return log().schedule;
}

int current_stream() { return this_threads_stream; }

void set_link_bandwidth(double gbs) {
    if (!(gbs >= 0)) throw Error(ErrorCode::invalid_value, "set_link_bandwidth: GB/s must be >= 0 (0: off)");
    std::lock_guard lock(log().mutex);
    log().link_gbs = gbs;
}

double link_bandwidth() {
    std::lock_guard lock(log().mutex);
    return log().link_gbs;
}

bool happens_before(const TimelineEntry& a, const TimelineEntry& b) {
    const int lane_a = lane_of(a), lane_b = lane_of(b);
    if (lane_a == 0 || lane_b == 0) return false;
    if (lane_a == lane_b) return a.seq < b.seq;
    for (const auto& [lane, count] : b.clock)
        if (lane == lane_a) return count >= a.seq;
    return false;
}

namespace detail {

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void record_op(TimelineEntry entry, std::int64_t start_ns) {
    const std::int64_t end_ns = now_ns();
    TimelineLog& t = log();
    std::lock_guard lock(t.mutex);
    if (!t.on || start_ns < t.epoch_ns) return;  // started before recording did
    if (this_threads_clock) {
        entry.seq = (*this_threads_clock)[this_threads_stream];
        entry.clock.assign(this_threads_clock->begin(), this_threads_clock->end());
    } else {  // the default stream: the host thread's own lane, one more operation done on it
        entry.host_thread = this_host_thread();
        entry.seq = ++host_lane_ops;
        const Clock clock = host_lane_clock();
        entry.clock.assign(clock.begin(), clock.end());
    }
    entry.start_us = static_cast<double>(start_ns - t.epoch_ns) * 1e-3;
    entry.end_us = static_cast<double>(end_ns - t.epoch_ns) * 1e-3;
    t.entries.push_back(entry);
}

std::vector<std::pair<double, double>> merged_intervals(const std::vector<TimelineEntry>& entries,
                                                        bool (*keep)(const TimelineEntry&, const void*),
                                                        const void* context) {
    std::vector<std::pair<double, double>> spans;
    for (const TimelineEntry& e : entries)
        if (keep(e, context) && e.end_us > e.start_us) spans.emplace_back(e.start_us, e.end_us);
    std::sort(spans.begin(), spans.end());
    std::vector<std::pair<double, double>> merged;
    for (const auto& span : spans) {
        if (!merged.empty() && span.first <= merged.back().second)
            merged.back().second = std::max(merged.back().second, span.second);
        else
            merged.push_back(span);
    }
    return merged;
}

double intersection_us(const std::vector<std::pair<double, double>>& a,
                       const std::vector<std::pair<double, double>>& b) {
    double total = 0;
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {  // walk both sorted lists, like a merge
        const double lo = std::max(a[i].first, b[j].first);
        const double hi = std::min(a[i].second, b[j].second);
        if (hi > lo) total += hi - lo;
        (a[i].second < b[j].second) ? ++i : ++j;
    }
    return total;
}

}  // namespace detail

// ---------------------------------------------------------------------------------------
// Events: a generation count the host bumps at each record and the stream's worker
// completes when it reaches the mark.

struct Event::State {
    std::mutex mutex;
    std::condition_variable completed_cv;
    std::uint64_t recorded = 0;   // marks requested
    std::uint64_t completed = 0;  // marks reached (completed <= recorded)
    std::int64_t time_ns = 0;     // when the last mark was reached
    Clock clock;                  // the recording stream's clock at the last mark

    void complete(std::uint64_t mark) {
        {
            std::lock_guard lock(mutex);
            completed = std::max(completed, mark);
            time_ns = detail::now_ns();
            if (this_threads_clock) clock = *this_threads_clock;
        }
        completed_cv.notify_all();
    }
    void wait_for(std::uint64_t mark) {
        std::unique_lock lock(mutex);
        completed_cv.wait(lock, [&] { return completed >= mark; });
        // Whoever waited (a stream worker or the host) now knows everything the recording
        // stream had done.
        merge_into(callers_clock(), clock);
    }
};

Event::Event() : state_(std::make_shared<State>()) {}
Event::~Event() = default;

void Event::record() {
    std::lock_guard lock(state_->mutex);
    state_->completed = state_->recorded = state_->recorded + 1;
    state_->time_ns = detail::now_ns();
    // The default stream's work so far is done (it ran on this thread): a stream that waits
    // for this mark comes after it, and after what this thread knew had finished.
    state_->clock = this_threads_clock ? *this_threads_clock : host_lane_clock();
}

void Event::record(Stream& stream) {
    std::uint64_t mark;
    {
        std::lock_guard lock(state_->mutex);
        mark = ++state_->recorded;
    }
    stream.enqueue([state = state_, mark] { state->complete(mark); });
}

void Event::synchronize() {
    std::uint64_t mark;
    {
        std::lock_guard lock(state_->mutex);
        mark = state_->recorded;
    }
    state_->wait_for(mark);
}

bool Event::query() const {
    std::lock_guard lock(state_->mutex);
    return state_->completed >= state_->recorded;
}

float Event::elapsed_ms(const Event& start, const Event& stop) {
    auto completed_time = [](const Event& e, const char* which) {
        std::lock_guard lock(e.state_->mutex);
        if (e.state_->recorded == 0)
            throw Error(ErrorCode::invalid_value,
                        std::string("Event::elapsed_ms: the ") + which +
                            " event was never recorded; record both events first");
        if (e.state_->completed < e.state_->recorded)
            throw Error(ErrorCode::invalid_value,
                        std::string("Event::elapsed_ms: the ") + which +
                            " event has not completed yet; synchronize it first");
        return e.state_->time_ns;
    };
    const std::int64_t t0 = completed_time(start, "start"), t1 = completed_time(stop, "stop");
    return static_cast<float>(static_cast<double>(t1 - t0) * 1e-6);
}

// ---------------------------------------------------------------------------------------
// Streams.

struct Stream::Impl {
    int id = 0;
    std::mutex mutex;
    std::condition_variable work_cv, idle_cv;
    /// An item of work and what its enqueuer knew had finished when it enqueued it.
    struct Item {
        std::function<void()> work;
        Clock known;
    };
    std::deque<Item> queue;
    Clock done;  // the worker's clock after its last finished item (under mutex)
    bool busy = false;  // the worker is running an item
    bool stop = false;
    std::exception_ptr error;  // the first error since the last synchronize
    std::thread worker;

    void serve() {
        this_threads_stream = id;
        Clock clock;
        this_threads_clock = &clock;
        std::mt19937_64 delays;
        std::uint64_t seeded_with = ~std::uint64_t{0};
        for (;;) {
            Item item;
            {
                std::unique_lock lock(mutex);
                work_cv.wait(lock, [&] { return stop || !queue.empty(); });
                if (queue.empty()) return;  // stopping, and nothing left
                item = std::move(queue.front());
                queue.pop_front();
                busy = true;
            }
            sleep_if_randomized(delays, seeded_with);
            merge_into(clock, item.known);
            ++clock[id];
            try {
                item.work();
            } catch (...) {
                std::lock_guard lock(mutex);
                if (!error) error = std::current_exception();
            }
            {
                std::lock_guard lock(mutex);
                busy = false;
                done = clock;
            }
            idle_cv.notify_all();
        }
    }

    // The randomized schedule: a delay drawn from this stream's own seeded sequence.
    void sleep_if_randomized(std::mt19937_64& delays, std::uint64_t& seeded_with) {
        const StreamSchedule s = stream_schedule();
        if (!s.randomized || s.max_delay_us == 0) return;
        if (seeded_with != s.seed) {
            delays.seed(s.seed * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(id));
            seeded_with = s.seed;
        }
        const auto us = std::uniform_int_distribution<int>(0, s.max_delay_us)(delays);
        std::this_thread::sleep_for(std::chrono::microseconds(us));
    }

    /// Waits until the queue is empty and the worker idle; the caller then knows
    /// everything this stream has done.
    void drain() {
        std::unique_lock lock(mutex);
        idle_cv.wait(lock, [&] { return queue.empty() && !busy; });
        merge_into(callers_clock(), done);
    }
};

namespace {

// Every live stream, so that gl::cuda::synchronize() can wait for all of them.
struct StreamRegistry {
    std::mutex mutex;
    std::set<Stream*> live;
    std::atomic<int> next_id{1};
};

StreamRegistry& registry() {
    static StreamRegistry r;
    return r;
}

}  // namespace

Stream::Stream() : impl_(std::make_unique<Impl>()) {
    impl_->id = registry().next_id++;
    impl_->worker = std::thread([impl = impl_.get()] { impl->serve(); });
    std::lock_guard lock(registry().mutex);
    registry().live.insert(this);
}

Stream::~Stream() {
    {
        std::lock_guard lock(registry().mutex);
        registry().live.erase(this);
    }
    {
        std::lock_guard lock(impl_->mutex);
        impl_->stop = true;
    }
    impl_->work_cv.notify_all();
    impl_->worker.join();  // the worker empties the queue before it stops
}

int Stream::id() const { return impl_->id; }

void Stream::enqueue(std::function<void()> work) {
    {
        std::lock_guard lock(impl_->mutex);
        impl_->queue.push_back({std::move(work), callers_clock()});
    }
    impl_->work_cv.notify_one();
}

void Stream::synchronize() {
    impl_->drain();
    std::exception_ptr error;
    {
        std::lock_guard lock(impl_->mutex);
        std::swap(error, impl_->error);
    }
    if (error) std::rethrow_exception(error);
}

void Stream::wait(const Event& event) {
    const std::shared_ptr<Event::State>& state = event.state();
    std::uint64_t mark;
    {
        std::lock_guard lock(state->mutex);
        mark = state->recorded;  // the last mark now; later records do not count
    }
    enqueue([state, mark] { state->wait_for(mark); });
}

void default_stream_wait(const Event& event) {
    const std::shared_ptr<Event::State>& state = event.state();
    std::uint64_t mark;
    {
        std::lock_guard lock(state->mutex);
        mark = state->recorded;
    }
    state->wait_for(mark);  // the default stream is this thread: it waits, and learns the clock
}

void synchronize() {
    // The registry stays locked while the streams drain: a stream destroyed meanwhile on
    // another thread waits in its destructor (which erases it first) instead of being freed
    // under us. Work items never create or destroy streams, so this cannot deadlock.
    std::lock_guard lock(registry().mutex);
    for (Stream* s : registry().live) s->synchronize();
    // cudaDeviceSynchronize waits for the default stream too: work queued from now on comes
    // after this thread's default-stream work.
    if (!this_threads_clock) host_clock() = host_lane_clock();
}

// ---------------------------------------------------------------------------------------
// Page-locked host memory.

namespace {

struct LockedBuffers {
    std::mutex mutex;
    std::map<std::uintptr_t, std::size_t> live;  // start -> bytes
};

LockedBuffers& locked_buffers() {
    static LockedBuffers b;
    return b;
}

std::string lock_limit_text() {
    rlimit limit{};
    if (getrlimit(RLIMIT_MEMLOCK, &limit) != 0) return "unknown";
    if (limit.rlim_cur == RLIM_INFINITY) return "unlimited";
    return std::to_string(limit.rlim_cur) + " bytes";
}

}  // namespace

void* host_alloc(std::size_t bytes) {
    if (bytes == 0) return nullptr;
    const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    const std::size_t rounded = (bytes + page - 1) / page * page;
    void* p = ::operator new(rounded, std::align_val_t{page}, std::nothrow);
    if (!p)
        throw Error(ErrorCode::memory_allocation,
                    "host_alloc: cannot allocate " + std::to_string(bytes) + " bytes");
    if (mlock(p, rounded) != 0) {
        const int err = errno;
        ::operator delete(p, std::align_val_t{page});
        throw Error(ErrorCode::memory_allocation,
                    "host_alloc: cannot page-lock " + std::to_string(rounded) +
                        " bytes: mlock: " + std::strerror(err) +
                        ". This process may lock at most " + lock_limit_text() +
                        " (RLIMIT_MEMLOCK, `ulimit -l`, counted in KiB) and buffers already "
                        "pinned count against it: pin fewer or smaller buffers (stage in "
                        "chunks), free pinned buffers you no longer need, or raise the limit");
    }
    std::lock_guard lock(locked_buffers().mutex);
    locked_buffers().live[reinterpret_cast<std::uintptr_t>(p)] = rounded;
    return p;
}

void host_free(void* host_ptr) {
    if (!host_ptr) return;
    std::size_t bytes = 0;
    {
        LockedBuffers& b = locked_buffers();
        std::lock_guard lock(b.mutex);
        const auto it = b.live.find(reinterpret_cast<std::uintptr_t>(host_ptr));
        if (it == b.live.end())
            throw Error(ErrorCode::invalid_value,
                        "host_free: the pointer was not returned by gl::cuda::host_alloc, or was "
                        "freed already (memory from gl::cuda::malloc goes to gl::cuda::free)");
        bytes = it->second;
        b.live.erase(it);
    }
    munlock(host_ptr, bytes);
    ::operator delete(host_ptr, std::align_val_t{static_cast<std::size_t>(sysconf(_SC_PAGESIZE))});
}

bool is_page_locked(const void* p, std::size_t bytes) {
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    LockedBuffers& b = locked_buffers();
    std::lock_guard lock(b.mutex);
    auto it = b.live.upper_bound(addr);
    if (it == b.live.begin()) return false;
    --it;
    return addr >= it->first && addr + bytes <= it->first + it->second;
}

// ---------------------------------------------------------------------------------------
// Asynchronous copies.

void memcpy_async(void* dst, const void* src, std::size_t bytes, CopyKind kind, Stream& stream) {
    if (bytes == 0) return;
    detail::check_copy(dst, src, bytes, kind);  // bad pointers throw now, as cudaMemcpyAsync does
    const void* host_side = kind == CopyKind::host_to_device   ? src
                            : kind == CopyKind::device_to_host ? dst
                                                               : nullptr;
    stream.enqueue([=] { detail::copy_now(dst, src, bytes, kind); });
    // From pageable memory the driver stages the copy and the host waits for it.
    if (host_side && !is_page_locked(host_side, bytes)) stream.synchronize();
}

}  // namespace gl::cuda::cpu

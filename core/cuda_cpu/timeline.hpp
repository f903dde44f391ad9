/// @file
/// @brief What the CPU runtime's streams did, and when: a timeline of every copy and kernel
/// (start, end, stream), and a randomized stream schedule that shakes out missing waits.
///
/// These exist only on the CPU runtime (on a GPU, Nsight Systems draws the timeline). Tests
/// and the claims report read the timeline to see whether a copy on one stream really ran
/// while a kernel ran on another; plots draw it. Recording is off by default and costs one
/// clock read and one locked append per operation when on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gl::cuda::inline cpu {

/// What a timeline entry did.
enum class OpKind {
    copy_h2d,  ///< host to device
    copy_d2h,  ///< device to host
    copy_d2d,  ///< device to device
    copy_h2h,  ///< host to host
    memset,    ///< device memset
    kernel,    ///< a kernel launch (the whole grid)
};

/// The name of @p kind, e.g. "copy_h2d".
const char* op_name(OpKind kind);

/// One operation, from its first to its last byte or block.
struct TimelineEntry {
    OpKind kind = OpKind::kernel;  ///< what it was
    int stream = 0;                ///< Stream::id() it ran on; 0: the default stream (the host)
    double start_us = 0;           ///< microseconds since recording started
    double end_us = 0;             ///< microseconds since recording started
    std::size_t bytes = 0;         ///< bytes copied or set (0 for kernels)
    const void* src = nullptr;     ///< a copy's source (nullptr for kernels)
    const void* dst = nullptr;     ///< a copy's or memset's destination
    bool pageable = false;         ///< a host side that was not page-locked (host_alloc)
    /// On the default stream: which host thread ran it (1, 2, ... in the order threads first
    /// recorded something); 0 on a stream. The default stream's work runs on the host thread
    /// that issued it, so each host thread is a lane of its own, named -host_thread in clocks.
    int host_thread = 0;
    /// Its position on its lane (its stream, or its host thread's default stream): 1 for the
    /// lane's first operation (on a stream, waits and event records count as operations).
    std::uint64_t seq = 0;
    /// Its vector clock: for each lane (a stream's id, or -host_thread), how many of that
    /// lane's operations had finished before this one could start, through the lane's own
    /// order, the events it waited for and what its enqueuer knew when it queued it.
    std::vector<std::pair<int, std::uint64_t>> clock;
    /// Whether this entry's interval overlaps @p other's in time (more than touching).
    bool overlaps(const TimelineEntry& other) const {
        return start_us < other.end_us && other.start_us < end_us;
    }
};

/// The lane @p e ran on: its stream's id, or -host_thread for the default stream's work
/// (0 when that is unknown: an entry without its host thread).
inline int lane_of(const TimelineEntry& e) { return e.stream != 0 ? e.stream : -e.host_thread; }

/// Whether @p a had to finish before @p b could start: @p b's lane waited, directly or
/// through other lanes' events, for the point after @p a on @p a's lane (or both are on one
/// lane, @p a first). A host thread's default-stream work is a lane too. It comes after the
/// stream work the host waited for (default_stream_wait, Event or Stream synchronize); a
/// stream's work comes after it only through an event recorded on the default stream
/// (Event::record(), then Stream::wait) or gl::cuda::synchronize(), not merely by being
/// queued later: on a GPU the default stream's work is still queued when the host moves on.
/// Decided from the order the program imposed, not from times, so it does not depend on how
/// busy the machine was, and it flags what would race on a GPU although the CPU runtime's
/// synchronous default stream happened to order it. False when a lane is unknown.
bool happens_before(const TimelineEntry& a, const TimelineEntry& b);

/// Whether the program let @p a and @p b run at the same time: neither happens before the other.
inline bool may_overlap(const TimelineEntry& a, const TimelineEntry& b) {
    return lane_of(a) != 0 && lane_of(b) != 0 && !happens_before(a, b) && !happens_before(b, a);
}

/// Starts recording (clearing what was recorded before) or stops it.
void set_timeline_recording(bool on);
/// Whether operations are being recorded.
bool timeline_recording();
/// The entries recorded since recording started, in the order they ended.
std::vector<TimelineEntry> timeline();

/// Records for its lifetime: starts (and clears) on construction, stops on destruction.
class ScopedTimeline {
public:
    ScopedTimeline() { set_timeline_recording(true); }
    ~ScopedTimeline() { set_timeline_recording(false); }
    ScopedTimeline(const ScopedTimeline&) = delete;
    ScopedTimeline& operator=(const ScopedTimeline&) = delete;
};

/// How a stream's worker picks the moment to run its next operation. In order (the
/// default) it runs each as soon as the previous one ended and its waits are met. Randomized,
/// it first sleeps a seeded random delay of up to max_delay_us, and a copy pauses between
/// its pieces (as a DMA engine reads its source over time): work on different streams
/// then interleaves differently on every seed, so a missing stream wait (a kernel that
/// reads a chunk before its copy finished, a copy that overwrites a buffer a kernel still
/// reads) shows up as a wrong result. Device memory from gl::cuda::malloc is also filled
/// with 0xFF bytes (NaN as float) while randomized, so reading memory no copy has written
/// yet gives NaN instead of plausible leftovers.
struct StreamSchedule {
    bool randomized = false;     ///< sleep a random delay before each stream operation
    std::uint64_t seed = 0;      ///< the same seed gives each stream the same delays
    int max_delay_us = 300;      ///< the longest delay
};
/// Sets the schedule of the streams' operations that start from now on.
void set_stream_schedule(StreamSchedule schedule);
/// The schedule in force (in order unless changed).
StreamSchedule stream_schedule();

/// Sets a stream schedule for its lifetime, then restores the previous one.
class ScopedStreamSchedule {
public:
    /// Remembers the current stream schedule and switches to @p s.
    explicit ScopedStreamSchedule(StreamSchedule s) : saved_(stream_schedule()) {
        set_stream_schedule(s);
    }
    ~ScopedStreamSchedule() { set_stream_schedule(saved_); }
    ScopedStreamSchedule(const ScopedStreamSchedule&) = delete;
    ScopedStreamSchedule& operator=(const ScopedStreamSchedule&) = delete;

private:
    StreamSchedule saved_;
};

/// Models the link between host and device (PCIe on a GPU) for copies between them: with
/// @p gbs > 0, a host-to-device or device-to-host copy lasts at least bytes / gbs (its
/// thread sleeps for the rest, using no core, as a copy engine's DMA uses none), so copies
/// can be made as slow relative to kernels as they are on a GPU. 0 (the default): copies
/// take as long as memcpy does.
void set_link_bandwidth(double gbs);
/// The modeled link's GB/s; 0 when off.
double link_bandwidth();

/// The stream the calling thread executes (its Stream::id()); 0 on any other thread.
int current_stream();

/// Microseconds during which at least one entry that satisfies @p is_a runs and at least
/// one that satisfies @p is_b runs (the measure of the intersection of their unions).
template <class A, class B>
double overlap_us(const std::vector<TimelineEntry>& entries, A is_a, B is_b);

/// Microseconds during which at least one entry satisfying @p is_a runs (the union's measure).
template <class A>
double busy_us(const std::vector<TimelineEntry>& entries, A is_a);

namespace detail {
/// The union of the intervals of @p entries that satisfy @p keep, sorted and disjoint.
std::vector<std::pair<double, double>> merged_intervals(const std::vector<TimelineEntry>& entries,
                                                        bool (*keep)(const TimelineEntry&, const void*),
                                                        const void* context);
/// The measure of the intersection of two sorted disjoint interval lists.
double intersection_us(const std::vector<std::pair<double, double>>& a,
                       const std::vector<std::pair<double, double>>& b);
/// Records an operation that ran from @p start to now (no-op unless recording).
void record_op(TimelineEntry entry, std::int64_t start_ns);
/// Nanoseconds on the timeline's clock (steady_clock).
std::int64_t now_ns();
}  // namespace detail

template <class A>
double busy_us(const std::vector<TimelineEntry>& entries, A is_a) {
    const auto keep = [](const TimelineEntry& e, const void* f) {
        return (*static_cast<const A*>(f))(e);
    };
    double total = 0;
    for (const auto& [s, e] : detail::merged_intervals(entries, keep, &is_a)) total += e - s;
    return total;
}

template <class A, class B>
double overlap_us(const std::vector<TimelineEntry>& entries, A is_a, B is_b) {
    const auto keep_a = [](const TimelineEntry& e, const void* f) {
        return (*static_cast<const A*>(f))(e);
    };
    const auto keep_b = [](const TimelineEntry& e, const void* f) {
        return (*static_cast<const B*>(f))(e);
    };
    return detail::intersection_us(detail::merged_intervals(entries, keep_a, &is_a),
                                   detail::merged_intervals(entries, keep_b, &is_b));
}

/// Whether @p e is a copy of any kind.
inline bool is_copy(const TimelineEntry& e) {
    return e.kind == OpKind::copy_h2d || e.kind == OpKind::copy_d2h ||
           e.kind == OpKind::copy_d2d || e.kind == OpKind::copy_h2h;
}
/// Whether @p e is a kernel.
inline bool is_kernel(const TimelineEntry& e) { return e.kind == OpKind::kernel; }

}  // namespace gl::cuda::cpu

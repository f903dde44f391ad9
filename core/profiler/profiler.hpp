/// @file
/// @brief A profiler: timed scopes by category, a step schedule, flows between threads,
/// a memory timeline, and Chrome Trace Event Format export (what torch.profiler records).
///
/// Owns: recording. A Scope is an RAII region (an op's forward, a kernel, a batch being
/// made, an all-reduce ...) that costs one relaxed atomic load and a branch when the
/// profiler is off. Each thread appends its events to its own buffer (no lock shared
/// between threads on the hot path); the buffers outlive their threads, so a loader
/// worker's events survive the worker. Knows nothing about ops, autograd or data: those
/// layers open scopes; analysis of the events lives in profiler/analysis.hpp.
///
/// Typical use (what `train --profile DIR` does):
///
///     gl::prof::Profiler p({.schedule = {.wait = 1, .warmup = 1, .active = 3}});
///     p.start();
///     for (batch ...) { train_step(batch); p.step(); }   // or gl::prof::mark_step()
///     p.stop();
///     gl::prof::write_chrome_trace(p.trace(), "trace.json");
#pragma once

// GRADLAB_PROFILER: 1 (the default) compiles the scopes in; 0 (meson -Dprofiler=false)
// compiles every Scope, flow and mark_step to nothing, for measuring a build without a
// profiler against one with it off. The API stays, so callers compile either way.
#ifndef GRADLAB_PROFILER
/// 1: the profiler's scopes are compiled in; meson -Dprofiler=false defines it as 0.
#define GRADLAB_PROFILER 1
#endif

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace gl::prof {

/// What a scope's time was spent on; the diagnosis rules reason about these.
enum class Category : std::uint8_t {
    Step,           ///< one training step (the schedule's unit)
    OpForward,      ///< an op's forward computation (ops/*.cpp)
    OpBackward,     ///< a node's backward in the autograd engine
    Kernel,         ///< a kernel call, with its flops and bytes where known
    DataWait,       ///< the training loop waiting for a batch
    DataWork,       ///< making a batch (reading, decoding, augmenting), any thread
    Optimizer,      ///< the optimizer's update
    Communication,  ///< a collective (all-reduce ...), with its bytes
    Allocator,      ///< an allocation or free
    Copy,           ///< a host-device copy
    Sync,           ///< the host waiting for a device (or another rank)
    User,           ///< anything else the caller labels
};
/// Number of categories.
inline constexpr std::size_t kCategoryCount = 12;
/// The category's name as the trace and the table print it ("op_forward", "data_wait", ...).
const char* category_name(Category c);

/// One finished scope (a "complete" event): where, when, what, and its work.
struct Event {
    std::string name;          ///< what ran ("matmul", "batch 3", "allreduce")
    Category category = Category::User;  ///< what kind of time it was
    int pid = 0;               ///< the process (rank) it ran in
    int tid = 0;               ///< the profiler's id of the thread it ran on
    std::int64_t start_ns = 0;  ///< start, nanoseconds since the profiler's epoch
    std::int64_t end_ns = 0;    ///< end (>= start_ns)
    double flops = 0;          ///< floating-point operations done, when known
    double bytes = 0;          ///< bytes moved (read + written, or sent), when known
    std::string shapes;        ///< input shapes, with record_shapes ("[64,784] [784,128]")
    std::int64_t duration_ns() const { return end_ns - start_ns; }  ///< end minus start
};

/// One end of an arrow between two scopes on different threads (a batch made on a
/// worker and consumed on the main thread). Both ends share an id.
struct FlowPoint {
    std::uint64_t id = 0;  ///< pairs the start with its finish
    bool start = true;     ///< true: the arrow leaves here; false: it arrives here
    int pid = 0;           ///< process (rank)
    int tid = 0;           ///< thread
    std::int64_t ts_ns = 0;  ///< when (inside the scope the arrow binds to)
};

/// The bytes one memory category held at one moment (a point of the memory timeline).
struct MemorySample {
    std::string category;   ///< the memory category ("activations", "parameters", ...)
    int pid = 0;            ///< process (rank)
    std::int64_t ts_ns = 0;  ///< when
    std::int64_t bytes = 0;  ///< bytes held by the category from then on
};

/// Everything recorded: what the exporters and the analysis read.
struct Trace {
    std::vector<Event> events;        ///< scopes, in no particular order
    std::vector<FlowPoint> flows;     ///< arrow ends
    std::vector<MemorySample> memory;  ///< the memory timeline
    std::vector<std::pair<int, std::string>> thread_names;  ///< tid -> name
    int steps = 0;                    ///< active steps recorded
    /// The steady clock's reading (ns) at the profiler's epoch: the same clock in every
    /// process of a machine, so traces of several ranks can be aligned when merged.
    std::int64_t clock_origin_ns = 0;
};

/// torch.profiler.schedule: skip `wait` steps, record `warmup` steps and throw them away
/// (caches and allocators settle), then keep `active` steps; then recording stops.
struct Schedule {
    int wait = 0;    ///< steps not recorded at all
    int warmup = 0;  ///< steps recorded, then discarded
    int active = 1;  ///< steps kept
};

/// How to record.
struct ProfilerOptions {
    Schedule schedule;           ///< which steps are kept
    bool record_shapes = false;  ///< store each op's input shapes (costs a string per op)
    int rank = 0;                ///< the process id written into the trace (one track per rank)
};

/// True when this build records scopes (GRADLAB_PROFILER=1); false when the profiler is
/// compiled out, and Profiler::start() then throws.
inline constexpr bool kCompiledIn = GRADLAB_PROFILER != 0;

namespace detail {
/// The one flag every Scope reads: true only while a step is being recorded.
extern std::atomic<bool> g_recording;
/// Whether shapes are wanted (read only when recording).
extern std::atomic<bool> g_record_shapes;
/// Nanoseconds since the profiler's epoch.
std::int64_t now_ns();
/// Appends @p e to the calling thread's buffer.
void record(Event&& e);
}  // namespace detail

#if GRADLAB_PROFILER
/// True while the profiler records: one relaxed atomic load, the whole cost when off.
inline bool recording() { return detail::g_recording.load(std::memory_order_relaxed); }
/// True when scopes should fill Event::shapes.
inline bool recording_shapes() { return recording() && detail::g_record_shapes.load(std::memory_order_relaxed); }
#else
/// Compiled out: never recording, known at compile time, so callers' branches vanish.
constexpr bool recording() { return false; }
/// Compiled out: never.
constexpr bool recording_shapes() { return false; }
#endif

#if GRADLAB_PROFILER
/// An RAII region: records [construction, destruction) as one event when the profiler
/// is recording at construction. `name` must outlive the scope (a string literal) unless
/// set_name() gives it a string.
class Scope {
public:
    /// Opens a region of @p category called @p name.
    Scope(Category category, const char* name) : on_(recording()) {
        if (on_) begin(category, name);
    }
    ~Scope() {
        if (on_) end();
    }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    /// True when this scope is being recorded (callers skip work for set_* otherwise).
    bool on() const { return on_; }
    /// Names the region with a built string (e.g. "batch 3").
    void set_name(std::string name) { if (on_) event_.name = std::move(name); }
    /// The work the region does, for the table's GFLOP/s and GB/s.
    void set_work(double flops, double bytes) { if (on_) { event_.flops = flops; event_.bytes = bytes; } }
    /// The region's input shapes, as the table prints them.
    void set_shapes(std::string shapes) { if (on_) event_.shapes = std::move(shapes); }

private:
    void begin(Category category, const char* name);
    void end();
    bool on_;
    Event event_;
};
#else
/// Compiled out (GRADLAB_PROFILER=0): an empty object whose members do nothing.
class Scope {
public:
    /// Does nothing.
    Scope(Category, const char*) {}
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    /// Never recorded.
    static constexpr bool on() { return false; }
    /// Does nothing.
    void set_name(const std::string&) {}
    /// Does nothing.
    void set_work(double, double) {}
    /// Does nothing.
    void set_shapes(const std::string&) {}
};
#endif

/// Stable id for an arrow from the producer of item @p index of @p owner to its consumer.
std::uint64_t flow_id(const void* owner, std::uint64_t index);
/// Starts arrow @p id here (call inside the producing scope).
void flow_start(std::uint64_t id);
/// Ends arrow @p id here (call inside the consuming scope).
void flow_finish(std::uint64_t id);
/// Records that memory category @p category now holds @p bytes.
void memory_sample(const std::string& category, std::int64_t bytes);
/// Names the calling thread in the trace ("loader worker 0", "ddp comm").
void set_thread_name(std::string name);

/// Records scopes from start() to stop(), following the schedule step by step. One
/// profiler may run at a time in a process.
class Profiler {
public:
    /// A profiler that will record as @p options say.
    explicit Profiler(ProfilerOptions options = {});
    /// Stops recording if still on.
    ~Profiler();
    Profiler(const Profiler&) = delete;
    Profiler& operator=(const Profiler&) = delete;
    /// Clears earlier recordings and starts the schedule at step 0. Throws gl::Error if
    /// another profiler is running.
    void start();
    /// Ends the current step and begins the next (torch.profiler's prof.step()). A kept
    /// step is recorded as a Step event "ProfilerStep#N" from the previous step() (or
    /// start()) to now, on the calling thread, so it covers the whole iteration.
    void step();
    /// Stops recording; trace() then holds the kept steps.
    void stop();
    /// True once the schedule's active window has passed (later steps are not recorded).
    bool done() const;
    /// The events of the kept steps (after stop()).
    const Trace& trace() const { return trace_; }
    /// The options it was made with.
    const ProfilerOptions& options() const { return options_; }

private:
    void apply_schedule();
    ProfilerOptions options_;
    int step_ = 0;
    std::int64_t step_start_ns_ = 0;
    bool running_ = false;
    Trace trace_;
};

/// Ends a training step on the running profiler, if there is one (a no-op otherwise):
/// the one line a training loop adds, at the end of each iteration. Only the loop of rank
/// @p rank equal to the profiler's ProfilerOptions::rank counts, so data-parallel ranks
/// that are threads of one process step the profiler once per step, not once per rank.
#if GRADLAB_PROFILER
void mark_step(int rank = 0);
#else
inline void mark_step(int = 0) {}
#endif

/// Writes @p trace as Chrome Trace Event Format JSON (chrome://tracing, Perfetto):
/// complete events ("X") with microsecond timestamps, flow events ("s"/"f") between
/// threads, counter events ("C") for the memory timeline, and thread/process names.
std::string chrome_trace_json(const Trace& trace);
/// Writes chrome_trace_json(@p trace) to @p path; throws gl::Error if it cannot.
void write_chrome_trace(const Trace& trace, const std::string& path);

}  // namespace gl::prof

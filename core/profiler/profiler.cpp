#include "profiler/profiler.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "base/error.hpp"

namespace gl::prof {

namespace detail {
std::atomic<bool> g_recording{false};
std::atomic<bool> g_record_shapes{false};
}  // namespace detail

namespace {

std::atomic<std::int64_t> g_epoch_ns{0};  // steady_clock time of the profiler's start
std::atomic<int> g_rank{0};
std::atomic<Profiler*> g_active{nullptr};  // the Profiler between start() and stop()

std::int64_t steady_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// One thread's recordings. Only its own thread appends (under its own, uncontended lock);
// the profiler locks it to clear or collect. Held by the registry, so it outlives the thread.
struct ThreadBuffer {
    std::mutex mutex;
    int tid = 0;
    std::string name;
    std::vector<Event> events;
    std::vector<FlowPoint> flows;
    std::vector<MemorySample> memory;
};

struct Registry {
    std::mutex mutex;
    std::vector<std::shared_ptr<ThreadBuffer>> buffers;
};

Registry& registry() {
    static Registry r;
    return r;
}

ThreadBuffer& my_buffer() {
    thread_local std::shared_ptr<ThreadBuffer> mine = [] {
        auto b = std::make_shared<ThreadBuffer>();
        Registry& r = registry();
        std::lock_guard lock(r.mutex);
        b->tid = static_cast<int>(r.buffers.size());
        b->name = "thread " + std::to_string(b->tid);
        r.buffers.push_back(b);
        return b;
    }();
    return *mine;
}

void clear_buffers() {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (auto& b : r.buffers) {
        std::lock_guard blk(b->mutex);
        b->events.clear();
        b->flows.clear();
        b->memory.clear();
    }
}

void collect_into(Trace& trace) {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (auto& b : r.buffers) {
        std::lock_guard blk(b->mutex);
        if (b->events.empty() && b->flows.empty() && b->memory.empty()) continue;
        trace.thread_names.emplace_back(b->tid, b->name);
        std::move(b->events.begin(), b->events.end(), std::back_inserter(trace.events));
        std::move(b->flows.begin(), b->flows.end(), std::back_inserter(trace.flows));
        std::move(b->memory.begin(), b->memory.end(), std::back_inserter(trace.memory));
        b->events.clear();
        b->flows.clear();
        b->memory.clear();
    }
    std::sort(trace.memory.begin(), trace.memory.end(),
              [](const MemorySample& a, const MemorySample& b) { return a.ts_ns < b.ts_ns; });
}

}  // namespace

const char* category_name(Category c) {
    static constexpr const char* names[kCategoryCount] = {
        "step",      "op_forward", "op_backward", "kernel",    "data_wait", "data_work",
        "optimizer", "communication", "allocator", "copy",     "sync",      "user"};
    return names[static_cast<std::size_t>(c)];
}

std::int64_t detail::now_ns() { return steady_ns() - g_epoch_ns.load(std::memory_order_relaxed); }

void detail::record(Event&& e) {
    ThreadBuffer& b = my_buffer();
    e.tid = b.tid;
    e.pid = g_rank.load(std::memory_order_relaxed);
    std::lock_guard lock(b.mutex);
    b.events.push_back(std::move(e));
}

#if GRADLAB_PROFILER
void Scope::begin(Category category, const char* name) {
    event_.category = category;
    event_.name = name;
    event_.start_ns = detail::now_ns();
}

void Scope::end() {
    event_.end_ns = detail::now_ns();
    detail::record(std::move(event_));
}
#endif

std::uint64_t flow_id(const void* owner, std::uint64_t index) {
    // splitmix64 of the pair: distinct owners and indices give distinct ids in practice.
    std::uint64_t x = reinterpret_cast<std::uintptr_t>(owner) * 0x9E3779B97F4A7C15ull + index;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return (x ^ (x >> 31)) >> 12;  // 52 bits: exact as a JSON number
}

namespace {
void add_flow(std::uint64_t id, bool start) {
    if (!recording()) return;
    ThreadBuffer& b = my_buffer();
    FlowPoint f{id, start, g_rank.load(std::memory_order_relaxed), b.tid, detail::now_ns()};
    std::lock_guard lock(b.mutex);
    b.flows.push_back(f);
}
}  // namespace

void flow_start(std::uint64_t id) { add_flow(id, true); }
void flow_finish(std::uint64_t id) { add_flow(id, false); }

void memory_sample(const std::string& category, std::int64_t bytes) {
    if (!recording()) return;
    ThreadBuffer& b = my_buffer();
    MemorySample m{category, g_rank.load(std::memory_order_relaxed), detail::now_ns(), bytes};
    std::lock_guard lock(b.mutex);
    b.memory.push_back(std::move(m));
}

void set_thread_name(std::string name) {
    ThreadBuffer& b = my_buffer();
    std::lock_guard lock(b.mutex);
    b.name = std::move(name);
}

Profiler::Profiler(ProfilerOptions options) : options_(options) {
    check(options_.schedule.wait >= 0 && options_.schedule.warmup >= 0 && options_.schedule.active >= 1,
          "profiler schedule: wait and warmup must be >= 0 and active >= 1");
}

Profiler::~Profiler() {
    if (running_) stop();
}

void Profiler::start() {
    check(kCompiledIn, "profiler: this build has the profiler compiled out (meson -Dprofiler=false); "
                       "reconfigure with -Dprofiler=true to profile");
    Profiler* none = nullptr;
    check(g_active.compare_exchange_strong(none, this),
          "profiler: another profiler is already running; stop it first");
    running_ = true;
    step_ = 0;
    trace_ = Trace{};
    g_rank.store(options_.rank);
    detail::g_record_shapes.store(options_.record_shapes);
    g_epoch_ns.store(steady_ns());
    clear_buffers();
    set_thread_name("main");
    step_start_ns_ = 0;
    apply_schedule();
}

void Profiler::apply_schedule() {
    const Schedule& s = options_.schedule;
    const int active_begin = s.wait + s.warmup;
    if (step_ == active_begin) clear_buffers();  // the warmup's recordings are thrown away
    const bool on = step_ >= s.wait && step_ < active_begin + s.active;
    detail::g_recording.store(on, std::memory_order_relaxed);
}

void Profiler::step() {
    if (!running_) return;
    const std::int64_t now = detail::now_ns();
    if (recording()) {
        Event e;
        e.category = Category::Step;
        e.name = "ProfilerStep#" + std::to_string(step_);
        e.start_ns = step_start_ns_;
        e.end_ns = now;
        detail::record(std::move(e));
    }
    const int active_begin = options_.schedule.wait + options_.schedule.warmup;
    if (step_ >= active_begin && step_ < active_begin + options_.schedule.active) ++trace_.steps;
    step_start_ns_ = now;
    ++step_;
    apply_schedule();
}

bool Profiler::done() const {
    return step_ >= options_.schedule.wait + options_.schedule.warmup + options_.schedule.active;
}

void Profiler::stop() {
    if (!running_) return;
    detail::g_recording.store(false);
    // Steps before the active window left only warmup recordings: drop them.
    if (step_ < options_.schedule.wait + options_.schedule.warmup) clear_buffers();
    collect_into(trace_);
    trace_.clock_origin_ns = g_epoch_ns.load();
    running_ = false;
    g_active.store(nullptr);
}

#if GRADLAB_PROFILER
void mark_step(int rank) {
    Profiler* p = g_active.load();
    if (p && p->options().rank == rank) p->step();
}
#endif

// ---- Chrome Trace Event Format ----

namespace {

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (const char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

// Microseconds with the nanoseconds kept: "12.345".
std::string micros(std::int64_t ns) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000),
                  static_cast<long long>(ns % 1000));
    return buf;
}

std::string where(int pid, int tid) {
    return "\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid);
}

std::string complete_event(const Event& e) {
    std::string s = "{\"name\":" + json_string(e.name) + ",\"cat\":\"" + category_name(e.category) +
                    "\",\"ph\":\"X\"," + where(e.pid, e.tid) + ",\"ts\":" + micros(e.start_ns) +
                    ",\"dur\":" + micros(e.duration_ns()) + ",\"args\":{";
    std::string args;
    if (e.flops > 0) args += "\"flops\":" + std::to_string(e.flops);
    if (e.bytes > 0) args += std::string(args.empty() ? "" : ",") + "\"bytes\":" + std::to_string(e.bytes);
    if (!e.shapes.empty()) args += std::string(args.empty() ? "" : ",") + "\"shapes\":" + json_string(e.shapes);
    return s + args + "}}";
}

std::string flow_event(const FlowPoint& f) {
    // "bp":"e" binds the arrow's head to the enclosing slice, which is where it arrives.
    return std::string("{\"name\":\"batch\",\"cat\":\"flow\",\"ph\":\"") + (f.start ? "s" : "f") +
           "\",\"id\":" + std::to_string(f.id) + "," + where(f.pid, f.tid) + ",\"ts\":" + micros(f.ts_ns) +
           (f.start ? "" : ",\"bp\":\"e\"") + "}";
}

std::string counter_event(const MemorySample& m) {
    return "{\"name\":" + json_string("memory: " + m.category) + ",\"ph\":\"C\",\"pid\":" +
           std::to_string(m.pid) + ",\"ts\":" + micros(m.ts_ns) + ",\"args\":{\"bytes\":" +
           std::to_string(m.bytes) + "}}";
}

// The flows with both ends recorded: a batch made ahead but never taken (the loop left
// early, or the recording stopped) has a start and no finish, and viewers reject those.
std::vector<FlowPoint> paired_flows(const std::vector<FlowPoint>& flows) {
    std::map<std::uint64_t, std::pair<int, int>> ends;  // id -> (starts, finishes)
    for (const FlowPoint& f : flows) (f.start ? ends[f.id].first : ends[f.id].second) += 1;
    std::vector<FlowPoint> paired;
    for (const FlowPoint& f : flows)
        if (ends[f.id] == std::pair(1, 1)) paired.push_back(f);
    return paired;
}

std::vector<Event> sorted_events(const Trace& trace) {
    std::vector<Event> events = trace.events;
    // Per thread by start; an enclosing scope (longer) before the scopes it contains.
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
        if (a.pid != b.pid) return a.pid < b.pid;
        if (a.tid != b.tid) return a.tid < b.tid;
        if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
        return a.end_ns > b.end_ns;
    });
    return events;
}

}  // namespace

std::string chrome_trace_json(const Trace& trace) {
    std::vector<std::string> lines;
    std::vector<int> pids;
    for (const Event& e : trace.events) pids.push_back(e.pid);
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    for (const int pid : pids) {
        lines.push_back("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
                        ",\"args\":{\"name\":\"rank " + std::to_string(pid) + "\"}}");
        for (const auto& [tid, name] : trace.thread_names)
            lines.push_back("{\"name\":\"thread_name\",\"ph\":\"M\"," + where(pid, tid) +
                            ",\"args\":{\"name\":" + json_string(name) + "}}");
    }
    for (const Event& e : sorted_events(trace)) lines.push_back(complete_event(e));
    for (const FlowPoint& f : paired_flows(trace.flows)) lines.push_back(flow_event(f));
    for (const MemorySample& m : trace.memory) lines.push_back(counter_event(m));
    std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"clock_origin_ns\":" +
                      std::to_string(trace.clock_origin_ns) + "},\"traceEvents\":[\n";
    for (std::size_t i = 0; i < lines.size(); ++i) out += lines[i] + (i + 1 < lines.size() ? ",\n" : "\n");
    return out + "]}\n";
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
    std::ofstream out(path);
    check(static_cast<bool>(out), "profiler: cannot write the trace to " + path +
                                      "; check that its folder exists and is writable");
    out << chrome_trace_json(trace);
    check(static_cast<bool>(out), "profiler: writing " + path + " failed (disk full?)");
}

}  // namespace gl::prof

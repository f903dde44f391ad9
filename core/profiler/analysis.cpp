#include "profiler/analysis.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "base/error.hpp"

namespace gl::prof {

namespace {

// Indices of @p events ordered per thread by start, an enclosing event before the events
// it contains (same start: the longer first).
std::vector<std::size_t> thread_order(const std::vector<Event>& events) {
    std::vector<std::size_t> order(events.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        const Event& x = events[a];
        const Event& y = events[b];
        return std::tuple(x.pid, x.tid, x.start_ns, -x.end_ns) < std::tuple(y.pid, y.tid, y.start_ns, -y.end_ns);
    });
    return order;
}

bool same_thread(const Event& a, const Event& b) { return a.pid == b.pid && a.tid == b.tid; }

}  // namespace

std::vector<std::int64_t> self_times(const std::vector<Event>& events) {
    // LAB 10 BEGIN: self time of nested scopes, per thread
    std::vector<std::int64_t> self(events.size());
    for (std::size_t i = 0; i < events.size(); ++i) self[i] = events[i].duration_ns();
    // Walk each thread's events in start order with a stack of the scopes still open:
    // the top of the stack, once the scopes that ended before this one began are popped,
    // is its direct parent, whose self time loses this event's whole duration.
    std::vector<std::size_t> open;
    for (const std::size_t i : thread_order(events)) {
        const Event& e = events[i];
        while (!open.empty() &&
               (!same_thread(events[open.back()], e) || events[open.back()].end_ns <= e.start_ns))
            open.pop_back();
        if (!open.empty()) self[open.back()] -= e.duration_ns();
        open.push_back(i);
    }
    return self;
    // LAB 10 END
}

std::vector<OpRow> op_table(const Trace& trace, bool by_shapes) {
    const std::vector<std::int64_t> self = self_times(trace.events);
    std::int64_t step_ns = 0;
    for (const Event& e : trace.events)
        if (e.category == Category::Step) step_ns += e.duration_ns();
    std::vector<OpRow> rows;
    // LAB 10 BEGIN: per-op aggregation
    // One row per (name, category[, shapes]); a map from that key to the row's index keeps
    // the rows in first-seen order until the final sort.
    std::map<std::tuple<std::string, Category, std::string>, std::size_t> row_of;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const Event& e = trace.events[i];
        if (e.category == Category::Step) continue;
        const std::string shapes = by_shapes ? e.shapes : std::string();
        const auto key = std::tuple(e.name, e.category, shapes);
        auto [it, added] = row_of.try_emplace(key, rows.size());
        if (added) rows.push_back(OpRow{e.name, e.category, shapes});
        OpRow& row = rows[it->second];
        row.calls += 1;
        row.total_ns += e.duration_ns();
        row.self_ns += self[i];
        row.flops += e.flops;
        row.bytes += e.bytes;
    }
    for (OpRow& row : rows)
        row.percent_of_steps = step_ns > 0 ? 100.0 * static_cast<double>(row.self_ns) / static_cast<double>(step_ns) : 0.0;
    // Largest self time first; ties by name, then category, so the order never depends on
    // the order of the events.
    std::sort(rows.begin(), rows.end(), [](const OpRow& a, const OpRow& b) {
        const std::string_view ca = category_name(a.category), cb = category_name(b.category);
        return std::tuple(-a.self_ns, std::string_view(a.name), ca, std::string_view(a.shapes)) <
               std::tuple(-b.self_ns, std::string_view(b.name), cb, std::string_view(b.shapes));
    });
    // LAB 10 END
    return rows;
}

std::string format_op_table(const std::vector<OpRow>& table, std::size_t rows) {
    std::string out = fmt::format("{:<28} {:<14} {:>7} {:>12} {:>12} {:>8} {:>9} {:>8}  {}\n", "Name", "Category",
                                  "Calls", "Self (us)", "Total (us)", "% step", "GFLOP/s", "GB/s", "Input shapes");
    for (std::size_t i = 0; i < table.size() && i < rows; ++i) {
        const OpRow& r = table[i];
        out += fmt::format("{:<28} {:<14} {:>7} {:>12.1f} {:>12.1f} {:>8.2f} {:>9.2f} {:>8.2f}  {}\n",
                           r.name.substr(0, 28), category_name(r.category), r.calls, r.self_ns / 1e3,
                           r.total_ns / 1e3, r.percent_of_steps, r.gflops_per_s(), r.gbytes_per_s(), r.shapes);
    }
    return out;
}

namespace {

// The threads that ran steps, and each one's step intervals.
std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> step_windows(const Trace& trace) {
    std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> windows;
    for (const Event& e : trace.events)
        if (e.category == Category::Step) windows[{e.pid, e.tid}].emplace_back(e.start_ns, e.end_ns);
    return windows;
}

bool inside(const std::vector<std::pair<std::int64_t, std::int64_t>>& windows, std::int64_t t) {
    return std::any_of(windows.begin(), windows.end(), [t](const auto& w) { return w.first <= t && t < w.second; });
}

std::int64_t peak_total(const std::vector<MemorySample>& memory) {
    std::map<std::pair<int, std::string>, std::int64_t> now;  // (rank, category) -> bytes
    std::int64_t total = 0;
    std::int64_t peak = 0;
    for (const MemorySample& m : memory) {  // sorted by time when collected
        std::int64_t& held = now[{m.pid, m.category}];
        total += m.bytes - held;
        held = m.bytes;
        peak = std::max(peak, total);
    }
    return peak;
}

}  // namespace

StepSummary summarize(const Trace& trace) {
    StepSummary s;
    const std::vector<std::int64_t> self = self_times(trace.events);
    const auto windows = step_windows(trace);
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const Event& e = trace.events[i];
        if (e.category == Category::Communication) s.communication_bytes += e.bytes;
        if (e.category == Category::Sync) ++s.syncs;
        if (e.category == Category::Step) {
            ++s.steps;
            s.step_ns += e.duration_ns();
            continue;
        }
        const auto w = windows.find({e.pid, e.tid});
        if (w == windows.end() || !inside(w->second, e.start_ns)) continue;
        s.self_ns[static_cast<std::size_t>(e.category)] += self[i];
        if (e.category == Category::OpForward && e.flops > 0) {
            ++s.op_calls;
            s.op_flops += e.flops;
        }
    }
    s.peak_memory = peak_total(trace.memory);
    return s;
}

const char* problem_name(Problem p) {
    switch (p) {
        case Problem::OutOfMemory: return "out_of_memory";
        case Problem::DataLoading: return "data_loading";
        case Problem::Communication: return "communication";
        case Problem::HostSync: return "host_sync";
        case Problem::LowUtilization: return "low_utilization";
        case Problem::ComputeBound: return "compute_bound";
    }
    return "?";
}

namespace {

Diagnosis finding(Problem p, std::string remedy, std::string why) {
    return Diagnosis{p, std::move(remedy), std::move(why)};
}

std::string percent(double fraction) { return fmt::format("{:.0f}%", 100.0 * fraction); }

}  // namespace

Diagnosis diagnose(const StepSummary& s, const DiagnosisRules& rules) {
    const double steps = std::max(1, s.steps);
    // LAB 10 BEGIN: the diagnosis rules (the lecture's symptom -> remedy table)
    if (rules.memory_cap_bytes > 0 && s.peak_memory > rules.memory_cap_bytes)
        return finding(Problem::OutOfMemory, "a smaller batch, activation checkpointing, or FP16 (mixed precision)",
                       fmt::format("Memory: the peak of {:.1f} MiB exceeds the cap of {:.1f} MiB, so this "
                                   "configuration does not fit. Activations grow with the batch; a smaller "
                                   "batch, recomputing activations (checkpointing) or 16-bit tensors shrink them.",
                                   s.peak_memory / 1048576.0, rules.memory_cap_bytes / 1048576.0));
    // Loading on the training thread is time it does not train: waiting for a worker's
    // batch (data_wait) or making the batch itself (data_work, without workers).
    const double loading = s.fraction(Category::DataWait) + s.fraction(Category::DataWork);
    if (loading > rules.data_wait_fraction)
        return finding(Problem::DataLoading, "more data-loader workers (num_workers), lighter augmentation",
                       fmt::format("Data loading: the training thread spends {} of the step time getting "
                                   "batches (data_wait {}, data_work {}), so the model idles while batches are "
                                   "decoded and augmented. Loader workers make batches in parallel and ahead "
                                   "of the loop.",
                                   percent(loading), percent(s.fraction(Category::DataWait)),
                                   percent(s.fraction(Category::DataWork))));
    const double bytes_per_flop = s.op_flops > 0 ? s.communication_bytes / s.op_flops : 0.0;
    if (s.fraction(Category::Communication) > rules.communication_fraction ||
        bytes_per_flop > rules.communication_bytes_per_flop)
        return finding(Problem::Communication, "DistributedDataParallel instead of DataParallel, a larger batch",
                       fmt::format("Communication: collectives take {} of the step time and move {:.1f} MB per "
                                   "step, {:.2f} bytes per forward flop. DDP all-reduces gradients instead of "
                                   "sending whole models through one master, and a larger batch does more work "
                                   "per byte sent.",
                                   percent(s.fraction(Category::Communication)), s.communication_bytes / steps / 1e6,
                                   bytes_per_flop));
    if (static_cast<double>(s.syncs) / steps >= rules.syncs_per_step)
        return finding(Problem::HostSync, "fewer host-device synchronisations: read the loss once per epoch",
                       fmt::format("Synchronisation: the host waits for the device {:.1f} times per step "
                                   "(reading the loss with .item()), which drains the device's queue every "
                                   "step. Keep the loss on the device and read it once, after the epoch.",
                                   static_cast<double>(s.syncs) / steps));
    const double flops_per_op = s.op_calls > 0 ? s.op_flops / static_cast<double>(s.op_calls) : 0.0;
    if (s.op_calls > 0 && flops_per_op < rules.min_flops_per_op)
        return finding(Problem::LowUtilization, "a larger batch (more work per op call)",
                       fmt::format("Low utilization: the ops average {:.0f} floating-point operations per call, "
                                   "too little to amortize the per-op overhead (dispatch, autograd "
                                   "bookkeeping, launches). A larger batch gives each call more work.",
                                   flops_per_op));
    return finding(Problem::ComputeBound, "faster kernels or lower precision (AMP)",
                   fmt::format("Compute: the ops' own time dominates (forward {}, backward {} of the step) and "
                               "no input, memory, communication or synchronisation problem shows. Faster "
                               "kernels or mixed precision are what is left.",
                               percent(s.fraction(Category::OpForward)), percent(s.fraction(Category::OpBackward))));
    // LAB 10 END
}

}  // namespace gl::prof

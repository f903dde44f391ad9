/// @file
/// @brief Reading a profile: self time of nested scopes, the per-op table, the time by
/// category, and the automatic diagnosis (the lecture's symptom -> remedy table).
///
/// Owns: everything computed from a recorded Trace (profiler.hpp); records nothing.
/// The diagnosis rules are the lecture's table: low utilization -> larger batch; slow
/// loading -> more workers; out of memory -> smaller batch, checkpointing, FP16;
/// communication -> DDP, larger batch; CPU-device synchronisation -> fewer host syncs.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "profiler/profiler.hpp"

namespace gl::prof {

/// Self time of each event: its duration minus the durations of the events directly
/// nested in it on the same thread (pid, tid). Scopes on different threads never nest,
/// even when they overlap in time. Index i of the result belongs to events[i].
std::vector<std::int64_t> self_times(const std::vector<Event>& events);

/// One row of the per-op table: all calls of one name (and shapes, with record_shapes).
struct OpRow {
    std::string name;              ///< the op or scope name
    Category category = Category::User;  ///< its category
    std::string shapes;            ///< input shapes (empty unless grouped by shapes)
    std::int64_t calls = 0;        ///< how many times it ran
    std::int64_t total_ns = 0;     ///< summed durations (children included)
    std::int64_t self_ns = 0;      ///< summed self times (children excluded)
    double flops = 0;              ///< summed flops
    double bytes = 0;              ///< summed bytes
    /// Self time as % of the summed step time. Rows of several threads (loader workers,
    /// the ranks of a threads group) may add up to more than 100%.
    double percent_of_steps = 0;
    /// flops per second of its own total time, in GFLOP/s (0 without flops).
    double gflops_per_s() const { return total_ns > 0 ? flops / static_cast<double>(total_ns) : 0.0; }
    /// bytes per second of its own total time, in GB/s (0 without bytes).
    double gbytes_per_s() const { return total_ns > 0 ? bytes / static_cast<double>(total_ns) : 0.0; }
};

/// Aggregates @p trace's events (Step scopes excluded) into rows by name and category,
/// and by shapes too when @p by_shapes; sorted by self time, largest first (ties by name,
/// then category name, then shapes).
std::vector<OpRow> op_table(const Trace& trace, bool by_shapes = false);
/// The table as text (torch.profiler's key_averages().table()): at most @p rows rows.
std::string format_op_table(const std::vector<OpRow>& table, std::size_t rows = 25);

/// What the diagnosis reads from a trace: per-step figures of the stepping threads.
struct StepSummary {
    int steps = 0;                   ///< Step scopes recorded
    std::int64_t step_ns = 0;        ///< their summed duration
    /// Self time per category inside the steps, on the threads that ran the steps.
    std::array<std::int64_t, kCategoryCount> self_ns{};
    std::int64_t op_calls = 0;       ///< op forward + backward events with flops
    double op_flops = 0;             ///< their summed flops
    std::int64_t syncs = 0;          ///< Sync events
    double communication_bytes = 0;  ///< bytes of Communication events (all threads)
    std::int64_t peak_memory = 0;    ///< the largest total of the memory timeline
    /// Fraction of the step time that @p c took (0 when no steps).
    double fraction(Category c) const {
        return step_ns > 0 ? static_cast<double>(self_ns[static_cast<std::size_t>(c)]) / static_cast<double>(step_ns) : 0.0;
    }
};
/// Summarizes @p trace for the diagnosis.
StepSummary summarize(const Trace& trace);

/// The problems the diagnosis can name (the rows of the lecture's table).
enum class Problem {
    OutOfMemory,     ///< the peak exceeds the memory cap
    DataLoading,     ///< the loop waits for batches
    Communication,   ///< collectives take the step
    HostSync,        ///< the host waits for the device every step
    LowUtilization,  ///< ops too small to keep the hardware busy (tiny batches)
    ComputeBound,    ///< none of the above: the ops' own compute dominates
};
/// "out_of_memory", "data_loading", ... (a stable name for tests and reports).
const char* problem_name(Problem p);

/// Thresholds of the rules (the defaults are the ones the lab and PROF-1 use).
struct DiagnosisRules {
    std::int64_t memory_cap_bytes = 0;     ///< 0: no cap
    /// data_wait + data_work on the training thread above this: loading is the problem
    double data_wait_fraction = 0.30;
    double communication_fraction = 0.25;  ///< communication above this: it is the problem
    /// ... or communication bytes per forward flop of the training thread above this: at
    /// about 10 GB/s of link and 20 GFLOP/s of compute, sending then takes longer than
    /// computing (a count, so the rule holds on a busy machine too).
    double communication_bytes_per_flop = 0.5;
    double syncs_per_step = 1.0;           ///< this many host syncs per step or more: sync problem
    /// Mean flops per op call below this: the ops are too small to use the machine (SimpleNet
    /// is below it up to batch 8, a matmul of 8x784x128 being 1.6 MFLOP among small ops).
    double min_flops_per_op = 2e5;
};

/// The diagnosis: what dominates, the lecture's remedy, and a paragraph that says why.
struct Diagnosis {
    Problem problem = Problem::ComputeBound;  ///< the planted problem it names
    std::string remedy;                       ///< the lecture's fix
    std::string paragraph;                    ///< one paragraph with the evidence
};
/// Applies @p rules to @p summary in the table's order (memory, loading, communication,
/// synchronisation, utilization), naming the first problem whose rule fires.
Diagnosis diagnose(const StepSummary& summary, const DiagnosisRules& rules = {});

}  // namespace gl::prof

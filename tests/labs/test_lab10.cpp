// Lab 10 graded tests: self time of nested scopes, the per-op table and the diagnosis
// rules, on synthetic scopes with known answers, on recorded traces of the five bad
// pipelines (tests/labs/fixtures/lab10, written by `gradlab profile --pipeline NAME`) and on
// a live run. Points per test are in labs/10-profiling/rubric.json. Nothing here times
// anything: the recorded traces' times are fixed numbers, and the live run's diagnoses
// rest on counts (host syncs per step, peak bytes against a cap).
//
// The student's code is called only inside graded::student (graded.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "../../bench/claims/pipelines_l10.hpp"
#include "graded.hpp"
#include "lab10_support.hpp"
#include "profiler/analysis.hpp"
#include "testkit/profiler_events.hpp"

namespace gl {
namespace {

using prof::Category;
using prof::Event;
using Row = std::tuple<std::string, std::string, std::int64_t, std::int64_t, std::int64_t, double>;

using test::ev;

// The table as plain values: name, category, calls, total, self, % of steps.
std::vector<Row> rows_of(const std::vector<prof::OpRow>& table) {
    std::vector<Row> rows;
    for (const auto& r : table)
        rows.emplace_back(r.name, prof::category_name(r.category), r.calls, r.total_ns, r.self_ns, r.percent_of_steps);
    return rows;
}

// The length of the union of the events' intervals on each thread: what the self times
// of properly nested events on that thread must add up to, however they nest.
std::map<std::pair<int, int>, std::int64_t> covered_per_thread(const std::vector<Event>& events) {
    std::map<std::pair<int, int>, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;
    for (const Event& e : events) spans[{e.pid, e.tid}].emplace_back(e.start_ns, e.end_ns);
    std::map<std::pair<int, int>, std::int64_t> covered;
    for (auto& [thread, list] : spans) {
        std::sort(list.begin(), list.end());
        std::int64_t reach = std::numeric_limits<std::int64_t>::min(), total = 0;
        for (const auto& [s, e] : list) {
            if (e <= reach) continue;
            total += e - std::max(s, reach);
            reach = e;
        }
        covered[thread] = total;
    }
    return covered;
}

// ---- Task 1: self time ---------------------------------------------------------------------

TEST(Lab10, SelfTimeOfNestedScopesAcrossThreads) {
    const std::vector<Event> events = {
        ev("step", Category::Step, 0, 0, 1000),
        ev("linear", Category::OpForward, 0, 100, 500),
        ev("matmul", Category::Kernel, 0, 150, 350),       // inside linear: counts against it only
        ev("backward", Category::OpBackward, 0, 500, 900),  // starts as linear ends: a sibling
        ev("MatmulBackward", Category::OpBackward, 0, 500, 700),  // same start as its parent
        ev("make_batch", Category::DataWork, 1, 0, 800),    // a loader worker, overlapping in time
        ev("decode", Category::DataWork, 1, 200, 300),
        ev("step", Category::Step, 0, 0, 50, /*pid=*/1),    // another rank: never a child of rank 0's step
        ev("allreduce", Category::Communication, 0, 10, 40, /*pid=*/1),
    };
    const auto self = graded::student<std::vector<std::int64_t>>("self", [&] { return prof::self_times(events); });
    EXPECT_EQ(self, (std::vector<std::int64_t>{200, 200, 200, 200, 200, 700, 100, 20, 30}))
        << "self time = duration minus the durations of the scopes directly inside it, on the same pid and tid";
}

TEST(Lab10, SelfTimeOfARecordedTrace) {
    const prof::Trace t = lab10::read_trace(lab10::fixture("slow-loading"));
    const auto self = graded::student<std::vector<std::int64_t>>("self", [&] { return prof::self_times(t.events); });
    ASSERT_EQ(self.size(), t.events.size());
    std::map<std::pair<int, int>, std::int64_t> sum;
    for (std::size_t i = 0; i < self.size(); ++i) {
        EXPECT_GE(self[i], 0) << t.events[i].name << ": a self time below 0 subtracted a scope that is not a child";
        EXPECT_LE(self[i], t.events[i].duration_ns()) << t.events[i].name;
        sum[{t.events[i].pid, t.events[i].tid}] += self[i];
    }
    EXPECT_EQ(sum, covered_per_thread(t.events))
        << "on each thread the self times add up to the time covered by its scopes, each instant counted once";
}

// ---- Task 2: the per-op table -------------------------------------------------------------

TEST(Lab10, OpTableOfASyntheticProfile) {
    prof::Trace t;
    t.events = {ev("ProfilerStep#0", Category::Step, 0, 0, 2000),  ev("linear", Category::OpForward, 0, 0, 1200),
                ev("matmul", Category::OpForward, 0, 100, 1000),   ev("matmul", Category::OpForward, 0, 1200, 1600),
                ev("relu", Category::OpForward, 0, 1600, 1700),    ev("matmul", Category::OpBackward, 0, 1700, 1900),
                ev("ProfilerStep#1", Category::Step, 0, 2000, 4000), ev("relu", Category::OpForward, 1, 0, 100)};
    t.events[2].flops = 1800;
    t.events[3].flops = 200;
    const auto rows = graded::student<std::vector<Row>>("table", [&] { return rows_of(prof::op_table(t)); });
    const std::vector<Row> expected = {
        {"matmul", "op_forward", 2, 1300, 1300, 32.5},  // self 900 + 400 of the 4000 ns of steps
        {"linear", "op_forward", 1, 1200, 300, 7.5},
        {"matmul", "op_backward", 1, 200, 200, 5.0},    // same name, another category: its own row
        {"relu", "op_forward", 2, 200, 200, 5.0},       // on two threads, one row; ties go by name
    };
    EXPECT_EQ(rows, expected) << "one row per (name, category), Step scopes left out, sorted by self time "
                                 "(ties by name, then category); "
                                 "% of steps = self / summed step time";
}

TEST(Lab10, OpTableOfARecordedTrace) {
    const prof::Trace t = lab10::read_trace(lab10::fixture("host-sync"));
    const auto rows = graded::student<std::vector<Row>>("table", [&] { return rows_of(prof::op_table(t)); });
    std::map<std::pair<std::string, std::string>, std::pair<std::int64_t, std::int64_t>> expected;  // calls, total
    std::int64_t steps = 0;
    for (const Event& e : t.events) {
        if (e.category == Category::Step) {
            steps += e.duration_ns();
            continue;
        }
        auto& [calls, total] = expected[{e.name, prof::category_name(e.category)}];
        ++calls;
        total += e.duration_ns();
    }
    ASSERT_EQ(rows.size(), expected.size()) << "one row per (name, category) of the trace, Step scopes left out";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto& [name, cat, calls, total, self, percent] = rows[i];
        const auto it = expected.find({name, cat});
        ASSERT_NE(it, expected.end()) << name << " " << cat;
        EXPECT_EQ(calls, it->second.first) << name;
        EXPECT_EQ(total, it->second.second) << name;
        EXPECT_LE(self, total) << name;
        EXPECT_NEAR(percent, 100.0 * static_cast<double>(self) / static_cast<double>(steps), 1e-9) << name;
        if (i > 0) {
            const auto& [pname, pcat, pcalls, ptotal, pself, ppercent] = rows[i - 1];
            EXPECT_TRUE(pself > self || (pself == self && std::tie(pname, pcat) < std::tie(name, cat)))
                << "rows sorted by self time, largest first, ties by name then category";
        }
    }
}

// ---- Task 3: the diagnosis ----------------------------------------------------------------

TEST(Lab10, DiagnosisOfTheFiveRecordedPipelines) {
    for (const claims::BadPipeline p : claims::bad_pipelines()) {
        const std::string name = claims::pipeline_name(p);
        const prof::Trace t = lab10::read_trace(lab10::fixture(name));
        prof::DiagnosisRules rules;
        if (p == claims::BadPipeline::MemoryCap) rules.memory_cap_bytes = 4 << 20;
        const std::string diagnosed = graded::student<std::string>("diagnosis " + name, [&] {
            return std::string(prof::problem_name(prof::diagnose(prof::summarize(t), rules).problem));
        });
        EXPECT_EQ(diagnosed, prof::problem_name(claims::planted_problem(p)))
            << "the recorded profile of the " << name << " pipeline";
    }
}

TEST(Lab10, LiveRunsAreDiagnosed) {
    // Counted evidence only: one host sync per step, and a peak above the 4 MiB cap.
    for (const claims::BadPipeline p : {claims::BadPipeline::HostSync, claims::BadPipeline::MemoryCap}) {
        const std::string name = claims::pipeline_name(p);
        const std::string diagnosed = graded::student<std::string>("live " + name, [&] {
            return std::string(prof::problem_name(claims::run_pipeline(p, false).diagnosis.problem));
        });
        EXPECT_EQ(diagnosed, prof::problem_name(claims::planted_problem(p))) << "a live run of " << name;
    }
}

}  // namespace
}  // namespace gl

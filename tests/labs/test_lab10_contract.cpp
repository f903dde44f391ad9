// Lab 10 contract tests: self times of random nested traces (several threads and ranks,
// overlapping in time, shuffled, scopes that start with their parent or right where a
// sibling ends) against the self times known from how each trace was built; and the
// diagnosis rules' order and thresholds. The student's code is called only through
// graded::student (graded.hpp).
#include <gtest/gtest.h>

#include "graded.hpp"
#include "lab10_support.hpp"
#include "profiler/analysis.hpp"

namespace gl {
namespace {

using prof::Category;

TEST(Lab10, ContractSelfTimeOnRandomTraces) {
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        const lab10::KnownTrace k = lab10::random_trace(seed);
        const auto self = graded::student<std::vector<std::int64_t>>("self", [&] { return prof::self_times(k.events); });
        EXPECT_EQ(self, k.self) << "seed " << seed << ": " << k.events.size() << " scopes on 6 threads of 2 ranks";
    }
}

prof::StepSummary base() {
    prof::StepSummary s;
    s.steps = 4;
    s.step_ns = 1'000'000;
    s.op_calls = 10;
    s.op_flops = 1e9;
    return s;
}

void set(prof::StepSummary& s, Category c, double fraction) {
    s.self_ns[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(fraction * static_cast<double>(s.step_ns));
}

TEST(Lab10, ContractDiagnosisFollowsTheTablesOrderAndThresholds) {
    prof::DiagnosisRules rules;
    rules.memory_cap_bytes = 1000;
    std::vector<std::pair<std::string, prof::StepSummary>> cases;
    prof::StepSummary all = base();  // every problem at once: memory is the table's first row
    all.peak_memory = 2000;
    set(all, Category::DataWait, 0.5);
    set(all, Category::Communication, 0.5);
    all.syncs = 8;
    all.op_flops = 10;
    cases.emplace_back("everything", all);
    prof::StepSummary no_memory = all;
    no_memory.peak_memory = 1000;  // at the cap: fits
    cases.emplace_back("everything but memory", no_memory);
    prof::StepSummary comm_sync = no_memory;
    set(comm_sync, Category::DataWait, 0.3);  // at the threshold: not above it
    cases.emplace_back("communication, syncs, tiny ops", comm_sync);
    prof::StepSummary sync_tiny = comm_sync;
    set(sync_tiny, Category::Communication, 0.25);
    cases.emplace_back("syncs and tiny ops", sync_tiny);
    prof::StepSummary tiny = sync_tiny;
    tiny.syncs = 3;  // fewer than one per step
    cases.emplace_back("tiny ops", tiny);
    prof::StepSummary fine = tiny;
    fine.op_flops = 2e5 * 10;  // exactly the threshold per op: not below it
    cases.emplace_back("nothing", fine);
    const auto names = graded::student<std::vector<std::string>>("order", [&] {
        std::vector<std::string> out;
        for (const auto& [what, s] : cases) out.emplace_back(prof::problem_name(prof::diagnose(s, rules).problem));
        return out;
    });
    EXPECT_EQ(names, (std::vector<std::string>{"out_of_memory", "data_loading", "communication", "host_sync",
                                               "low_utilization", "compute_bound"}))
        << "the first rule that fires, in the order memory, loading, communication, syncs, utilization; "
           "a fraction fires above its threshold, syncs at one per step or more, flops per op below the threshold";
}

}  // namespace
}  // namespace gl

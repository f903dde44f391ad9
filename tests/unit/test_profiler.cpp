// The profiler (core/profiler): the trace checked against the Trace Event Format's rules
// (parsed back as JSON: complete events properly nested per thread, timestamps
// monotonic per thread, flows paired and bound inside slices), the schedule, the
// self-time and table arithmetic on synthetic scopes, and the diagnosis rules.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "data/dataloader.hpp"
#include "memory/tracking_allocator.hpp"
#include "nn/module.hpp"
#include "ops/conv.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "profiler/analysis.hpp"
#include "profiler/profiler.hpp"
#include "testkit/profiler_events.hpp"
#include "training/trainer.hpp"

namespace gl::test {
namespace {

using json = nlohmann::json;
using prof::Category;
using prof::Event;

// ---- the format, checked the way a viewer reads it ----

struct Slice {
    double ts, end;
};

// What is wrong with @p trace as a Trace Event Format file (empty: nothing); @p complete
// gets the number of complete events.
std::vector<std::string> format_problems(const json& trace, std::size_t* complete = nullptr) {
    std::vector<std::string> problems;
    if (!trace.contains("traceEvents")) return {"no traceEvents array"};
    std::map<std::pair<int, int>, std::vector<Slice>> slices;  // (pid, tid) -> X events in file order
    std::map<std::uint64_t, std::vector<json>> flows;
    std::size_t count = 0;
    for (const json& e : trace["traceEvents"]) {
        const std::string ph = e.at("ph");
        if (ph == "X") {
            ++count;
            const double ts = e.at("ts");
            const double dur = e.at("dur");
            if (dur < 0) problems.push_back("negative duration");
            slices[{e.at("pid"), e.at("tid")}].push_back({ts, ts + dur});
        } else if (ph == "s" || ph == "f") {
            flows[e.at("id").get<std::uint64_t>()].push_back(e);
        } else if (ph != "M" && ph != "C") {
            problems.push_back("unexpected phase " + ph);
        }
    }
    for (const auto& [thread, list] : slices) {
        std::vector<Slice> open;
        double last = -1;
        for (const Slice& s : list) {
            if (s.ts < last) problems.push_back("timestamps go back on a thread");
            last = s.ts;
            while (!open.empty() && open.back().end <= s.ts) open.pop_back();
            if (!open.empty() && s.end > open.back().end + 1e-9) problems.push_back("slices overlap without nesting");
            open.push_back(s);
        }
    }
    const auto inside_a_slice = [&](const json& f) {
        const auto& list = slices[{f.at("pid"), f.at("tid")}];
        const double ts = f.at("ts");
        return std::any_of(list.begin(), list.end(), [ts](const Slice& s) { return s.ts <= ts && ts <= s.end; });
    };
    for (const auto& [id, ends] : flows) {
        if (ends.size() != 2 || ends[0].at("ph") == ends[1].at("ph")) {
            problems.push_back("flow " + std::to_string(id) + " is not one start and one finish");
            continue;
        }
        const json& s = ends[0].at("ph") == "s" ? ends[0] : ends[1];
        const json& f = ends[0].at("ph") == "s" ? ends[1] : ends[0];
        if (s.at("ts").get<double>() > f.at("ts").get<double>()) problems.push_back("flow finishes before it starts");
        if (!inside_a_slice(s) || !inside_a_slice(f)) problems.push_back("flow not bound to a slice");
    }
    if (complete) *complete = count;
    return problems;
}

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
}

TEST(ProfilerFormat, CheckerRejectsOverlapThatIsNotNestingAndUnpairedFlows) {
    prof::Trace t;
    t.events = {ev("a", Category::User, 0, 0, 100), ev("b", Category::User, 0, 50, 150)};
    json j = json::parse(prof::chrome_trace_json(t));
    j["traceEvents"].push_back({{"ph", "s"}, {"id", 7}, {"pid", 0}, {"tid", 0}, {"ts", 0.01}, {"name", "x"}});
    const auto problems = format_problems(j);
    EXPECT_EQ(problems, (std::vector<std::string>{"slices overlap without nesting", "flow 7 is not one start and one finish"}));
}

TEST(ProfilerFormat, ExportDropsFlowsWithOneEnd) {
    prof::Trace t;
    t.events = {ev("make", Category::DataWork, 1, 0, 100), ev("wait", Category::DataWait, 0, 50, 150)};
    t.flows = {{7, true, 0, 1, 10}, {7, false, 0, 0, 120}, {8, true, 0, 1, 20}};  // 8: made, never taken
    std::size_t flows = 0;
    const json j = json::parse(prof::chrome_trace_json(t));
    for (const json& e : j["traceEvents"])
        if (e["ph"] == "s" || e["ph"] == "f") {
            ++flows;
            EXPECT_EQ(e["id"], 7);
        }
    EXPECT_EQ(flows, 2u);
}

TEST(ProfilerFormat, EscapesNamesAndKeepsNanoseconds) {
    prof::Trace t;
    t.events = {ev("say \"hi\"\n", Category::User, 0, 1234567, 1235568)};
    const json j = json::parse(prof::chrome_trace_json(t));
    const json& x = j["traceEvents"].back();
    EXPECT_EQ(x["name"], "say \"hi\"\n");
    EXPECT_DOUBLE_EQ(x["ts"].get<double>(), 1234.567);
    EXPECT_DOUBLE_EQ(x["dur"].get<double>(), 1.001);
}

// ---- live recordings ----

prof::Trace profile_steps(int steps, const prof::ProfilerOptions& options, bool workers) {
    Rng rng(1);
    auto net = nn::make_simple_net(rng, 16, 32, 4);
    optim::SGD opt(net->parameters(), 0.01);
    std::vector<float> xs(64 * 16, 0.5f);
    std::vector<std::int32_t> ys(64, 1);
    auto data = std::make_shared<TensorDataset>(from_vector(xs, {64, 16}), from_vector(ys, {64}), 4);
    DataLoaderOptions lo;
    lo.batch_size = 8;
    lo.num_workers = workers ? 1 : 0;
    DataLoader loader(data, lo);
    prof::Profiler p(options);
    p.start();
    int done = 0;
    for (const Batch& b : loader.epoch(0)) {
        if (done++ == steps) break;
        opt.zero_grad();
        Tensor loss = cross_entropy(net->forward(b.inputs), b.targets);
        loss.backward();
        opt.step();
        prof::mark_step();
    }
    p.stop();
    return p.trace();
}

TEST(Profiler, OffRecordsNothingAndCostsOneBranch) {
    EXPECT_FALSE(prof::recording());
    const prof::Scope s(Category::User, "nobody is listening");
    EXPECT_FALSE(s.on());
}

TEST(Profiler, TrainingStepsGiveAWellFormedTrace) {
    const prof::Trace t = profile_steps(3, {}, /*workers=*/true);
    std::size_t complete = 0;
    const auto problems = format_problems(json::parse(prof::chrome_trace_json(t)), &complete);
    EXPECT_TRUE(problems.empty()) << joined(problems);
    EXPECT_GT(complete, 10u);
    std::set<std::string> cats;
    for (const Event& e : t.events) cats.insert(prof::category_name(e.category));
    for (const char* c : {"step", "op_forward", "op_backward", "data_wait", "data_work", "optimizer"})
        EXPECT_TRUE(cats.count(c)) << "no " << c << " event";
}

TEST(Profiler, BackwardNodesNestInsideTheBackwardCall) {
    const prof::Trace t = profile_steps(1, {}, false);
    const Event* outer = nullptr;
    for (const Event& e : t.events)
        if (e.name == "autograd::backward") outer = &e;
    ASSERT_NE(outer, nullptr);
    int nodes = 0;
    for (const Event& e : t.events) {
        if (e.category != Category::OpBackward || &e == outer) continue;
        ++nodes;
        EXPECT_GE(e.start_ns, outer->start_ns);
        EXPECT_LE(e.end_ns, outer->end_ns);
        EXPECT_EQ(e.tid, outer->tid);
    }
    EXPECT_GE(nodes, 5) << "one event per autograd node (matmuls, adds, relu, loss, accumulators)";
}

TEST(Profiler, LoaderWorkerBatchesFlowToTheMainThread) {
    const prof::Trace t = profile_steps(2, {}, /*workers=*/true);
    std::map<std::uint64_t, std::vector<prof::FlowPoint>> by_id;
    for (const prof::FlowPoint& f : t.flows) by_id[f.id].push_back(f);
    int across = 0;
    for (const auto& [id, ends] : by_id)
        if (ends.size() == 2 && ends[0].tid != ends[1].tid) ++across;
    EXPECT_GE(across, 1) << "a batch made on the worker thread and taken by the loop";
}

TEST(Profiler, ScheduleKeepsOnlyTheActiveSteps) {
    prof::ProfilerOptions o;
    o.schedule = {.wait = 1, .warmup = 1, .active = 2};
    const prof::Trace t = profile_steps(6, o, false);
    std::vector<std::string> steps;
    for (const Event& e : t.events)
        if (e.category == Category::Step) steps.push_back(e.name);
    std::sort(steps.begin(), steps.end());
    EXPECT_EQ(steps, (std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3"}));
    EXPECT_EQ(t.steps, 2);
    for (const Event& e : t.events) {
        EXPECT_GE(e.end_ns, 0);
    }
}

TEST(Profiler, RecordShapesFillsTheMatmulRow) {
    prof::ProfilerOptions o;
    o.record_shapes = true;
    const prof::Trace t = profile_steps(1, o, false);
    const auto rows = prof::op_table(t, /*by_shapes=*/true);
    const auto mm = std::find_if(rows.begin(), rows.end(),
                                 [](const prof::OpRow& r) { return r.name == "matmul" && r.shapes == "[8, 16] [16, 32]"; });
    ASSERT_NE(mm, rows.end()) << prof::format_op_table(rows);
    EXPECT_EQ(mm->calls, 1);
    EXPECT_DOUBLE_EQ(mm->flops, 2.0 * 8 * 16 * 32);
}

TEST(Profiler, ConvolutionsAndPoolingAreOpsWithTheirMultiplyAdds) {
    // A CNN's costliest ops must show in the table under their own names (they used to be
    // missing from it: their time showed nowhere), a convolution with 2 (C / groups) R S
    // flops per output element, here [2, 4, 9, 9] outputs of a grouped 3 x 3 filter.
    prof::ProfilerOptions o;
    o.record_shapes = true;
    Rng rng(2);
    const Tensor x = rand_uniform({2, 6, 9, 9}, -1.0, 1.0, rng), w = rand_uniform({4, 3, 3, 3}, -1.0, 1.0, rng);
    Conv2dOptions c;
    c.padding = {1, 1};
    c.groups = 2;
    prof::Profiler p(o);
    p.start();
    const Tensor y = max_pool2d(conv2d(x, w, Tensor(), c), 3);
    prof::mark_step();
    p.stop();
    EXPECT_EQ(y.shape(), (Shape{2, 4, 3, 3}));
    const auto rows = prof::op_table(p.trace(), /*by_shapes=*/false);
    const auto row = [&](const char* name) {
        return std::find_if(rows.begin(), rows.end(), [&](const prof::OpRow& r) { return r.name == name; });
    };
    ASSERT_NE(row("conv2d"), rows.end()) << prof::format_op_table(rows);
    ASSERT_NE(row("max_pool2d"), rows.end()) << prof::format_op_table(rows);
    EXPECT_EQ(row("conv2d")->calls, 1);
    EXPECT_DOUBLE_EQ(row("conv2d")->flops, 2.0 * (2 * 4 * 9 * 9) * (3 * 3 * 3));
}

TEST(Profiler, TrackingAllocatorDrawsTheMemoryTimeline) {
    memory::TrackingAllocator tracker;
    prof::Profiler p;
    p.start();
    {
        memory::DefaultAllocatorScope use(tracker);
        Tensor a = zeros({1024});
        Tensor b = zeros({2048});
    }
    p.stop();
    ASSERT_GE(p.trace().memory.size(), 4u);
    EXPECT_EQ(prof::summarize(p.trace()).peak_memory, 3 * 1024 * 4);
    EXPECT_EQ(p.trace().memory.back().bytes, 0);
}

TEST(Profiler, OnlyOneRunsAtATime) {
    prof::Profiler a;
    a.start();
    prof::Profiler b;
    EXPECT_THROW(b.start(), Error);
    a.stop();
}

// ---- self time and the table on synthetic scopes ----

TEST(ProfilerAnalysis, SelfTimeSubtractsDirectChildrenOnTheSameThreadOnly) {
    const std::vector<Event> events = {
        ev("step", Category::User, 0, 0, 1000),
        ev("fwd", Category::OpForward, 0, 100, 500),
        ev("mm", Category::Kernel, 0, 150, 350),  // nested twice: counts against fwd only
        ev("bwd", Category::OpBackward, 0, 500, 900),  // starts as fwd ends: a sibling
        ev("worker", Category::DataWork, 1, 0, 800),   // another thread, overlapping in time
        ev("decode", Category::DataWork, 1, 200, 300),
        ev("rank1", Category::User, 0, 0, 50, /*pid=*/1),  // another process: never a child
    };
    const std::vector<std::int64_t> self = prof::self_times(events);
    EXPECT_EQ(self, (std::vector<std::int64_t>{1000 - 400 - 400, 400 - 200, 200, 400, 700, 100, 50}));
}

TEST(ProfilerAnalysis, TableAddsCallsAndComputesRates) {
    prof::Trace t;
    t.events = {ev("ProfilerStep#0", Category::Step, 0, 0, 2000), ev("matmul", Category::OpForward, 0, 0, 1000),
                ev("matmul", Category::OpForward, 0, 1000, 1500), ev("relu", Category::OpForward, 0, 1500, 1600)};
    t.events[1].flops = 4000;
    t.events[2].flops = 2000;
    t.events[2].bytes = 300;
    const auto rows = prof::op_table(t);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].name, "matmul");
    EXPECT_EQ(rows[0].calls, 2);
    EXPECT_EQ(rows[0].self_ns, 1500);
    EXPECT_DOUBLE_EQ(rows[0].percent_of_steps, 75.0);
    EXPECT_DOUBLE_EQ(rows[0].gflops_per_s(), 4.0);  // 6000 flops in 1500 ns
    EXPECT_DOUBLE_EQ(rows[0].gbytes_per_s(), 0.2);
    EXPECT_EQ(rows[1].name, "relu");
}

// ---- diagnosis rules ----

prof::StepSummary summary_with(Category c, double fraction) {
    prof::StepSummary s;
    s.steps = 10;
    s.step_ns = 1'000'000;
    s.self_ns[static_cast<std::size_t>(c)] = static_cast<std::int64_t>(fraction * 1e6);
    s.op_calls = 10;
    s.op_flops = 1e9;
    return s;
}

TEST(ProfilerDiagnosis, EachRuleNamesItsProblemAndTheLecturesRemedy) {
    using prof::Problem;
    EXPECT_EQ(prof::diagnose(summary_with(Category::DataWait, 0.6)).problem, Problem::DataLoading);
    EXPECT_EQ(prof::diagnose(summary_with(Category::DataWait, 0.1)).problem, Problem::ComputeBound);
    prof::StepSummary loading_on_the_loop = summary_with(Category::DataWait, 0.2);
    loading_on_the_loop.self_ns[static_cast<std::size_t>(Category::DataWork)] = 200'000;
    EXPECT_EQ(prof::diagnose(loading_on_the_loop).problem, Problem::DataLoading) << "0.2 + 0.2 of the step";
    EXPECT_EQ(prof::diagnose(summary_with(Category::Communication, 0.5)).problem, Problem::Communication);
    prof::StepSummary chatty = summary_with(Category::Communication, 0.1);
    chatty.communication_bytes = 0.6 * chatty.op_flops;
    EXPECT_EQ(prof::diagnose(chatty).problem, Problem::Communication) << "0.6 bytes per flop";
    chatty.communication_bytes = 0.4 * chatty.op_flops;
    EXPECT_EQ(prof::diagnose(chatty).problem, Problem::ComputeBound) << "0.4 bytes per flop, 10% of the time";
    prof::StepSummary sync = summary_with(Category::OpForward, 0.5);
    sync.syncs = 10;
    EXPECT_EQ(prof::diagnose(sync).problem, Problem::HostSync);
    prof::StepSummary tiny = summary_with(Category::OpForward, 0.5);
    tiny.op_flops = 1e4;
    EXPECT_EQ(prof::diagnose(tiny).problem, Problem::LowUtilization);
    prof::StepSummary big = summary_with(Category::OpForward, 0.5);
    big.peak_memory = 2'000'000;
    prof::DiagnosisRules rules;
    EXPECT_EQ(prof::diagnose(big, rules).problem, Problem::ComputeBound) << "no cap, no memory problem";
    rules.memory_cap_bytes = 1'000'000;
    const prof::Diagnosis d = prof::diagnose(big, rules);
    EXPECT_EQ(d.problem, Problem::OutOfMemory);
    EXPECT_NE(d.remedy.find("checkpointing"), std::string::npos);
    EXPECT_NE(d.paragraph.find("1.9 MiB"), std::string::npos) << d.paragraph;
}

}  // namespace
}  // namespace gl::test

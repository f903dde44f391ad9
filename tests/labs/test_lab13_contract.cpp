// Lab 13 contract tests: fusion and planning on random graphs. The fused graph must verify,
// compute the same outputs with no more kernels than the reference pass leaves; every plan
// must keep live values apart and lie between the live-set bound and no reuse, with exact
// lifetimes. The student's code runs only inside graded::student; the checks use the
// checker's own verify, executor, check_plan and bound.
#include <gtest/gtest.h>

#include "lab13_support.hpp"

namespace gl::graph {
namespace {

using namespace lab13;

constexpr std::uint64_t kGraphs = 25;

TEST(Lab13, ContractFusionPreservesOutputsOnRandomGraphs) {
    const auto all = graded::student<std::vector<Nodes>>("fuse_random", [] {
        std::vector<Nodes> out;
        for (std::uint64_t seed = 0; seed < kGraphs; ++seed) {
            Graph g = random_graph(seed);
            fuse_elementwise(g);
            out.push_back(g.nodes);
        }
        return out;
    });
    ASSERT_EQ(all.size(), kGraphs);
    std::size_t original_kernels = 0, reference_kernels = 0;
    for (std::uint64_t seed = 0; seed < kGraphs; ++seed) {
        const Graph g = random_graph(seed);
        Graph reference = g;
        fuse_elementwise(reference);
        original_kernels += g.nodes.size();
        reference_kernels += reference.nodes.size();
        Graph fused;
        ASSERT_NO_THROW(fused = with_nodes(g, all[seed])) << "graph " << seed << ":\n" << to_text(g);
        EXPECT_LE(fused.nodes.size(), reference.nodes.size())
            << "graph " << seed << ": a chain was left unfused\n" << to_text(g) << "fused:\n" << to_text(fused);
        const auto want = run_with_random_inputs(g, seed), got = run_with_random_inputs(fused, seed);
        ASSERT_EQ(want.size(), got.size());
        for (std::size_t i = 0; i < want.size(); ++i)
            for (std::size_t e = 0; e < want[i].size(); ++e)
                ASSERT_EQ(want[i][e], got[i][e]) << "graph " << seed << ", output " << i << " differs after fusion\n"
                                                 << to_text(g);
    }
    EXPECT_LT(reference_kernels * 10, original_kernels * 9) << "the random graphs must give fusion work to do";
}

TEST(Lab13, ContractPlansAreValidOnRandomGraphs) {
    using Result = std::pair<MemoryPlan, Lifetimes>;
    const auto all = graded::student<std::vector<Result>>("plan_random", [] {
        std::vector<Result> out;
        for (std::uint64_t seed = 100; seed < 100 + kGraphs; ++seed) {
            const Graph g = random_graph(seed);
            Lifetimes life;
            for (const Lifetime& l : lifetimes(g)) life.emplace_back(l.first, l.last);
            out.emplace_back(plan_memory(g), life);
        }
        return out;
    });
    ASSERT_EQ(all.size(), kGraphs);
    for (std::uint64_t k = 0; k < kGraphs; ++k) {
        const Graph g = random_graph(100 + k);
        const auto& [plan, life] = all[k];
        const std::vector<Lifetime> want = lifetimes(g);
        ASSERT_EQ(life.size(), want.size());
        for (std::size_t id = 0; id < want.size(); ++id)
            EXPECT_EQ(life[id], std::make_pair(want[id].first, want[id].last))
                << "graph " << 100 + k << ", lifetime of " << g.values[id].name << "\n" << to_text(g);
        EXPECT_NO_THROW(check_plan(g, plan)) << "graph " << 100 + k << "\n" << to_text(g);
        EXPECT_GE(plan.arena_bytes, live_set_bound(g));
        EXPECT_LE(plan.arena_bytes, plan_without_reuse(g).arena_bytes)
            << "graph " << 100 + k << ": the plan is larger than giving every value its own bytes";
    }
}

}  // namespace
}  // namespace gl::graph

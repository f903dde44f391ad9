// Lab 13 graded tests: element-wise fusion and the liveness-based memory planner.
// Points per test are in labs/13-static-graphs/rubric.json. Nothing here times anything:
// the checks are kernel counts, byte counts and arena sizes with known answers, and equal
// outputs.
//
// The student's code is called only inside graded::student (graded.hpp). A fused graph is
// recorded as its node list: the checker rebuilds the same graph, puts the nodes in,
// verifies it and runs it with its own executor. A plan is recorded as its offsets; the
// checker checks them with its own check_plan and live-set bound.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "graph/compiled.hpp"
#include "lab13_support.hpp"
#include "ops/ops.hpp"

namespace gl::graph {
namespace {

using namespace lab13;

// The student's fusion of @p g, as recorded.
Nodes fused_nodes(const Graph& g) {
    return graded::student<Nodes>("fuse", [&] {
        Graph copy = g;
        fuse_elementwise(copy);
        return copy.nodes;
    });
}

// Outputs of @p a and @p b on the same random inputs agree to @p tol.
void expect_same_outputs(const Graph& a, const Graph& b, double tol = 0.0) {
    const auto oa = run_with_random_inputs(a, 5), ob = run_with_random_inputs(b, 5);
    ASSERT_EQ(oa.size(), ob.size());
    for (std::size_t i = 0; i < oa.size(); ++i) {
        ASSERT_EQ(oa[i].size(), ob[i].size());
        for (std::size_t e = 0; e < oa[i].size(); ++e)
            ASSERT_NEAR(oa[i][e], ob[i][e], tol) << "output " << i << " element " << e
                                                 << " differs after fusion: a loop must compute what its members did";
    }
}

// ---- Task 1: fusion -----------------------------------------------------------------------

TEST(Lab13, FusionBiasReluIsOneLoop) {
    const Graph g = bias_relu_graph(64, 32);
    const Graph fused = with_nodes(g, fused_nodes(g));
    ASSERT_EQ(fused.nodes.size(), 1u) << "add then relu over the same [64, 32] loop is one fused node\n" << to_text(fused);
    EXPECT_EQ(fused.nodes[0].op, "fused_elementwise");
    const std::int64_t mn = 64 * 32 * 4, n = 32 * 4;
    EXPECT_EQ(Executor(fused, own_buffers(fused)).per_run().bytes_moved, 2 * mn + n)
        << "the loop reads h and b once and writes the result once; the sum never reaches memory";
    expect_same_outputs(g, fused);
}

TEST(Lab13, FusionStopsAtOutsideReaders) {
    // relu(a) is read by the matmul, so the group holding it is closed before neg joins.
    Graph g;
    const int a = fixtures::add_input(g, "a", {8, 4}), w = fixtures::add_input(g, "w", {4, 4});
    const int r = g.add_node("relu", {a});
    const int m = g.add_node("matmul", {r, w});
    g.outputs = {g.add_node("add", {g.add_node("neg", {r}), m})};
    const Graph fused = with_nodes(g, fused_nodes(g));
    EXPECT_EQ(fused.nodes.size(), 3u) << "relu, matmul, then neg + add fused\n" << to_text(fused);
    EXPECT_EQ(count_ops(fused, "relu"), 1) << "relu's result is read by the matmul before neg runs";
    EXPECT_EQ(count_ops(fused, "fused_elementwise"), 1);
    expect_same_outputs(g, fused);

    // A value returned by the graph is an output of the loop, even when members read it.
    Graph h;
    const int x = fixtures::add_input(h, "x", {16});
    const int ra = h.add_node("relu", {x});
    const int c = h.add_node("mul", {ra, h.add_node("neg", {ra})});
    h.outputs = {c, ra};
    const Graph fused_h = with_nodes(h, fused_nodes(h));
    ASSERT_EQ(fused_h.nodes.size(), 1u) << to_text(fused_h);
    EXPECT_EQ(std::set<int>(fused_h.nodes[0].outputs.begin(), fused_h.nodes[0].outputs.end()), (std::set<int>{ra, c}))
        << "the loop's outputs are exactly the values needed after it: the returned relu and the product";
    expect_same_outputs(h, fused_h);
}

TEST(Lab13, FusionKeepsLoopShapesApart) {
    // mul(b, b) runs over [4]; add and relu over [8, 4]: two loops.
    Graph g;
    const int a = fixtures::add_input(g, "a", {8, 4}), b = fixtures::add_input(g, "b", {4});
    g.outputs = {g.add_node("relu", {g.add_node("add", {a, g.add_node("mul", {b, b})})})};
    const Graph fused = with_nodes(g, fused_nodes(g));
    EXPECT_EQ(fused.nodes.size(), 2u) << to_text(fused);
    EXPECT_EQ(count_ops(fused, "mul"), 1) << "a [4] loop and an [8, 4] loop are different loops";
    expect_same_outputs(g, fused);

    // An unrelated node between two members does not stop them from fusing.
    Graph h;
    const int x = fixtures::add_input(h, "x", {8, 4}), w = fixtures::add_input(h, "w", {4, 4});
    const int p = h.add_node("relu", {x});
    const int mm = h.add_node("matmul", {x, w});
    h.outputs = {h.add_node("neg", {p}), mm};
    const Graph fused_h = with_nodes(h, fused_nodes(h));
    EXPECT_EQ(fused_h.nodes.size(), 2u) << "relu and neg fuse across the matmul that does not read them\n"
                                        << to_text(fused_h);
    expect_same_outputs(h, fused_h);
}

TEST(Lab13, FusionMergesAdamIntoOneLoopPerParameter) {
    TrainingStep unfused = training_step(21);
    const std::size_t unfused_kernels = unfused.graph.nodes.size();
    const Nodes nodes = fused_nodes(unfused.graph);
    TrainingStep fused = training_step(21);
    fused.graph = with_nodes(fused.graph, nodes);
    EXPECT_EQ(fused.graph.nodes.size(), 16u)
        << "from " << unfused_kernels << " kernels: one loop for bias + ReLU, one per parameter for Adam\n"
        << to_text(fused.graph);
    EXPECT_EQ(count_ops(fused.graph, "fused_elementwise"), 5);
    const auto want = run_training_step(unfused, unfused.graph);
    const auto got = run_training_step(fused, fused.graph);
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i)
        for (std::size_t e = 0; e < want[i].size(); ++e)
            ASSERT_NEAR(want[i][e], got[i][e], 1e-6) << (i == 0 ? "the loss" : "a parameter after the update")
                                                     << " differs from the unfused step's";
}

// ---- Task 2: lifetimes and the planner ----------------------------------------------------

TEST(Lab13, LifetimesAreExact) {
    Graph g;
    const int x = fixtures::add_input(g, "x", {4});
    const int p = fixtures::add_input(g, "p", {4}, ValueKind::Parameter);
    const int a = g.add_node("relu", {x});     // node 0
    const int b = g.add_node("neg", {a});      // node 1
    const int c = g.add_node("add", {a, b});   // node 2
    const int d = g.add_node("sub", {p, c});   // node 3: updates p in place
    g.values[static_cast<std::size_t>(d)].updates = p;
    const int e = g.add_node("mul", {c, c});   // node 4: nobody reads it
    g.outputs = {c};
    const Lifetimes got = graded::student<Lifetimes>("lifetimes", [&] {
        Lifetimes out;
        for (const Lifetime& l : lifetimes(g)) out.emplace_back(l.first, l.last);
        return out;
    });
    ASSERT_EQ(got.size(), g.values.size()) << "one lifetime per value";
    const auto at = [&](int id) { return got[static_cast<std::size_t>(id)]; };
    EXPECT_EQ(at(a), std::make_pair(0, 2)) << "relu's result is read last by the add (node 2)";
    EXPECT_EQ(at(b), std::make_pair(1, 2));
    EXPECT_EQ(at(c), std::make_pair(2, 5)) << "a returned value lives past the last node (nodes.size() = 5)";
    EXPECT_EQ(at(e), std::make_pair(4, 4)) << "a value nobody reads lives at its own node";
    EXPECT_EQ(at(d), std::make_pair(-1, -1)) << "an in-place update lives in its target's bytes: not planned";
    EXPECT_EQ(at(x), std::make_pair(-1, -1)) << "inputs are not planned";
    EXPECT_EQ(at(p), std::make_pair(-1, -1)) << "parameters are not planned";
}

// The student's plan of @p g, checked by the checker's check_plan.
std::int64_t checked_arena(const Graph& g) {
    const MemoryPlan plan = graded::student<MemoryPlan>("plan", [&] { return plan_memory(g); });
    EXPECT_NO_THROW(check_plan(g, plan)) << to_text(g);
    return plan.arena_bytes;
}

TEST(Lab13, PlanMeetsTheLiveSetBound) {
    Graph chain;  // six ReLUs of 1 KiB: two buffers suffice
    int v = fixtures::add_input(chain, "x", {16, 16});
    for (int i = 0; i < 6; ++i) v = chain.add_node("relu", {v});
    chain.outputs = {v};
    EXPECT_EQ(checked_arena(chain), 2048) << "each value is needed only by the next: two buffers take turns";

    Graph diamond;  // a feeds b and c, which meet in d: three alive at once
    const int x = fixtures::add_input(diamond, "x", {256});
    const int a = diamond.add_node("relu", {x});
    const int b = diamond.add_node("neg", {a});
    const int c = diamond.add_node("relu", {a});
    diamond.outputs = {diamond.add_node("add", {b, c})};
    EXPECT_EQ(checked_arena(diamond), 3 * 1024);

    Graph mixed;  // a scalar lives across two large buffers' lifetimes
    const int y = fixtures::add_input(mixed, "y", {256});
    const int s = mixed.add_node("mean", {mixed.add_node("relu", {y})});
    const int big = mixed.add_node("mul", {mixed.add_node("neg", {y}), s});
    mixed.outputs = {mixed.add_node("add", {big, s})};
    EXPECT_EQ(checked_arena(mixed), 2 * 1024 + 64) << "two 1 KiB buffers and the 64-byte scalar";
}

TEST(Lab13, PlanOfTheTrainingStepMeetsTheBound) {
    const TrainingStep t = training_step(31);
    EXPECT_EQ(checked_arena(t.graph), live_set_bound(t.graph))
        << "SimpleNet's (unfused) training step can be planned at its live-set bound: place large values first";
}

// ---- Both, in the pipeline: capture -> your passes -> your plan -> executor --------------

TEST(Lab13, CapturedTrainingEqualsEager) {
    const AdamSettings adam{1e-2, 0.9, 0.999, 1e-8};
    auto eager = fixtures::simple_net(41);
    fixtures::train_eager(*eager, adam, 30, 16, 64, 10, 400);
    const auto weights = graded::student<std::vector<std::vector<float>>>("weights", [&] {
        auto net = fixtures::simple_net(41);
        const auto example = fixtures::random_batch(16, 64, 10, 400);
        CompiledTrainingStep step(*net, example.x, example.targets, adam);
        for (int s = 0; s < 30; ++s) {
            const auto b = fixtures::random_batch(16, 64, 10, 400 + static_cast<std::uint64_t>(s));
            step.step(b.x, b.targets);
        }
        std::vector<std::vector<float>> out;
        for (const Tensor& p : net->parameters()) out.push_back(p.to_vector<float>());
        return out;
    });
    const std::vector<Tensor> want = eager->parameters();
    ASSERT_EQ(weights.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        const std::vector<float> w = want[i].to_vector<float>();
        ASSERT_EQ(weights[i].size(), w.size());
        for (std::size_t e = 0; e < w.size(); ++e)
            ASSERT_NEAR(weights[i][e], w[e], 1e-4) << "parameter " << i << " after 30 captured steps differs from "
                                                      "eager training's: fusion or the plan changed what the step computes";
    }
}

TEST(Lab13, CapturedInferenceEqualsEager) {
    auto net = fixtures::simple_net(51);
    const auto batch = fixtures::random_batch(32, 64, 10, 52);
    const std::vector<float> want = net->forward(batch.x).to_vector<float>();
    const auto got = graded::student<std::vector<float>>("logits", [&] {
        CompiledForward forward(*net, batch.x);
        return forward(batch.x).to_vector<float>();
    });
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t e = 0; e < want.size(); ++e) ASSERT_NEAR(got[e], want[e], 1e-5);
}

}  // namespace
}  // namespace gl::graph

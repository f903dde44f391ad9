// The static-graph pipeline (core/graph): capture, IR, passes, memory plan, executor,
// and the acceptance checks of claim JIT-1 on SimpleNet.
#include <gtest/gtest.h>

#include <cmath>

#include "count_allocations.hpp"
#include "graph/autodiff.hpp"
#include "graph/capture.hpp"
#include "graph/compiled.hpp"
#include "graph/memory_plan.hpp"
#include "graph/passes.hpp"
#include "graph_fixtures.hpp"
#include "memory/tracking_allocator.hpp"
#include "nn/conv_layers.hpp"
#include "ops/ops.hpp"
#include "optim/optimizer.hpp"
#include "training/toy_models.hpp"

namespace gl::graph {
namespace {

using fixtures::add_input;
using fixtures::count_ops;
using fixtures::random_batch;
using fixtures::simple_net;

double max_difference(const Tensor& a, const Tensor& b) {
    EXPECT_EQ(a.shape(), b.shape());
    double worst = 0.0;
    for (std::int64_t e = 0; e < a.numel(); ++e)
        worst = std::max(worst, std::abs(static_cast<double>(a.data<float>()[e]) - b.data<float>()[e]));
    return worst;
}

// ---- capture and the IR ----

TEST(GraphCapture, SimpleNetForwardIsTracedIntoReadableIR) {
    auto net = simple_net(1);
    const auto batch = random_batch(8, 64, 10, 2);
    const Graph g = capture_forward(*net, batch.x);
    EXPECT_EQ(count_ops(g, "matmul"), 2);
    EXPECT_EQ(count_ops(g, "transpose"), 2);
    EXPECT_EQ(count_ops(g, "add"), 2);
    EXPECT_EQ(count_ops(g, "relu"), 1);
    EXPECT_TRUE(g.notes.empty()) << to_text(g);
    const std::string text = to_text(g);
    EXPECT_NE(text.find("input x:f32[8,64]"), std::string::npos) << text;
    EXPECT_NE(text.find("param 0.weight:f32[32,64]"), std::string::npos) << text;
    EXPECT_NE(text.find("= relu("), std::string::npos) << text;
    EXPECT_NO_THROW(verify(g));
}

TEST(GraphCapture, AModelWithAConvolutionIsRefusedWithAClearMessage) {
    // The IR has no convolution: capturing a CNN must stop and say so, not bake the
    // convolution's output into the graph as a constant (an untraced op's output looked
    // like a number from outside).
    Rng rng(4);
    auto net = nn::make_cnn(rng);
    const Tensor x = rand_uniform({2, 784}, 0.0, 1.0, rng);
    try {
        capture_forward(*net, x);
        FAIL() << "captured a CNN";
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("conv2d"), std::string::npos) << what;
        EXPECT_NE(what.find("run this model eagerly"), std::string::npos) << what;
    }
}

TEST(GraphCapture, DataDependentControlFlowIsFixedToTheTracedPathAndSaysSo) {
    Rng rng(3);
    training::DataDependentNet net(2, rng);
    // Two batches that take different depths.
    Tensor small = full({4, 2}, 0.1), large = full({4, 2}, 0.5);
    ASSERT_NE(training::DataDependentNet::depth_for(small), training::DataDependentNet::depth_for(large));
    const Graph g = capture_forward(net, small);
    ASSERT_FALSE(g.notes.empty());
    EXPECT_NE(g.notes[0].find("fixed the path"), std::string::npos) << g.notes[0];
    EXPECT_NE(to_text(g).find("note: "), std::string::npos);
    EXPECT_NE(capture_forward(net, large).nodes.size(), g.nodes.size()) << "each trace records its own path";
    // Replaying the small batch's trace on the large batch runs the wrong depth.
    CompiledForward compiled(net, small);
    EXPECT_LT(max_difference(compiled(small), net(small)), 1e-5);
    EXPECT_GT(max_difference(compiled(large), net(large)), 1e-3);
}

TEST(GraphIR, VerifierRejectsMalformedGraphs) {
    Graph g;
    const int x = add_input(g, "x", {4, 3});
    const int y = g.add_node("relu", {x});
    g.outputs = {y};
    EXPECT_NO_THROW(verify(g));

    Graph use_before_def = g;
    std::swap(use_before_def.nodes[0].inputs[0], use_before_def.nodes[0].outputs[0]);
    EXPECT_THROW(verify(use_before_def), Error);

    Graph wrong_shape = g;
    wrong_shape.values[static_cast<std::size_t>(y)].shape = {3, 4};
    EXPECT_THROW(verify(wrong_shape), Error);

    Graph unknown = g;
    unknown.nodes[0].op = "frobnicate";
    EXPECT_THROW(verify(unknown), Error);

    Graph bad_broadcast;
    const int a = add_input(bad_broadcast, "a", {4, 3});
    const int b = add_input(bad_broadcast, "b", {4});
    Node n;
    n.op = "add";
    n.inputs = {a, b};
    EXPECT_THROW(infer_shapes(bad_broadcast, n), Error);
}

TEST(GraphIR, AnUpdateMayNotBeFollowedByAReadOfItsTarget) {
    Graph g;
    const int p = add_input(g, "p", {5}, ValueKind::Parameter);
    const int q = g.add_node("neg", {p});
    g.values[static_cast<std::size_t>(q)].updates = p;
    g.add_node("relu", {p});  // reads p after q overwrote it
    EXPECT_THROW(verify(g), Error);
}

// ---- passes ----

TEST(GraphPasses, DeadCodeEliminationKeepsOutputsAndUpdatesOnly) {
    Graph g;
    const int x = add_input(g, "x", {6});
    const int p = add_input(g, "p", {6}, ValueKind::Parameter);
    const int kept = g.add_node("relu", {x});
    g.add_node("neg", {x});  // dead
    const int update = g.add_node("sub", {p, x});
    g.values[static_cast<std::size_t>(update)].updates = p;
    g.outputs = {kept};
    EXPECT_EQ(eliminate_dead_code(g), 1);
    EXPECT_EQ(g.nodes.size(), 2u);
    EXPECT_EQ(count_ops(g, "neg"), 0);
    EXPECT_NO_THROW(verify(g));
}

TEST(GraphPasses, ConstantFoldingComputesConstantSubgraphsOnce) {
    Graph g;
    const int x = add_input(g, "x", {3});
    const int one = add_constant(g, 1.0), beta = add_constant(g, 0.25);
    const int one_minus_beta = g.add_node("sub", {one, beta});
    const int y = g.add_node("mul", {one_minus_beta, x});
    g.outputs = {y};
    EXPECT_EQ(fold_constants(g), 1);
    ASSERT_EQ(g.nodes.size(), 1u);
    const Value& folded = g.values[static_cast<std::size_t>(one_minus_beta)];
    EXPECT_EQ(folded.kind, ValueKind::Constant);
    EXPECT_FLOAT_EQ(folded.data.data<float>()[0], 0.75f);
    EXPECT_NO_THROW(verify(g));
}

TEST(GraphPasses, TransposesFoldIntoMatmulFlags) {
    auto net = simple_net(4);
    Graph g = capture_forward(*net, random_batch(5, 64, 10, 5).x);
    EXPECT_EQ(fold_transposes(g), 2);
    EXPECT_EQ(eliminate_dead_code(g), 2);
    EXPECT_EQ(count_ops(g, "transpose"), 0);
    for (const Node& n : g.nodes) {
        if (n.op != "matmul") continue;
        EXPECT_TRUE(n.trans_b && !n.trans_a);
    }
    EXPECT_NO_THROW(verify(g));
}

TEST(GraphPasses, BiasAndReluFuseIntoOneLoopThatMovesHalfTheBytes) {
    Graph g;
    const int h = add_input(g, "h", {64, 32});
    const int bias = add_input(g, "bias", {32});
    const int y = g.add_node("relu", {g.add_node("add", {h, bias})});
    g.outputs = {y};
    Graph fused = g;
    EXPECT_EQ(fuse_elementwise(fused), 1);
    ASSERT_EQ(fused.nodes[0].op, "fused_elementwise");
    EXPECT_EQ(fused.nodes[0].outputs, std::vector<int>{y});
    EXPECT_NO_THROW(verify(fused));
    // Counted traffic: the chain reads h and bias and writes y once, instead of also
    // writing and re-reading the sum: (2 MN + N) / (4 MN + N) of the bytes.
    Executor eager(g, plan_memory(g)), one(fused, plan_memory(fused));
    const std::int64_t mn = 64 * 32 * 4, n = 32 * 4;
    EXPECT_EQ(eager.per_run().bytes_moved, 4 * mn + n);
    EXPECT_EQ(one.per_run().bytes_moved, 2 * mn + n);
    const auto batch = random_batch(64, 32, 2, 6);
    const Tensor b = randn({32}, *std::make_unique<Rng>(7));
    for (Executor* e : {&eager, &one}) {
        e->bind("h", batch.x);
        e->bind("bias", b);
        e->run();
    }
    EXPECT_EQ(max_difference(eager.output(0), one.output(0)), 0.0);
    EXPECT_EQ(max_difference(one.output(0), relu(batch.x + b)), 0.0);
}

TEST(GraphPasses, FusionStopsWhereAValueIsReadOutsideTheChain) {
    Graph g;
    const int a = add_input(g, "a", {8, 4});
    const int w = add_input(g, "w", {4, 4});
    const int r = g.add_node("relu", {a});
    const int m = g.add_node("matmul", {r, w});  // reads r: the chain before it is closed
    const int y = g.add_node("add", {g.add_node("neg", {r}), m});
    g.outputs = {y};
    fuse_elementwise(g);
    EXPECT_NO_THROW(verify(g));
    EXPECT_EQ(count_ops(g, "relu"), 1) << to_text(g);
    EXPECT_EQ(count_ops(g, "fused_elementwise"), 1) << to_text(g);
}

// ---- memory planning ----

TEST(GraphMemoryPlan, AChainReusesTwoBuffersAndMeetsTheLiveSetBound) {
    Graph g;
    int v = add_input(g, "x", {16, 16});
    for (int i = 0; i < 6; ++i) v = g.add_node("relu", {v});
    g.outputs = {v};
    const MemoryPlan plan = plan_memory(g);
    EXPECT_NO_THROW(check_plan(g, plan));
    EXPECT_EQ(plan.arena_bytes, 2 * 1024);
    EXPECT_EQ(live_set_bound(g), 2 * 1024);
    EXPECT_EQ(plan_without_reuse(g).arena_bytes, 6 * 1024);
}

TEST(GraphMemoryPlan, CheckPlanCatchesOverlappingLiveValues) {
    Graph g;
    const int x = add_input(g, "x", {16});
    const int a = g.add_node("relu", {x});
    const int b = g.add_node("neg", {x});
    g.outputs = {g.add_node("add", {a, b})};
    MemoryPlan plan = plan_memory(g);
    EXPECT_NO_THROW(check_plan(g, plan));
    plan.offset[static_cast<std::size_t>(b)] = plan.offset[static_cast<std::size_t>(a)];
    EXPECT_THROW(check_plan(g, plan), Error);
}

// ---- the acceptance checks on SimpleNet ----

TEST(GraphAcceptance, CapturedInferenceEqualsEager) {
    auto net = simple_net(8);
    const auto batch = random_batch(16, 64, 10, 9);
    const Tensor eager = net->forward(batch.x);
    for (const bool fuse : {false, true}) {
        CompiledForward compiled(*net, batch.x, {fuse, true});
        EXPECT_LT(max_difference(compiled(batch.x), eager), 1e-6) << "fuse=" << fuse;
        const auto other = random_batch(16, 64, 10, 10);
        EXPECT_LT(max_difference(compiled(other.x), net->forward(other.x)), 1e-6);
    }
}

TEST(GraphAcceptance, CapturedFusedTrainingMatchesEagerAfter100Steps) {
    const AdamSettings adam{1e-2, 0.9, 0.999, 1e-8};
    const int steps = 100;
    auto eager = simple_net(11);
    const std::vector<double> eager_losses = fixtures::train_eager(*eager, adam, steps, 16, 64, 10, 100);
    for (const bool fuse : {false, true}) {
        auto captured = simple_net(11);
        const auto example = random_batch(16, 64, 10, 100);
        CompiledTrainingStep step(*captured, example.x, example.targets, adam, {fuse, true});
        if (fuse) {
            // One loop per Adam update (3 parameters... 4 tensors) and one for bias + ReLU.
            EXPECT_EQ(count_ops(step.executor().graph(), "fused_elementwise"), 5) << to_text(step.executor().graph());
        }
        std::vector<double> losses;
        for (int s = 0; s < steps; ++s) {
            const auto b = random_batch(16, 64, 10, 100 + static_cast<std::uint64_t>(s));
            losses.push_back(step.step(b.x, b.targets));
        }
        EXPECT_NEAR(losses.front(), eager_losses.front(), 1e-5);
        EXPECT_NEAR(losses.back(), eager_losses.back(), 1e-3);
        EXPECT_LT(losses.back(), losses.front()) << "the captured step trains";
        EXPECT_LT(fixtures::max_parameter_difference(*eager, *captured), 1e-3) << "fuse=" << fuse;
    }
}

TEST(GraphAcceptance, ACapturedStepAllocatesNothing) {
    auto net = simple_net(12);
    const auto b = random_batch(16, 64, 10, 13);
    CompiledTrainingStep step(*net, b.x, b.targets, AdamSettings{});
    step.step(b.x, b.targets);  // warm-up: lazily created thread pools and the like
    memory::TrackingAllocator tracking;
    const memory::DefaultAllocatorScope scope(tracking);
    std::int64_t captured = 0;
    {
        testing::AllocationCounter counter;
        for (int s = 0; s < 5; ++s) step.step(b.x, b.targets);
        captured = counter.count();
    }
    EXPECT_EQ(captured, 0) << "heap allocations in 5 captured steps";
    EXPECT_EQ(tracking.stats().allocations, 0u) << "tensor allocations in 5 captured steps";
    // The same steps run eagerly allocate every time.
    auto eager_net = simple_net(12);
    optim::Adam opt(eager_net->parameters(), 1e-3);
    testing::AllocationCounter counter;
    opt.zero_grad();
    cross_entropy(eager_net->forward(b.x), b.targets).backward();
    opt.step();
    EXPECT_GT(counter.count(), 10);
}

TEST(GraphAcceptance, PlannedPeakIsAtMostTheEagerPeak) {
    auto net = simple_net(14, 784, 128, 10);
    const auto b = random_batch(64, 784, 10, 15);
    // Eager: bytes allocated on top of what was held when the step began (parameters,
    // optimizer state, the batch): activations, temporaries and gradients.
    memory::TrackingAllocator tracking;
    std::size_t eager_peak = 0;
    {
        const memory::DefaultAllocatorScope scope(tracking);
        auto eager_net = simple_net(14, 784, 128, 10);
        optim::Adam opt(eager_net->parameters(), 1e-3);
        const auto eb = random_batch(64, 784, 10, 15);
        opt.zero_grad();
        tracking.reset_peaks();
        const std::size_t held = tracking.stats().total_current;
        cross_entropy(eager_net->forward(eb.x), eb.targets).backward();
        opt.step();
        eager_peak = tracking.stats().total_peak - held;
    }
    CompiledTrainingStep step(*net, b.x, b.targets, AdamSettings{});
    const Graph& g = step.executor().graph();
    const auto planned = static_cast<std::size_t>(step.executor().plan().arena_bytes);
    EXPECT_LE(planned, eager_peak);
    EXPECT_GE(step.executor().plan().arena_bytes, live_set_bound(g));
    EXPECT_LT(step.executor().plan().arena_bytes, plan_without_reuse(g).arena_bytes);
}

TEST(GraphAcceptance, FusedElementwiseChainsMoveAtMostHalfTheBytes) {
    auto net = simple_net(16);
    const auto b = random_batch(16, 64, 10, 17);
    CompiledTrainingStep unfused(*net, b.x, b.targets, AdamSettings{}, {false, true});
    CompiledTrainingStep fused(*net, b.x, b.targets, AdamSettings{}, {true, true});
    // Only the element-wise part of the step: the matmuls and the loss are the same nodes.
    const auto elementwise_bytes = [](const Executor& e) {
        std::int64_t bytes = 0;
        const Graph& g = e.graph();
        for (const Node& n : g.nodes) {
            if (!is_elementwise(n.op) && n.op != "fused_elementwise") continue;
            for (int id : n.inputs) bytes += g.bytes_of(id);
            for (int id : n.outputs) bytes += g.bytes_of(id);
        }
        return bytes;
    };
    EXPECT_LE(2 * elementwise_bytes(fused.executor()), elementwise_bytes(unfused.executor()));
    EXPECT_LT(fused.executor().per_run().bytes_moved, unfused.executor().per_run().bytes_moved);
    EXPECT_LT(fused.executor().per_run().kernels, unfused.executor().per_run().kernels);
}

}  // namespace
}  // namespace gl::graph

// Lab 13's graded tests share this: how a fused graph and a memory plan are recorded (the
// checker rebuilds the same graph and puts the student's nodes in), an executor plan that
// does not depend on the student's lifetimes, and the graphs with known answers.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "graded.hpp"
#include "graph/autodiff.hpp"
#include "graph/capture.hpp"
#include "graph/executor.hpp"
#include "graph/memory_plan.hpp"
#include "graph/passes.hpp"
#include "graph_fixtures.hpp"

/// A fused_elementwise step: the op and its registers.
template <>
struct gl::graded::Codec<gl::graph::FusedStep> {
    static void write(Writer& w, const gl::graph::FusedStep& s) {
        Codec<std::string>::write(w, s.op);
        Codec<std::vector<int>>::write(w, s.args);
    }
    static gl::graph::FusedStep read(Reader& r) {
        gl::graph::FusedStep s;
        s.op = Codec<std::string>::read(r);
        s.args = Codec<std::vector<int>>::read(r);
        return s;
    }
};

/// A node: everything that says what it computes (values are the checker's own).
template <>
struct gl::graded::Codec<gl::graph::Node> {
    static void write(Writer& w, const gl::graph::Node& n) {
        Codec<std::string>::write(w, n.op);
        Codec<std::vector<int>>::write(w, n.inputs);
        Codec<std::vector<int>>::write(w, n.outputs);
        Codec<bool>::write(w, n.trans_a);
        Codec<bool>::write(w, n.trans_b);
        Codec<std::vector<std::int64_t>>::write(w, n.shape);
        Codec<std::vector<gl::graph::FusedStep>>::write(w, n.program);
        Codec<std::vector<int>>::write(w, n.output_registers);
    }
    static gl::graph::Node read(Reader& r) {
        gl::graph::Node n;
        n.op = Codec<std::string>::read(r);
        n.inputs = Codec<std::vector<int>>::read(r);
        n.outputs = Codec<std::vector<int>>::read(r);
        n.trans_a = Codec<bool>::read(r);
        n.trans_b = Codec<bool>::read(r);
        n.shape = Codec<std::vector<std::int64_t>>::read(r);
        n.program = Codec<std::vector<gl::graph::FusedStep>>::read(r);
        n.output_registers = Codec<std::vector<int>>::read(r);
        return n;
    }
};

/// A memory plan: the offsets and the arena.
template <>
struct gl::graded::Codec<gl::graph::MemoryPlan> {
    static void write(Writer& w, const gl::graph::MemoryPlan& p) {
        Codec<std::vector<std::int64_t>>::write(w, p.offset);
        Codec<std::int64_t>::write(w, p.arena_bytes);
    }
    static gl::graph::MemoryPlan read(Reader& r) {
        gl::graph::MemoryPlan p;
        p.offset = Codec<std::vector<std::int64_t>>::read(r);
        p.arena_bytes = Codec<std::int64_t>::read(r);
        return p;
    }
};

namespace gl::graph::lab13 {

using Nodes = std::vector<Node>;
using Lifetimes = std::vector<std::pair<int, int>>;

/// Every value a node defines in bytes of its own: a plan that needs none of the
/// student's code (the fusion tests run graphs with it).
inline MemoryPlan own_buffers(const Graph& g) {
    MemoryPlan plan;
    plan.offset.assign(g.values.size(), -1);
    for (const Node& n : g.nodes)
        for (int id : n.outputs) {
            if (g.values[static_cast<std::size_t>(id)].updates >= 0) continue;
            plan.offset[static_cast<std::size_t>(id)] = plan.arena_bytes;
            plan.arena_bytes += planned_bytes(g, id);
        }
    return plan;
}

/// @p g with the student's @p nodes; verify() must accept it (the test fails otherwise).
inline Graph with_nodes(Graph g, const Nodes& nodes) {
    g.nodes = nodes;
    verify(g);
    return g;
}

using fixtures::count_ops;

/// Binds every Input of @p g to numbers from @p seed (int32 inputs to 0) and runs it.
inline std::vector<std::vector<float>> run_with_random_inputs(const Graph& g, std::uint64_t seed) {
    Executor e(g, own_buffers(g));
    Rng rng(seed);
    for (const Value& v : g.values) {
        if (v.kind != ValueKind::Input) continue;
        e.bind(v.name, v.dtype == DType::Int32 ? zeros(v.shape, DType::Int32) : randn(v.shape, rng));
    }
    e.run();
    std::vector<std::vector<float>> out;
    for (std::size_t i = 0; i < g.outputs.size(); ++i) out.push_back(e.output(i).to_vector<float>());
    return out;
}

/// Bias + ReLU on an [rows, cols] activation.
inline Graph bias_relu_graph(std::int64_t rows, std::int64_t cols) {
    Graph g;
    const int h = fixtures::add_input(g, "h", {rows, cols});
    const int b = fixtures::add_input(g, "b", {cols});
    g.outputs = {g.add_node("relu", {g.add_node("add", {h, b})})};
    return g;
}

/// SimpleNet's training step (784-128-10, batch 64, Adam) after the passes that come
/// before fusion, capturing the model made from @p seed (its parameters are bound).
struct TrainingStep {
    std::shared_ptr<nn::Sequential> net;
    std::vector<Tensor> moments;
    fixtures::Batch batch;
    Graph graph;
};
inline TrainingStep training_step(std::uint64_t seed) {
    TrainingStep t;
    t.net = fixtures::simple_net(seed, 784, 128, 10);
    t.batch = fixtures::random_batch(64, 784, 10, seed + 1);
    t.graph = capture_training_step(*t.net, t.batch.x, t.batch.targets, AdamSettings{}, t.moments);
    optimize(t.graph, /*fuse=*/false);
    return t;
}

/// Runs a training step graph once (parameters update in place); returns the loss and
/// then every parameter.
inline std::vector<std::vector<float>> run_training_step(TrainingStep& t, const Graph& g) {
    Executor e(g, own_buffers(g));
    e.bind("x", t.batch.x);
    e.bind("targets", t.batch.targets);
    e.set_scalar(kAdamStepSize, 1e-3 / (1 - 0.9));
    e.set_scalar(kAdamInvSqrtC2, 1.0 / std::sqrt(1 - 0.999));
    e.run();
    std::vector<std::vector<float>> out{{static_cast<float>(e.output_item(0))}};
    for (const Tensor& p : t.net->parameters()) out.push_back(p.to_vector<float>());
    return out;
}

}  // namespace gl::graph::lab13

namespace gl::graph::lab13 {

/// A random graph of element-wise ops over [6, 5] values, [5] rows and scalars, with an
/// occasional matmul and reduce_to between them; some values are returned, some dead.
inline Graph random_graph(std::uint64_t seed) {
    Rng rng(seed);
    Graph g;
    const Shape full{6, 5}, row{5}, square{5, 5};
    std::vector<int> pool{fixtures::add_input(g, "x", full), fixtures::add_input(g, "y", full),
                          fixtures::add_input(g, "r", row)};
    const int w = fixtures::add_input(g, "w", square);
    const auto pick = [&] { return pool[rng.below(pool.size())]; };
    const char* ops[] = {"add", "sub", "mul", "neg", "relu", "relu_grad"};
    const int nodes = 6 + static_cast<int>(rng.below(10));
    for (int i = 0; i < nodes; ++i) {
        const std::uint64_t kind = rng.below(10);
        int a = pick(), out = -1;
        if (kind == 0 && g.values[static_cast<std::size_t>(a)].shape == full) {
            out = g.add_node("matmul", {a, w});
        } else if (kind == 1 && g.values[static_cast<std::size_t>(a)].shape == full) {
            Node n;
            n.op = "reduce_to";
            n.inputs = {a};
            n.shape = row;
            Value v;
            v.shape = row;
            n.outputs = {g.add_value(v)};
            g.nodes.push_back(n);
            out = n.outputs[0];
        } else {
            const std::string op = ops[rng.below(6)];
            std::vector<int> in{a};
            if (arity(op) == 2) in.push_back(pick());
            // Keep the longer shape first for ops where order matters to the math only.
            out = g.add_node(op, in);
        }
        pool.push_back(out);
    }
    // Return the last value and one or two others.
    g.outputs = {pool.back()};
    for (int k = 0; k < 2; ++k) {
        const int v = pool[3 + rng.below(pool.size() - 3)];
        if (std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end()) g.outputs.push_back(v);
    }
    return g;
}

}  // namespace gl::graph::lab13

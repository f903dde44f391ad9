/// @file
/// @brief Runs a static graph with every buffer placed ahead of time.
///
/// Owns: binding inputs, parameters and state to the graph's values, the arena the
/// memory plan lays out, and one kernel call per node. All memory is allocated when
/// the executor is built; run() allocates nothing (the captured step's lesson, JIT-1).
/// It counts what it does: kernels launched and bytes moved through memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/fused_loop.hpp"
#include "graph/ir.hpp"
#include "graph/memory_plan.hpp"
#include "kernels/gemm.hpp"

namespace gl::graph {

/// What runs have done, summed since construction (or reset_stats()).
struct ExecStats {
    std::int64_t runs = 0;         ///< run() calls
    std::int64_t kernels = 0;      ///< nodes executed (kernel launches)
    /// Bytes read and written by the kernels: each node reads each input once and writes
    /// each output once (the least traffic its kernel can have; broadcast inputs count
    /// their own size).
    std::int64_t bytes_moved = 0;
};

/// A graph ready to run: plan laid out, constants and bound tensors in place.
class Executor {
public:
    /// Takes @p g (verified here) and @p plan (every value a node defines must have a
    /// place in the arena; that live values do not overlap is check_plan's job, which
    /// compile() runs); allocates the arena and the scratch space of the element-wise
    /// loops. Parameters and state use their bound tensors.
    Executor(Graph g, MemoryPlan plan);

    /// Binds the Input called @p name to @p t (same shape and dtype; kept alive by the
    /// executor until rebound). Throws gl::Error saying what differs.
    void bind(const std::string& name, const Tensor& t);
    /// bind() by value id (graph().find(name)): no name lookup in a step.
    void bind(int id, const Tensor& t);
    /// Sets the scalar float32 Input called @p name (held in the executor).
    void set_scalar(const std::string& name, double value);
    /// set_scalar() by value id.
    void set_scalar(int id, double value);
    /// Runs every node once, in order. Throws gl::Error when an input is not bound.
    void run();

    /// A copy of output @p i of the last run.
    Tensor output(std::size_t i) const;
    /// Output @p i of the last run, read as a number (a scalar output).
    double output_item(std::size_t i) const;

    /// The graph being run.
    const Graph& graph() const { return graph_; }
    /// The plan the arena follows.
    const MemoryPlan& plan() const { return plan_; }
    /// Counts since construction.
    const ExecStats& stats() const { return stats_; }
    /// Starts counting again from zero.
    void reset_stats() { stats_ = {}; }
    /// Kernels one run launches (the nodes) and the bytes it moves, without running.
    ExecStats per_run() const;

private:
    void launch(std::size_t node);
    float* f32(int id) const { return static_cast<float*>(ptr_[static_cast<std::size_t>(id)]); }

    Graph graph_;
    MemoryPlan plan_;
    std::vector<float> arena_;         // the planned temporaries
    std::vector<float> scalars_;       // one float per scalar Input
    LoopScratch scratch_;              // registers of the element-wise loops
    std::vector<Tensor> bound_;        // keeps bound inputs alive
    std::vector<void*> ptr_;           // where each value's bytes are
    std::vector<FusedLoop> loops_;     // per node: its compiled loop (element-wise nodes)
    kernels::SgemmFn gemm_ = nullptr;  // resolved once: no registry lookup per launch
    ExecStats stats_;
};

}  // namespace gl::graph

/// @file
/// @brief Capture, optimize, plan and run in one object: a model's inference forward
/// or its whole training step as a static graph (torch.compile's user-facing shape).
///
/// Owns: the pipeline capture -> passes -> memory plan -> executor, and the per-step
/// inputs of a training step (the batch, Adam's bias-corrected step sizes). Knows
/// nothing about data loading.
#pragma once

#include <memory>
#include <vector>

#include "graph/capture.hpp"
#include "graph/executor.hpp"

namespace gl::graph {

/// What the pipeline does after capture.
struct CompileOptions {
    bool fuse = true;  ///< run fuse_elementwise (folding and DCE always run)
    bool plan = true;  ///< plan_memory (reuse); else plan_without_reuse
};

/// The executor for @p g after the passes and the plan @p options ask for.
std::unique_ptr<Executor> compile(Graph g, const CompileOptions& options);

/// A model's forward captured for inference with the shape of the example batch.
class CompiledForward {
public:
    /// Captures @p model on @p example and compiles it.
    CompiledForward(nn::Module& model, const Tensor& example, const CompileOptions& options = {});
    /// The forward on @p x (the example's shape).
    Tensor operator()(const Tensor& x);
    /// The executor (graph, plan, counts).
    const Executor& executor() const { return *exec_; }

private:
    std::unique_ptr<Executor> exec_;
    int x_ = -1;  // the input's id
};

/// A whole training step (forward, loss, backward, Adam update) captured once and run
/// as one static graph per batch. Updates the model's parameters in place, as eager
/// training with optim::Adam does.
class CompiledTrainingStep {
public:
    /// Captures a step of @p model on an example batch (@p x, @p targets).
    CompiledTrainingStep(nn::Module& model, const Tensor& x, const Tensor& targets, const AdamSettings& adam,
                         const CompileOptions& options = {});
    /// One step on a batch of the example's shape; returns the loss before the update.
    double step(const Tensor& x, const Tensor& targets);
    /// The executor (graph, plan, counts).
    const Executor& executor() const { return *exec_; }

private:
    AdamSettings adam_;
    std::vector<Tensor> moments_;  // Adam's m and v per parameter, bound as State
    std::int64_t steps_ = 0;
    std::unique_ptr<Executor> exec_;
    int x_ = -1, targets_ = -1, step_size_ = -1, inv_sqrt_c2_ = -1;  // input ids, found once
};

}  // namespace gl::graph

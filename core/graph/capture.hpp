/// @file
/// @brief Capture by tracing: run define-by-run code once and record its ops as a graph.
///
/// Owns: the tracer (an observer of ops/op_trace.hpp), the capture of a model's
/// inference forward and of a whole training step (forward, the backward from
/// autodiff.hpp, Adam's update as element-wise ops). Tracing records the ops that ran
/// for the example input: Python-level (here C++-level) control flow is not in the
/// graph, so a branch on the data is fixed to the path the example took. capture
/// notes it when the traced code computed values from the inputs that the outputs do
/// not use (what a branch condition looks like to a tracer).
#pragma once

#include <vector>

#include "graph/ir.hpp"
#include "nn/module.hpp"

namespace gl::graph {

/// Traces @p model's forward on @p example (float32 [B, features]) into a graph with
/// input "x", the model's parameters (by their dotted names, bound to the model's
/// tensors) and one output, the forward's result. Throws gl::Error when the forward uses
/// an op the IR does not have.
Graph capture_forward(nn::Module& model, const Tensor& example);

/// Adam's settings for a captured training step (as optim::Adam, without weight decay).
struct AdamSettings {
    double lr = 1e-3;      ///< step size
    double beta1 = 0.9;    ///< first-moment decay
    double beta2 = 0.999;  ///< second-moment decay
    double eps = 1e-8;     ///< added to the denominator
};

/// Names of a training-step graph's per-step scalar inputs: Adam's bias-corrected step
/// size lr / (1 - beta1^t) and 1 / sqrt(1 - beta2^t), which change every step.
inline constexpr const char* kAdamStepSize = "adam.step_size";
/// See kAdamStepSize.
inline constexpr const char* kAdamInvSqrtC2 = "adam.inv_sqrt_c2";

/// Traces one training step of @p model on (@p x, @p targets): the forward and the mean
/// cross-entropy loss, then appends the backward and Adam's update of every parameter
/// (new values that update the parameters and the moments in place). Inputs: "x",
/// "targets", kAdamStepSize, kAdamInvSqrtC2; output: the loss. The moments are State
/// values bound to @p moments (filled here with zero tensors, two per parameter, m then
/// v): the caller keeps them alive while the graph runs.
Graph capture_training_step(nn::Module& model, const Tensor& x, const Tensor& targets,
                            const AdamSettings& adam, std::vector<Tensor>& moments);

}  // namespace gl::graph

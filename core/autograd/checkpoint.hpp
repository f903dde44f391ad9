/// @file
/// @brief Gradient checkpointing: trade compute for memory by recomputing a part of the
/// forward pass during backward instead of keeping its activations.
///
/// Owns: checkpoint() (one function, its inputs kept, its inside recomputed). Splitting
/// a Sequential into checkpointed segments is in nn/checkpoint_sequential.hpp.
///
/// Normally every op records a node that keeps what its backward needs (its inputs, or
/// its output), so a network of n layers holds n layers' activations from the forward
/// pass until backward. checkpoint(fn, x) runs fn with recording off, so nothing inside
/// fn is kept; it records one node that keeps only x. When backward reaches that node,
/// it runs fn again on x with recording on, and backpropagates through the fresh graph.
/// The same kernels run in the same order on the same inputs, so the gradients are
/// bit-identical to training without checkpointing.
///
/// Random ops: none of the core's ops draws random numbers in forward. An op that does
/// (dropout) must draw from state captured at the first forward and replay it in the
/// recompute, or the recomputed activations would differ from the ones used forward.
#pragma once

#include <functional>
#include <vector>

#include "tensor/tensor.hpp"

namespace gl {

/// A function of several tensors that checkpoint() can run twice.
using CheckpointFn = std::function<Tensor(const std::vector<Tensor>&)>;
/// A function of one tensor that checkpoint() can run twice.
using CheckpointFn1 = std::function<Tensor(const Tensor&)>;

/// fn(inputs), keeping only @p inputs for backward and recomputing fn during backward.
/// @p fn must compute the same thing when called again: no side effects, no randomness
/// it does not replay. It may use parameters that require grad even when no input does
/// (the first layers of a network), so the result is recorded whenever grad mode is on.
Tensor checkpoint(const CheckpointFn& fn, const std::vector<Tensor>& inputs);
/// fn(input) with checkpointing; see the overload above.
Tensor checkpoint(const CheckpointFn1& fn, const Tensor& input);

/// How many times checkpointed functions ran again during backward on this thread
/// (to count recomputation in experiments and tests).
std::size_t checkpoint_recompute_count();

}  // namespace gl

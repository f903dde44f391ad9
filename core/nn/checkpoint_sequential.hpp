/// @file
/// @brief Checkpointing a Sequential model in segments, and how many segments to use.
///
/// Owns: the split of a Sequential into consecutive segments, each run through
/// gl::checkpoint (autograd/checkpoint.hpp), and the sqrt(n) policy.
///
/// With n modules in k segments, backward holds the k segment inputs for the whole
/// backward pass plus the activations of the one segment being recomputed (about n/k),
/// so the activation memory is about k + n/k layers instead of n: smallest near
/// k = sqrt(n), where it is about 2 sqrt(n). Every segment is recomputed once, so the
/// price is one extra forward pass (about a third more compute for a training step,
/// whose backward costs about two forwards).
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "nn/module.hpp"

namespace gl::nn {

/// The sqrt(n) policy: round(sqrt(n)) segments for @p modules modules (at least 1,
/// 0 for an empty model).
std::size_t sqrt_segments(std::size_t modules);

/// Splits @p modules consecutive modules into @p segments runs [begin, end) of as equal
/// a length as possible, longer runs first: 7 modules in 3 segments are [0,3) [3,5) [5,7).
/// @p segments is clamped to [1, modules].
std::vector<std::pair<std::size_t, std::size_t>> segment_bounds(std::size_t modules, std::size_t segments);

/// Runs @p model on @p x in @p segments checkpointed segments (segment_bounds): only
/// each segment's input is kept for backward, and each segment is recomputed once
/// during backward. Gradients are bit-identical to model.forward(x).
Tensor checkpoint_sequential(Sequential& model, std::size_t segments, const Tensor& x);

}  // namespace gl::nn

/// @file
/// @brief Measuring what a training step holds in memory, with and without checkpointing.
///
/// Owns: one measured training step (the shared procedure of `gradlab train --memory`,
/// the CKPT claims, the memory benchmark and the Lab 07 tests) and the memory table
/// they print. The counting itself is memory/tracking_allocator's.
#pragma once

#include <cstddef>
#include <string>

#include "memory/tracking_allocator.hpp"
#include "nn/module.hpp"
#include "optim/optimizer.hpp"

namespace gl::training {

/// @p model on @p x: a plain forward when @p segments is 0, otherwise
/// nn::checkpoint_sequential with that many segments.
Tensor forward_in_segments(nn::Sequential& model, const Tensor& x, std::size_t segments);

/// One training step (zero_grad, forward, cross-entropy against int32 @p y, backward,
/// optimizer step) with the tracker's peaks reset at its start, so the stats returned
/// are this step's. @p model and @p optimizer should have been built while @p tracker
/// was the default allocator (so their bytes are counted). @p segments as above.
memory::MemoryStats measure_training_step(memory::TrackingAllocator& tracker, nn::Sequential& model,
                                          optim::Optimizer& optimizer, const Tensor& x, const Tensor& y,
                                          std::size_t segments = 0);

/// The larger of each counter of @p a and @p b (peaks over several steps).
memory::MemoryStats max_of(const memory::MemoryStats& a, const memory::MemoryStats& b);

/// A table: one line per category with its peak (and its bytes now, with
/// @p with_current), then the totals.
std::string format_memory_table(const memory::MemoryStats& stats, bool with_current = true);

/// "1.50 MiB", "312.0 KiB", "96 B".
std::string format_bytes(double bytes);

}  // namespace gl::training

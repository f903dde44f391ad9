/// @file
/// @brief Parameters and gradients as one flat buffer: what travels between workers.
///
/// Owns: copying a model's parameters (or their gradients) into a contiguous byte
/// buffer in registration order, and back. DataParallel, DistributedDataParallel and the
/// tests use it to send, compare and average whole models.
#pragma once

#include <cstddef>
#include <vector>

#include "tensor/tensor.hpp"

namespace gl::dist {

/// Total elements of @p params; throws unless they are contiguous and share one
/// floating dtype (returned in @p dtype).
std::size_t flat_size(const std::vector<Tensor>& params, DType& dtype);
/// Copies the values of @p params into @p out (flat_size elements).
void params_to_flat(const std::vector<Tensor>& params, void* out);
/// Copies @p in (flat_size elements) into the values of @p params.
void flat_to_params(const void* in, const std::vector<Tensor>& params);
/// Copies the gradients of @p params into @p out; a missing gradient counts as zeros.
void grads_to_flat(const std::vector<Tensor>& params, void* out);
/// Sets the gradients of @p params from @p in (allocating them where missing).
void flat_to_grads(const void* in, const std::vector<Tensor>& params);
/// The largest |a - b| over all parameters of two models of the same architecture.
double max_abs_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b);

}  // namespace gl::dist
